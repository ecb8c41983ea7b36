import {
  type ApiRequest,
  type ApiResponse,
  errorResponse,
  type HandlerOptions,
  type HttpApi,
  internalErrorResponse
} from "@cmp/http"
import type { PlatformRuntime } from "@cmp/platform"
import { apiFromRuntime, type HttpApiOptions, makeHttpApi } from "./HttpApi.js"

/**
 * The API as a web-standard fetch handler, `(request: Request) => Promise<Response>`: what
 * Hono, Next.js route handlers, Bun, Deno, Cloudflare-style hosts and (through `serveNode`)
 * Node's own `http` server call. Translation only; every answer is `@cmp/http`'s.
 */

export interface MountOptions {
  /**
   * Where the host mounts the API (`"/consent-api"`): requests under it are answered with the
   * path relative to it; any other request is a 404. Empty (the default) for the root.
   */
  readonly basePath?: string | undefined
}

export interface FetchHandlerOptions extends HttpApiOptions, MountOptions {}

/** What the host knows about the connection that a `Request` does not carry. */
export interface ConnectionInfo {
  /** The peer's address (`server.requestIP(req)` in Bun, `info.remoteAddr` in Deno, the socket's in Node). */
  readonly clientAddress?: string | undefined
}

export type FetchHandler = (request: Request, info?: ConnectionInfo) => Promise<Response>

export interface FetchApi extends HttpApi {
  /** The handler: `export default { fetch: api.fetch }`, `Bun.serve({ fetch: api.fetch })`, `export const GET = api.fetch`. */
  readonly fetch: FetchHandler
  /** Whether the API answers this request's path (under `basePath`), for hosts that route other paths themselves. */
  readonly ownsRequest: (request: Request) => boolean
  /** The same as `dispose`: stops the dispatcher and closes the store. */
  readonly close: () => Promise<void>
}

/** `"/consent-api/"` and `"consent-api"` → `"/consent-api"`; `"/"` → `""`. */
const normalizeBase = (basePath: string | undefined): string => {
  const trimmed = (basePath ?? "").replace(/^\/+|\/+$/g, "")
  return trimmed === "" ? "" : `/${trimmed}`
}

/**
 * The path relative to the mount point, with the prefix as the request wrote it, or undefined
 * when the path is outside it. The prefix matches case-insensitively, as Express's `app.use`.
 */
const underBase = (pathname: string, base: string): { readonly mountPath: string; readonly rest: string } | undefined => {
  if (base === "") return { mountPath: "", rest: pathname }
  const head = pathname.slice(0, base.length)
  if (head.toLowerCase() !== base.toLowerCase()) return undefined
  const rest = pathname.slice(base.length)
  if (rest === "") return { mountPath: head, rest: "/" }
  return rest.startsWith("/") ? { mountPath: head, rest } : undefined
}

/** The body as an async iterable of bytes, cancelling the stream when the reader stops early (past the limit). */
async function* chunksOf(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  const reader = body.getReader()
  let done = false
  try {
    while (true) {
      const next = await reader.read()
      if (next.done) {
        done = true
        return
      }
      yield next.value
    }
  } finally {
    if (!done) await reader.cancel().catch(() => undefined)
    reader.releaseLock()
  }
}

/**
 * A web `Request` as the plain request of the HTTP layer, or undefined when it is outside
 * `basePath`. Its path is its URL's: the host's URL parser already resolved dot segments and
 * backslashes, and the host routes its own paths by the same URL, so the two agree on what is
 * the API's. Its `Host` header goes to the API as it came, which refuses one that is not a host.
 */
export const fromFetchRequest = (request: Request, info: ConnectionInfo = {}, options: MountOptions = {}): ApiRequest | undefined => {
  const url = new URL(request.url)
  const mounted = underBase(url.pathname, normalizeBase(options.basePath))
  if (mounted === undefined) return undefined
  // `Headers` joins repeated request headers with ", " and lower-cases names, as `fromNodeRequest` does.
  const headers: Record<string, string> = {}
  request.headers.forEach((value, name) => {
    headers[name] = value
  })
  // A host that builds the `Request` itself may leave `Host` out: the URL's authority is the same.
  headers.host ??= url.host
  return {
    method: request.method,
    url: mounted.rest + url.search,
    mountPath: mounted.mountPath,
    headers,
    body: request.body === null ? undefined : chunksOf(request.body),
    encrypted: url.protocol === "https:",
    remoteAddress: info.clientAddress
  }
}

/** Statuses whose `Response` may not have a body. */
const nullBodyStatus = new Set([101, 103, 204, 205, 304])

/** The plain response as a web `Response`; a HEAD request's answer keeps the length of the body it does not send. */
export const toFetchResponse = (response: ApiResponse, method = "GET"): Response => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(response.headers as Readonly<Record<string, string | ReadonlyArray<string>>>)) {
    // Several values of one header (`Set-Cookie`, `Vary`) stay separate lines.
    if (typeof value === "string") headers.append(name, value)
    else for (const v of value) headers.append(name, v)
  }
  const bytes = typeof response.body === "string" ? new TextEncoder().encode(response.body) : response.body
  if (nullBodyStatus.has(response.status)) return new Response(null, { status: response.status, headers })
  headers.set("content-length", String(bytes.byteLength))
  const empty = bytes.byteLength === 0 || method.toUpperCase() === "HEAD"
  return new Response(empty ? null : (bytes as Uint8Array<ArrayBuffer>), { status: response.status, headers })
}

/** `handle` answers every error itself; should it still throw, the answer is the contract's 500. */
const internalError = () => internalErrorResponse({ "x-content-type-options": "nosniff" })

/** A path outside the mount point: the API's own 404 shape, without running the API. */
const outside = (request: Request) => {
  const path = new URL(request.url).pathname
  const incoming = request.headers.get("x-request-id")
  return errorResponse(404, `Page not found: ${request.method} ${path}`, {}, {
    "x-content-type-options": "nosniff",
    "x-request-id": incoming !== null && /^[\w.-]{1,128}$/.test(incoming) ? incoming : globalThis.crypto.randomUUID()
  })
}

/** The fetch handler over an API the host already made (`fromRuntime` of `@cmp/http`). */
export const toFetchHandler = (api: Pick<HttpApi, "handle">, options: MountOptions = {}): FetchHandler => async (request, info) => {
  let plain: ApiRequest | undefined
  try {
    plain = fromFetchRequest(request, info, options)
  } catch {
    return toFetchResponse(errorResponse(400, "The request URL is not valid", {}, { "x-content-type-options": "nosniff" }), request.method)
  }
  if (plain === undefined) return toFetchResponse(outside(request), request.method)
  const response = await api.handle(plain).catch(internalError)
  return toFetchResponse(response, request.method)
}

const fetchApiOf = (api: HttpApi, options: MountOptions): FetchApi => {
  const base = normalizeBase(options.basePath)
  const ownsRequest = (request: Request) => {
    const mounted = underBase(new URL(request.url).pathname, base)
    return mounted !== undefined && api.owns(mounted.rest)
  }
  return { ...api, fetch: toFetchHandler(api, options), ownsRequest, close: api.dispose }
}

/** The platform built from `options` and its API as a fetch handler (the options of `createApi`, plus `basePath`). */
export const createFetchHandler = async (options: FetchHandlerOptions): Promise<FetchApi> => fetchApiOf(await makeHttpApi(options), options)

/** The API as a fetch handler over a platform runtime the host already made. */
export const createFetchHandlerFromRuntime = async (
  runtime: PlatformRuntime,
  options: HandlerOptions & MountOptions = {}
): Promise<FetchApi> => fetchApiOf(await apiFromRuntime(runtime, options), options)
