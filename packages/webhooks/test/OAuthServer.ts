import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as crypto from "node:crypto"
import { OAuth2Server } from "oauth2-mock-server"

/** What the token endpoint saw of one request, and what it issued. */
export interface TokenRequestSeen {
  readonly authorization: string | undefined
  readonly contentType: string | undefined
  readonly body: Record<string, unknown>
  readonly accessToken: string | undefined
}

export interface MockAuthServer {
  readonly tokenUrl: string
  readonly requests: Array<TokenRequestSeen>
  /** `expires_in` of the next answers; undefined leaves the field out. Default 3600. */
  expiresIn: number | undefined
  /** Replaces the next answer once. */
  failNext: { readonly status: number; readonly body: Record<string, unknown> } | undefined
}

/**
 * A real oauth2-mock-server on 127.0.0.1 for the scope. Every token gets a random `jti`, so two
 * tokens issued within the same second still differ.
 */
export const oauthServer: Effect.Effect<MockAuthServer, never, Scope.Scope> = Effect.acquireRelease(
  Effect.promise(async () => {
    const server = new OAuth2Server()
    await server.issuer.keys.generate("RS256")
    await server.start(0, "127.0.0.1")
    const handle: MockAuthServer = {
      tokenUrl: `http://127.0.0.1:${server.address().port}/token`,
      requests: [],
      expiresIn: 3600,
      failNext: undefined
    }
    server.service.on("beforeTokenSigning", (token) => {
      token.payload.jti = crypto.randomUUID()
    })
    server.service.on("beforeResponse", (response, req) => {
      const body = response.body as Record<string, unknown>
      if (handle.failNext) {
        response.statusCode = handle.failNext.status
        response.body = handle.failNext.body
        handle.failNext = undefined
      } else if (handle.expiresIn === undefined) {
        delete body.expires_in
      } else {
        body.expires_in = handle.expiresIn
      }
      handle.requests.push({
        authorization: req.headers.authorization,
        contentType: req.headers["content-type"],
        body: { ...(req.body as Record<string, unknown>) },
        accessToken: typeof (response.body as Record<string, unknown>).access_token === "string"
          ? (response.body as Record<string, string>).access_token
          : undefined
      })
    })
    return { server, handle }
  }),
  ({ server }) => Effect.promise(() => server.stop())
).pipe(Effect.map(({ handle }) => handle))
