import {
  acceptInvitation,
  ApiUsage,
  authenticate,
  ConsentUsersResource,
  createPlatformIntegrationSession,
  createSession,
  type DomainError,
  executeExport,
  findDashboardUrls,
  generateSdkConfig,
  getLanguages,
  getUserByOrganizationUserId,
  InvalidInput,
  isStoreUnavailable,
  type Principal,
  replayDelivery,
  replayFailed,
  type ResourceDef,
  ResourceService,
  resources as defaultResources,
  tcStringOfEvent
} from "@cmp/core"
import type { PlatformRuntime, PlatformServices } from "@cmp/platform"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import { readJson } from "./Body.js"
import { errorResponse, fromDomainError, unavailableResponse } from "./Errors.js"
import { type ApiRequest, type ApiResponse, header, json } from "./Message.js"
import { docsAsset } from "./Docs.js"
import { openApiDocument } from "./OpenApi.js"
import { parseQuery } from "./Query.js"

export interface HandlerOptions {
  /** Serve plain HTTP instead of answering 301 to the https URL (development only). */
  readonly allowHttp?: boolean | undefined
  /** Honour `X-Forwarded-Proto` and `X-Forwarded-For` from a proxy in front. */
  readonly trustProxy?: boolean | undefined
  /** Body size limit in bytes (default 1 MiB). */
  readonly bodyLimit?: number | undefined
  /** The resources served (default: every declared resource). */
  readonly resources?: ReadonlyArray<ResourceDef> | undefined
  /** `Info` and below log one line per request. */
  readonly logLevel?: LogLevel.Literal | undefined
}

export interface Handler {
  /** Answers any request; one for a path outside the API is a 404. */
  readonly handle: (request: ApiRequest) => Promise<ApiResponse>
  /** Whether a path (relative to the mount point) belongs to the API, for hosts that serve other routes too. */
  readonly owns: (url: string) => boolean
  readonly openapi: Record<string, unknown>
}

type Use = Effect.Effect<unknown, DomainError, PlatformServices>

/** What a route sees of its request. */
interface Context {
  readonly request: ApiRequest
  readonly params: ReadonlyArray<string>
  readonly rawQuery: string
  readonly body: unknown
  readonly address: string | undefined
}

interface Route {
  readonly method: string
  /** Lower-case path segments after `/v1`; `:` is a parameter. */
  readonly path: ReadonlyArray<string>
  /** `bearer`: an access token is needed, and counts against `api_requests`. */
  readonly auth: "bearer" | "none"
  readonly body: boolean
  readonly status: number
  readonly run: (context: Context, principal: Principal) => Use
}

const route = (
  method: string,
  path: string,
  auth: Route["auth"],
  run: Route["run"],
  options: { readonly body?: boolean; readonly status?: number } = {}
): Route => ({
  method,
  path: path.split("/").filter(Boolean),
  auth,
  body: options.body ?? (method === "POST" || method === "PUT" || method === "PATCH"),
  status: options.status ?? 200,
  run
})

/** No principal: routes without a bearer token get none. */
const nobody = undefined as unknown as Principal

const withQuery = (context: Context, use: (query: Record<string, unknown>) => Use): Use =>
  Effect.flatMap(parseQuery(context.rawQuery), use)

/** `GET consents/users/:id?$by_organization_user_id=true`: the id is the organization's own user id. */
const getUser = (def: ResourceDef, context: Context, principal: Principal, id: string): Use =>
  withQuery(context, (q) => {
    const by = q.$by_organization_user_id
    if (by === undefined || by === "false") return ResourceService.get(def, principal, id)
    if (by !== "true") {
      return Effect.fail(new InvalidInput({
        message: "Invalid query: $by_organization_user_id must be true or false",
        errors: { $by_organization_user_id: "must be true or false" }
      }))
    }
    const rest = Object.keys(q).filter((k) => k !== "$by_organization_user_id")
    if (rest.length > 0) {
      return Effect.fail(new InvalidInput({
        message: `Invalid query: ${rest[0]} is not supported here`,
        errors: { [rest[0]!]: "is not supported here" }
      }))
    }
    return getUserByOrganizationUserId(principal, id)
  })

/** The routes that are not generic resource methods: sessions and actions. */
const actions: ReadonlyArray<Route> = [
  route("POST", "sessions", "none", (c) => createSession(c.body, c.address), { status: 201 }),
  // The invitation token itself is the credential; answers with an email session.
  route("POST", "invitations/accept", "none", (c) => acceptInvitation(c.body), { status: 201 }),
  // The integration's own token (`x-platform-authorization`) is the credential.
  route("POST", "platform-integrations/sessions", "none", (c) => {
    const given = header(c.request.headers, "x-platform-authorization")
    return createPlatformIntegrationSession(given?.replace(/^Bearer\s+/i, ""), c.body)
  }, { status: 201 }),
  route("POST", "webhooks/deliveries/replay", "bearer", (c, p) => replayFailed(p, c.body)),
  route("POST", "webhooks/deliveries/:/replay", "bearer", (c, p) => replayDelivery(p, c.params[0]!), { body: false }),
  route("POST", "widgets/notices/generators/sdk", "bearer", (c, p) => generateSdkConfig(p, c.body), { status: 201 }),
  route("POST", "exports/execute", "bearer", (c, p) => executeExport(p, c.body), { status: 201 }),
  route("GET", "consents/events/:/tcstring", "bearer", (c, p) => tcStringOfEvent(p, c.params[0]!)),
  route("GET", "analytics/dashboards-urls", "bearer", (c, p) => withQuery(c, (q) => findDashboardUrls(p, q))),
  route("GET", "languages", "bearer", (_c, p) => getLanguages(p))
]

/** Paths that only answer the methods of their actions; any other method is a 405. */
const actionOnly = new Set(["sessions", "platform-integrations/sessions", "widgets/notices/generators/sdk", "exports/execute", "languages"])

const matchRoute = (segments: ReadonlyArray<string>, method: string): { route: Route; params: Array<string> } | undefined => {
  for (const r of actions) {
    if (r.method !== method || r.path.length !== segments.length) continue
    const params: Array<string> = []
    let ok = true
    for (let i = 0; i < r.path.length && ok; i++) {
      if (r.path[i] === ":") params.push(segments[i]!)
      else ok = r.path[i] === segments[i]!.toLowerCase()
    }
    if (ok) return { route: r, params }
  }
  return undefined
}

const methodsOf = (def: ResourceDef, withId: boolean): Array<string> => {
  const m = def.methods
  const out: Array<string> = []
  if (withId) {
    if (m.includes("get")) out.push("GET", "HEAD")
    if (m.includes("update")) out.push("PUT")
    if (m.includes("patch")) out.push("PATCH")
    if (m.includes("remove")) out.push("DELETE")
  } else {
    if (m.includes("find")) out.push("GET", "HEAD")
    if (m.includes("create")) out.push("POST")
  }
  return out
}

/** The generic method of a resource, or undefined when the resource does not have it. */
const resourceRoute = (def: ResourceDef, method: string, id: string | undefined): Route | undefined => {
  const m = def.methods
  const r = (verb: string, run: Route["run"], status = 200) =>
    route(verb, def.path, "bearer", run, { status })
  if (id === undefined) {
    if (method === "GET" && m.includes("find")) {
      return r("GET", (c, p) => withQuery(c, (q) => ResourceService.find(def, p, q)))
    }
    if (method === "POST" && m.includes("create")) return r("POST", (c, p) => ResourceService.create(def, p, c.body), 201)
    return undefined
  }
  if (method === "GET" && m.includes("get")) {
    return def.path === ConsentUsersResource.path
      ? r("GET", (c, p) => getUser(def, c, p, id))
      : r("GET", (_c, p) => ResourceService.get(def, p, id))
  }
  if (method === "PUT" && m.includes("update")) return r("PUT", (c, p) => ResourceService.update(def, p, id, c.body))
  if (method === "PATCH" && m.includes("patch")) return r("PATCH", (c, p) => ResourceService.patch(def, p, id, c.body))
  if (method === "DELETE" && m.includes("remove")) return r("DELETE", (_c, p) => ResourceService.remove(def, p, id))
  return undefined
}

const domainTags = new Set([
  "InvalidInput", "NotAuthenticated", "Forbidden", "NotFound", "Conflict", "QuotaExceeded", "TooManyRequests"
])
const isDomainError = (u: unknown): u is DomainError =>
  typeof u === "object" && u !== null && domainTags.has((u as { _tag?: string })._tag ?? "")

const hostPattern = /^[a-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-f:.]+\](:\d{1,5})?$/i

const bearer = (request: ApiRequest): string | undefined => {
  const h = header(request.headers, "authorization")
  if (!h) return undefined
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h)
  return m ? m[1] : ""
}

/** Every answer says not to sniff its type; the rest are per answer. */
const finish = (response: ApiResponse, requestId: string): ApiResponse => ({
  ...response,
  headers: { ...response.headers, "x-request-id": requestId, "x-content-type-options": "nosniff" }
})

/** The REST API over a platform runtime: one function from a plain request to a plain response. */
export const makeHandler = (runtime: PlatformRuntime, options: HandlerOptions = {}): Handler => {
  const served = options.resources ?? defaultResources
  const trustProxy = options.trustProxy === true
  const bodyLimit = options.bodyLimit ?? 1024 * 1024
  const openapi = openApiDocument(served)
  const byPath = new Map(served.map((def) => [def.path, def]))
  const logRequests = ["All", "Trace", "Debug", "Info", undefined].includes(options.logLevel)

  const isSecure = (request: ApiRequest) => {
    if (request.encrypted) return true
    if (!trustProxy) return false
    return header(request.headers, "x-forwarded-proto")?.split(",")[0]?.trim().toLowerCase() === "https"
  }

  /** The peer, or the left-most address a trusted proxy forwarded for. */
  const clientAddress = (request: ApiRequest) => {
    if (trustProxy) {
      const forwarded = header(request.headers, "x-forwarded-for")?.split(",")[0]?.trim()
      if (forwarded) return forwarded
    }
    return request.remoteAddress
  }

  /** Runs a use-case and writes its result or its error in the contract's shape. */
  const respond = async (effect: Use, status: number, requestId: string): Promise<ApiResponse> => {
    const exit = await runtime.runPromiseExit(effect.pipe(Effect.annotateLogs({ requestId })))
    if (Exit.isSuccess(exit)) return json(status, exit.value)
    const failure = Cause.failureOption(exit.cause)
    if (Option.isSome(failure) && isDomainError(failure.value)) {
      const e = failure.value
      const body = fromDomainError(e)
      return json(body.code, body, e._tag === "TooManyRequests" ? { "retry-after": String(e.retryAfterSeconds) } : {})
    }
    // Any defect of the cause: a transaction whose COMMIT failed may also carry its ROLLBACK's.
    const unavailable = Option.getOrUndefined(Chunk.findFirst(Cause.defects(exit.cause), isStoreUnavailable))
    if (unavailable) return unavailableResponse(unavailable)
    runtime.runFork(Effect.logError("Request failed", exit.cause).pipe(Effect.annotateLogs({ requestId })))
    return errorResponse(500, "An internal error occurred")
  }

  /** Reads the body when the route takes one, authenticates, counts the request, then runs it. */
  const run = async (
    request: ApiRequest,
    found: Route,
    params: ReadonlyArray<string>,
    rawQuery: string,
    counted: boolean,
    requestId: string
  ): Promise<ApiResponse> => {
    let body: unknown
    if (found.body) {
      const read = await Effect.runPromise(Effect.either(readJson(request, bodyLimit)))
      if (read._tag === "Left") return read.left
      body = read.right
    }
    const context: Context = { request, params, rawQuery, body, address: clientAddress(request) }
    if (found.auth === "none") return respond(found.run(context, nobody), found.status, requestId)
    const effect = Effect.gen(function*() {
      const principal = yield* authenticate(bearer(request))
      if (principal._tag === "Client" && counted) {
        yield* Effect.flatMap(ApiUsage, (usage) => usage.hit(principal.organizationId))
      }
      return yield* found.run(context, principal)
    })
    return respond(effect, found.status, requestId)
  }

  const v1 = async (request: ApiRequest, path: string, rawQuery: string, requestId: string, base: string) => {
    const trimmed = path.replace(/^\/+|\/+$/g, "")
    const method = request.method === "HEAD" ? "GET" : request.method.toUpperCase()
    let segments: Array<string>
    try {
      segments = trimmed === "" ? [] : trimmed.split("/").map(decodeURIComponent)
    } catch {
      return errorResponse(400, "Invalid path: the id is not a valid URI component")
    }
    const lower = trimmed.toLowerCase()
    // Paths relative to v1 under `consents/` are not counted against `api_requests`.
    const counted = !lower.startsWith("consents/")
    const action = matchRoute(segments, method)
    if (action) return run(request, action.route, action.params, rawQuery, counted, requestId)
    // Every declared resource behind one map from path to declaration.
    let def = byPath.get(lower)
    let id: string | undefined
    if (!def) {
      const slash = trimmed.lastIndexOf("/")
      def = slash > 0 ? byPath.get(lower.slice(0, slash)) : undefined
      if (def) id = segments[segments.length - 1]
    }
    if (def) {
      const found = resourceRoute(def, method, id)
      if (found) return run(request, found, [], rawQuery, counted, requestId)
      // A known service answers an unsupported method with 405, as Feathers does.
      return errorResponse(405, `Method ${request.method} is not supported by ${def.path}`, {}, {
        allow: methodsOf(def, id !== undefined).join(", ")
      })
    }
    if (actionOnly.has(lower)) {
      const allow = actions.filter((r) => r.path.join("/") === lower).flatMap((r) => (r.method === "GET" ? ["GET", "HEAD"] : [r.method]))
      return errorResponse(405, `Method ${request.method} is not supported by ${lower}`, {}, { allow: allow.join(", ") })
    }
    return errorResponse(404, `Page not found: ${request.method} ${base}/v1${path}`)
  }

  const owns = (url: string) => {
    const path = url.split("?")[0]!.toLowerCase()
    return path === "/v1" || path.startsWith("/v1/") || path === "/openapi.json" || path === "/docs" || path.startsWith("/docs/")
  }

  const answer = async (request: ApiRequest, requestId: string): Promise<ApiResponse> => {
    const base = request.mountPath ?? ""
    if (options.allowHttp !== true && !isSecure(request)) {
      const host = header(request.headers, "host") ?? ""
      if (!hostPattern.test(host)) return errorResponse(400, "Invalid Host header")
      return { status: 301, headers: { location: `https://${host}${base}${request.url}` }, body: "" }
    }
    const q = request.url.indexOf("?")
    const path = q < 0 ? request.url : request.url.slice(0, q)
    const rawQuery = q < 0 ? "" : request.url.slice(q + 1)
    const lower = path.toLowerCase()
    const method = request.method.toUpperCase()
    if (lower === "/v1" || lower.startsWith("/v1/")) return v1(request, path.slice(3), rawQuery, requestId, base)
    const readOnly = method === "GET" || method === "HEAD"
    if (lower === "/openapi.json" || lower === "/openapi.json/") {
      return readOnly ? json(200, openapi) : errorResponse(405, `Method ${request.method} is not supported by openapi.json`, {}, { allow: "GET, HEAD" })
    }
    if (lower === "/docs") return { status: 301, headers: { location: `${base}/docs/` }, body: "" }
    if (lower.startsWith("/docs/") && readOnly) {
      const found = docsAsset(path.slice("/docs/".length))
      if (found) return found
    }
    return errorResponse(404, `Page not found: ${request.method} ${base}${path}`)
  }

  const handle = async (request: ApiRequest): Promise<ApiResponse> => {
    const started = performance.now()
    const incoming = header(request.headers, "x-request-id")
    const requestId = incoming !== undefined && /^[\w.-]{1,128}$/.test(incoming) ? incoming : globalThis.crypto.randomUUID()
    let response: ApiResponse
    try {
      response = await answer(request, requestId)
    } catch (error) {
      runtime.runFork(Effect.logError("Unhandled error", String(error)).pipe(Effect.annotateLogs({ requestId })))
      response = errorResponse(500, "An internal error occurred")
    }
    if (logRequests) {
      // Path only: a query string may carry values the caller considers private.
      runtime.runFork(Effect.logInfo("request").pipe(Effect.annotateLogs({
        requestId,
        method: request.method,
        path: (request.mountPath ?? "") + request.url.split("?")[0],
        status: response.status,
        durationMs: performance.now() - started
      })))
    }
    return finish(response, requestId)
  }

  return { handle, owns, openapi }
}
