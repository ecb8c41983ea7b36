import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import { send } from "./Send.js"

/**
 * OAuth 2.0 client-credentials tokens for receivers that want `Authorization: Bearer` (spec
 * section 5, "Authentication of webhook calls"). Tokens are cached because every delivery to an
 * endpoint needs one and the customer's authorization server should see one request per token
 * lifetime, not one per message.
 */

/** The `auth` of an endpoint (secret in clear, in memory only). */
export interface ClientCredentials {
  readonly token_url: string
  readonly client_id: string
  readonly client_secret: string
  readonly scope?: string | undefined
  readonly audience?: string | undefined
}

export class TokenError extends Data.TaggedError("TokenError")<{
  readonly message: string
  /** The token endpoint's status, null when it did not answer. */
  readonly status: number | null
}> {}

export interface TokenCache {
  /** A valid access token, from the cache or freshly requested. */
  readonly get: (auth: ClientCredentials) => Effect.Effect<string, TokenError>
  /**
   * Drops the cached token (the receiver answered 401). With `rejected`, only when the cache
   * still holds that token, so a token another delivery has just refreshed is kept.
   */
  readonly invalidate: (auth: ClientCredentials, rejected?: string) => Effect.Effect<void>
}

export interface TokenCacheConfig {
  readonly timeoutMs: number
  readonly allowHosts: ReadonlyArray<string>
  readonly localAddress?: string | undefined
  readonly userAgent?: string
}

/** Refresh this long before `expires_in` runs out, so a token never expires in flight. */
export const REFRESH_MARGIN_SECONDS = 60
/** Lifetime assumed when the token response has no `expires_in`. */
export const DEFAULT_TTL_SECONDS = 3600
/** Longest lifetime trusted, whatever the server says. */
export const MAX_TTL_SECONDS = 86400

// Token responses can carry long JWTs; 64 KiB is plenty and still bounded.
const MAX_TOKEN_RESPONSE_BYTES = 64 * 1024

// RFC 6750 b64token, which also keeps CR/LF out of the Authorization header.
const b64token = /^[A-Za-z0-9\-._~+/]+=*$/

/** The cache key: one token per authorization server, client and requested scope/audience. */
const keyOf = (auth: ClientCredentials): string =>
  JSON.stringify([auth.token_url, auth.client_id, auth.scope ?? null, auth.audience ?? null])

/** application/x-www-form-urlencoded, as RFC 6749 section 2.3.1 asks for Basic credentials. */
const formEncode = (s: string): string => new URLSearchParams({ v: s }).toString().slice(2)

interface Token {
  readonly token: string
  readonly ttlSeconds: number
}

/** One `grant_type=client_credentials` request, through the Sender (same SSRF rules, timeout). */
export const requestToken = (auth: ClientCredentials, config: TokenCacheConfig): Effect.Effect<Token, TokenError> =>
  Effect.gen(function*() {
    const form = new URLSearchParams({ grant_type: "client_credentials" })
    if (auth.scope) form.set("scope", auth.scope)
    if (auth.audience) form.set("audience", auth.audience)
    const basic = Buffer.from(`${formEncode(auth.client_id)}:${formEncode(auth.client_secret)}`).toString("base64")
    const result = yield* send({
      url: auth.token_url,
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        accept: "application/json",
        authorization: `Basic ${basic}`,
        ...(config.userAgent ? { "user-agent": config.userAgent } : {})
      },
      body: form.toString(),
      timeoutMs: config.timeoutMs,
      allowHosts: config.allowHosts,
      localAddress: config.localAddress,
      maxResponseBytes: MAX_TOKEN_RESPONSE_BYTES
    })
    if (result.status === null) {
      return yield* new TokenError({ message: `token request failed: ${result.error}`, status: null })
    }
    if (result.status < 200 || result.status > 299) {
      const detail = (result.responseExcerpt ?? "").slice(0, 200)
      return yield* new TokenError({
        message: `token endpoint answered ${result.status}${detail ? `: ${detail}` : ""}`,
        status: result.status
      })
    }
    let body: Record<string, unknown>
    try {
      const parsed: unknown = JSON.parse(result.responseExcerpt ?? "")
      if (typeof parsed !== "object" || parsed === null) throw new Error("not an object")
      body = parsed as Record<string, unknown>
    } catch {
      return yield* new TokenError({ message: "token endpoint answered no JSON object", status: result.status })
    }
    const token = body.access_token
    if (typeof token !== "string" || !b64token.test(token)) {
      return yield* new TokenError({ message: "token response has no usable access_token", status: result.status })
    }
    if (body.token_type !== undefined && String(body.token_type).toLowerCase() !== "bearer") {
      return yield* new TokenError({ message: `unsupported token_type ${String(body.token_type)}`, status: result.status })
    }
    const expiresIn = typeof body.expires_in === "number"
      ? body.expires_in
      : typeof body.expires_in === "string" && /^\d+$/.test(body.expires_in)
      ? Number(body.expires_in)
      : DEFAULT_TTL_SECONDS
    return { token, ttlSeconds: Math.min(Math.max(0, expiresIn), MAX_TTL_SECONDS) }
  })

type Entry =
  | { readonly _tag: "Ready"; readonly token: string; readonly refreshAtMs: number }
  | { readonly _tag: "Fetching"; readonly deferred: Deferred.Deferred<string, TokenError> }

/**
 * An in-memory token cache. Expiry follows Effect's Clock (tests move it with `TestClock`).
 * Concurrent deliveries to one endpoint share a single token request instead of each asking.
 */
export const makeTokenCache = (config: TokenCacheConfig): Effect.Effect<TokenCache> =>
  Effect.sync(() => {
    const entries = new Map<string, Entry>()

    const fetchInto = (key: string, auth: ClientCredentials, deferred: Deferred.Deferred<string, TokenError>) =>
      Effect.flatMap(Clock.currentTimeMillis, (startedMs) =>
        requestToken(auth, config).pipe(
          Effect.map(({ token, ttlSeconds }) => {
            // Counted from the request's start: the token was issued no earlier than that.
            const refreshAtMs = startedMs + Math.max(0, ttlSeconds - REFRESH_MARGIN_SECONDS) * 1000
            if (entries.get(key)?._tag === "Fetching") entries.set(key, { _tag: "Ready", token, refreshAtMs })
            return token
          }),
          Effect.onExit((exit) => {
            if (Exit.isFailure(exit)) {
              const current = entries.get(key)
              if (current?._tag === "Fetching" && current.deferred === deferred) entries.delete(key)
            }
            // Waiters get the same answer; an interrupted request is an error to them, not a hang.
            return Deferred.done(
              deferred,
              Exit.isInterrupted(exit)
                ? Exit.fail(new TokenError({ message: "token request interrupted", status: null }))
                : exit
            )
          })
        ))

    const get = (auth: ClientCredentials): Effect.Effect<string, TokenError> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const key = keyOf(auth)
        const entry = entries.get(key)
        if (entry?._tag === "Ready" && now < entry.refreshAtMs) return Effect.succeed(entry.token)
        if (entry?._tag === "Fetching") return Deferred.await(entry.deferred)
        const deferred = Deferred.unsafeMake<string, TokenError>(FiberId.none)
        entries.set(key, { _tag: "Fetching", deferred })
        return fetchInto(key, auth, deferred)
      })

    const invalidate = (auth: ClientCredentials, rejected?: string): Effect.Effect<void> =>
      Effect.sync(() => {
        const key = keyOf(auth)
        const entry = entries.get(key)
        if (entry?._tag === "Ready" && (rejected === undefined || entry.token === rejected)) entries.delete(key)
      })

    return { get, invalidate }
  })
