import type { AnyAction, EndUserCredential, ServedResource } from "@cmp/core"
import { type ApiRequest, type ApiResponse, header } from "./Message.js"

/**
 * What a visitor's browser or app sends and is answered beyond the usual: the public key (a
 * header, or the query for clients that cannot set headers) and the CORS headers of the routes
 * end users reach.
 */

const PUBLIC_KEY_HEADER = "x-public-api-key"
const PUBLIC_KEY_PARAM = "public_api_key"

const decoded = (s: string) => {
  try {
    return decodeURIComponent(s.replace(/\+/g, " "))
  } catch {
    return s
  }
}

/** The public key a request carries, and whether it came in the query. */
export const publicKeyOf = (
  headers: ApiRequest["headers"],
  rawQuery: string
): { readonly key: string; readonly fromQuery: boolean } | undefined => {
  const inHeader = header(headers, PUBLIC_KEY_HEADER)
  if (inHeader !== undefined && inHeader.trim() !== "") return { key: inHeader.trim(), fromQuery: false }
  for (const part of rawQuery.split("&")) {
    const eq = part.indexOf("=")
    if (eq > 0 && decoded(part.slice(0, eq)) === PUBLIC_KEY_PARAM) return { key: decoded(part.slice(eq + 1)), fromQuery: true }
  }
  return undefined
}

/** The query without its public key: the key is a credential, not a parameter of the route. */
export const withoutPublicKey = (rawQuery: string): string =>
  rawQuery.split("&").filter((part) => {
    const eq = part.indexOf("=")
    return decoded(eq < 0 ? part : part.slice(0, eq)) !== PUBLIC_KEY_PARAM
  }).join("&")

/** An answer a page at `origin` may read. */
export const allowOrigin = (response: ApiResponse, origin: string): ApiResponse => ({
  ...response,
  headers: {
    ...response.headers,
    "access-control-allow-origin": origin,
    "access-control-expose-headers": "retry-after, x-request-id",
    vary: "Origin"
  }
})

/**
 * The answer to a CORS preflight: it carries no credential, so it cannot be checked and answers
 * any origin; the request that follows it is the one checked.
 */
export const preflight = (methods: ReadonlyArray<string>, origin: string | undefined): ApiResponse => ({
  status: 204,
  headers: {
    "access-control-allow-origin": origin ?? "*",
    "access-control-allow-methods": [...methods, "OPTIONS"].join(", "),
    "access-control-allow-headers": "content-type, x-public-api-key, authorization",
    "access-control-max-age": "600",
    vary: "Origin"
  },
  body: ""
})

/** What an end user's credential is told where no served declaration says (a host serving none that takes it). */
const refusedUnlessDeclared: Readonly<Record<EndUserCredential, string>> = {
  "public-key": "A public key is not taken here: this request needs an access token",
  "consent-token": "A consent token is not taken here"
}

/**
 * What each end user's credential is told on an operation that does not take it: the message
 * the declarations that take it give (`elsewhere`), the first served one's.
 */
export const refusalsOf = (
  resources: ReadonlyArray<ServedResource>,
  actions: ReadonlyArray<AnyAction>
): (credential: EndUserCredential) => string => {
  const said = [
    ...resources.map((def) => def.endUsers?.elsewhere),
    ...actions.map((a) => (a.auth === "bearer" ? a.endUsers?.elsewhere : undefined))
  ]
  return (credential) => said.map((elsewhere) => elsewhere?.[credential]).find((m) => m !== undefined) ?? refusedUnlessDeclared[credential]
}
