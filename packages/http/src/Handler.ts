import {
  ApiUsage,
  authenticate,
  authenticatePublicKey,
  Declarations,
  endUserCredentialOf,
  type EndUserPrincipal,
  endUserWriteLimits,
  Forbidden,
  isEndUser,
  RequestAddress,
  isDomainError,
  isFileAnswer,
  type FileAnswer,
  isStoreUnavailable,
  Metrics,
  type OperationMetric,
  type PlatformRuntime,
  type Principal,
  type PrivacyCenterPagesShape,
  PrivacyCenterPages,
  PublicRateLimit,
  requireOrigin,
  tracedRequest,
  tracingEnabled
} from "@cmp/core"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import { annotated } from "./Annotated.js"
import { BodyBudget, readJson } from "./Body.js"
import { clientAddress, isOwnOrigin, isSecure, proxyHops } from "./ClientAddress.js"
import { errorResponse, fromDomainError, internalErrorResponse, unavailableResponse } from "./Errors.js"
import { type ApiRequest, type ApiResponse, header, json } from "./Message.js"
import { docsAsset, type DocsAssets } from "./Docs.js"
import { isHostHeader, isRewrittenPath, unsupportedMethodResponse, unsupportedMethods } from "./Target.js"
import { openApiDocument, servedAt } from "./OpenApi.js"
import { allowOrigin, preflight, publicKeyOf, refusalsOf, withoutPublicKey } from "./EndUsers.js"
import {
  actionMethods,
  actionRoute,
  type Context,
  endUserActionMethods,
  endUserMethodsOf,
  matchRoute,
  methodsOf,
  resourceRoute,
  type Route,
  type Use
} from "./Routes.js"
import { countedOrganizations } from "./Usage.js"
import { isProbePath, makeProbes } from "./Probes.js"

export interface HandlerOptions {
  /** Serve plain HTTP instead of answering 301 to the https URL (development only). */
  readonly allowHttp?: boolean | undefined
  /**
   * The proxies in front (`true` is one): honour `X-Forwarded-Proto`, and take the client address
   * the farthest of them appended to `X-Forwarded-For`, never a value the client wrote.
   */
  readonly trustProxy?: boolean | number | undefined
  /** Body size limit in bytes (default 1 MiB). */
  readonly bodyLimit?: number | undefined
  /** A request body that sends no bytes for this long is answered 408 (default 10 s). */
  readonly bodyTimeoutMs?: number | undefined
  /**
   * Bytes of request bodies being read at once, across all requests: past it a request is
   * answered 503 with `Retry-After` instead of buffered (default 64 MiB, four bodies of the
   * largest size any route may take).
   */
  readonly bodyMemoryLimit?: number | undefined
  /** `Info` and below log one line per request. */
  readonly logLevel?: LogLevel.Literal | undefined
  /** Swagger UI's files for the docs page (`/docs/`); the adapters read them from `swagger-ui-dist`. */
  readonly docsAssets?: DocsAssets | undefined
  /** `METRICS_TOKEN`: `GET /metrics` answers only with `Authorization: Bearer <token>`; unset, it is a 404. */
  readonly metricsToken?: string | undefined
  /**
   * Serve the hosted privacy centers (`/privacy/…`, and `/` and `/robots.txt` of their proven
   * hosts) beside the API: on unless `false`.
   */
  readonly pages?: boolean | undefined
  /**
   * `"pages"`: the hosted pages alone, for a host that mounts them apart from the API (which it
   * serves elsewhere, at `apiBase`); every other path is left to the host.
   */
  readonly only?: "pages" | undefined
  /** Where the pages' script reaches the API: `<mount>/v1` unless the API is served elsewhere (`only: "pages"`). */
  readonly apiBase?: string | undefined
}

export interface Handler {
  /** Answers any request; one for a path outside the API is a 404. */
  readonly handle: (request: ApiRequest) => Promise<ApiResponse>
  /** Whether a path (relative to the mount point) belongs to the API, for hosts that serve other routes too. */
  readonly owns: (url: string) => boolean
  /** The OpenAPI document without `servers`; `/openapi.json` answers `servedAt(openapi, mountPath)`. */
  readonly openapi: Record<string, unknown>
}

/** What the request log shows for a path no route has. */
const unknownRoute = "(unknown)"

const bearer = (request: ApiRequest): string | undefined => {
  const h = header(request.headers, "authorization")
  if (!h) return undefined
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h)
  return m ? m[1] : ""
}

/** The routes whose credential is in the body read it before anyone is known: only this much of it. */
const CREDENTIAL_BODY_LIMIT = 16 * 1024

/** A visitor's browser or app sends one consent at a time: no more than this. */
const END_USER_BODY_LIMIT = 64 * 1024

/** A body the route could not take: its answer as it is. */
class BodyRefused {
  constructor(readonly response: ApiResponse) {}
}

/** An answer that shows a credential must not be kept by any cache on its way. */
const noStore = (response: ApiResponse): ApiResponse => ({
  ...response,
  headers: { ...response.headers, "cache-control": "no-store" }
})

/** A successful answer of a route that says any cache may keep it a while (public keys). */
const cacheable = (response: ApiResponse, seconds: number): ApiResponse =>
  response.status >= 200 && response.status < 300
    ? { ...response, headers: { ...response.headers, "cache-control": `public, max-age=${seconds}` } }
    : response

/**
 * Plain HTTP where HTTPS is required. The body says why in the contract's error shape: a client
 * that does not follow redirects (`curl` without `-L`, a script reading JSON) shows that rather
 * than failing on an empty body, and a developer learns the switch for a local server.
 */
const toHttps = (location: string): ApiResponse =>
  errorResponse(
    301,
    `This API is served over HTTPS only: use ${location}. For local development over plain HTTP, ` +
      "start the server with ALLOW_HTTP=true (allowHttp: true when embedding it).",
    {},
    { location }
  )

/**
 * A file as a download: its own type, saved rather than shown, and sandboxed should a browser
 * render it anyway, so an uploaded document never runs as a page of this origin.
 */
const download = (file: FileAnswer): ApiResponse => ({
  status: 200,
  headers: {
    "content-type": file.mediaType,
    "content-disposition": `attachment; filename="${file.filename.replace(/[^\w.-]/g, "_")}"`,
    "content-security-policy": "sandbox"
  },
  body: file.bytes
})

/** What answering a request found out that its log line and metrics show: the route's template, who asked. */
interface Seen {
  route?: string
  /** The principal's kind (`Client`, `Member`, `PublicKey`, ...), once authenticated. */
  principal?: Principal["_tag"]
  /** The one organization the principal acts in, when it has one. */
  organizationId?: string
  /** What the operation its method and path name adds to the metrics (its declaration's). */
  metric?: OperationMetric | undefined
  /** A probe or a scrape: asked every few seconds, neither logged nor counted. */
  probe?: boolean
}

const countedMethods = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

/** The route template a request was answered on, and what its operation adds to the metrics. */
interface Answered {
  readonly route: string
  readonly metric?: OperationMetric | undefined
}

/** The metrics of one answered request: its route, and what its operation's declaration adds (a write, a token). */
const record = (
  metrics: Effect.Effect.Success<typeof Metrics>,
  request: ApiRequest,
  { metric, route }: Answered,
  status: number,
  durationMs: number,
  principal: Seen["principal"]
) => {
  const method = request.method.toUpperCase()
  // A label takes few values: a method no route has is any other method.
  const counted = metrics.request(route, countedMethods.has(method) ? method : "OTHER", status, durationMs / 1000)
  Effect.runSync(metric === undefined ? counted : Effect.zipRight(counted, metric(metrics, { status, principal })))
}

/** Every answer says not to sniff its type; the rest are per answer. */
const finish = (response: ApiResponse, requestId: string): ApiResponse => ({
  ...response,
  headers: { ...response.headers, "x-request-id": requestId, "x-content-type-options": "nosniff" }
})

/**
 * The REST API over a platform runtime: one function from a plain request to a plain response,
 * serving the resources and actions the platform was composed with (the registry's and its
 * host's own). Builds the runtime's services if they are not yet.
 */
export const makeHandler = async (runtime: PlatformRuntime, options: HandlerOptions = {}): Promise<Handler> => {
  const { actions: servedActions, resources: served } = await runtime.runPromise(Declarations)
  // Whether requests get spans is the runtime's for its life: asked once, not per request.
  const traced = await runtime.runPromise(tracingEnabled)
  // Built by now: a request's fibers start from it with their log annotations in place.
  const base = await runtime.runtime()
  /** Runs an effect in a fiber of its own with these log annotations, not waiting for it. */
  const fork = (effect: Effect.Effect<unknown, never, Effect.Effect.Context<Use>>, annotations: Readonly<Record<string, unknown>>) =>
    Runtime.runFork(annotated(base, annotations))(effect)
  const hops = proxyHops(options.trustProxy)
  const bodyLimit = options.bodyLimit ?? 1024 * 1024
  const bodyTimeoutMs = options.bodyTimeoutMs ?? 10_000
  const bodyBudget = new BodyBudget(options.bodyMemoryLimit ?? 64 * 1024 * 1024)
  const actionRoutes = servedActions.map(actionRoute)
  const openapi = openApiDocument(served, servedActions)
  const byPath = new Map(served.map((def) => [def.path, def]))
  const refusal = refusalsOf(served, servedActions)
  /** A public key anywhere but where a declaration takes it: unauthenticated. */
  const publicKeyElsewhere = () => errorResponse(401, refusal("public-key"))
  const logRequests = ["All", "Trace", "Debug", "Info", undefined].includes(options.logLevel)
  const probes = makeProbes(runtime, options.metricsToken)
  const pages: PrivacyCenterPagesShape | undefined = options.pages === false && options.only !== "pages" ? undefined : await runtime.runPromise(PrivacyCenterPages)
  // Read once: recording a request then costs no fiber. Until the runtime is built, nothing is counted.
  let metrics: Effect.Effect.Success<typeof Metrics> | undefined
  runtime.runPromise(Metrics).then((m) => (metrics = m), () => undefined)

  /**
   * Runs a use-case and writes its result or its error in the contract's shape, in the request's
   * span (named by the route's template) when spans are recorded.
   */
  const respond = async (
    effect: Effect.Effect<unknown, Effect.Effect.Error<Use> | BodyRefused, Effect.Effect.Context<Use>>,
    status: number,
    requestId: string,
    span: { readonly method: string; readonly route: string } | undefined,
    address: string | undefined
  ): Promise<ApiResponse> => {
    // What the request changes is recorded in the audit trail with the address it came from.
    const runtime = annotated(base, { requestId }, [[RequestAddress, address]])
    if (span === undefined) {
      // Without spans the outcome is answered outside the fiber. The fiber still ends with the
      // use-case's exit as its value: a fiber that fails is logged by the runtime as an
      // unhandled error, with the error's message (which may name a person).
      const outer = await Runtime.runPromiseExit(runtime)(Effect.exit(effect))
      return answerOf(Exit.isSuccess(outer) ? outer.value : outer, status, requestId)
    }
    // The request's span records the answer's status.
    const answered = Effect.map(Effect.exit(effect), (exit) => answerOf(exit, status, requestId))
    const exit = await Runtime.runPromiseExit(runtime)(tracedRequest(span.method, span.route)(answered))
    // A runtime that could not be built answers like a failed use-case.
    return Exit.isSuccess(exit) ? exit.value : answerOf(exit, status, requestId)
  }

  /** A use-case's result, or its error, as the contract's answer. */
  const answerOf = (exit: Exit.Exit<unknown, unknown>, status: number, requestId: string): ApiResponse => {
    if (Exit.isSuccess(exit)) return isFileAnswer(exit.value) ? download(exit.value) : json(status, exit.value)
    const failure = Cause.failureOption(exit.cause)
    if (Option.isSome(failure) && failure.value instanceof BodyRefused) return failure.value.response
    if (Option.isSome(failure) && isDomainError(failure.value)) {
      const e = failure.value
      const body = fromDomainError(e)
      return json(body.code, body, e._tag === "TooManyRequests" ? { "retry-after": String(e.retryAfterSeconds) } : {})
    }
    // Any defect of the cause: a transaction whose COMMIT failed may also carry its ROLLBACK's.
    const unavailable = Option.getOrUndefined(Chunk.findFirst(Cause.defects(exit.cause), isStoreUnavailable))
    if (unavailable) {
      fork(Effect.logWarning("Store unavailable", unavailable.message), { requestId })
      return unavailableResponse(unavailable)
    }
    fork(Effect.logError("Request failed", exit.cause), { requestId })
    return internalErrorResponse()
  }

  /** Runs a route; an answer that carries a credential is not to be cached, whatever it is. */
  const run = (...args: Parameters<typeof runRoute>): Promise<ApiResponse> =>
    runRoute(...args).then((response) =>
      args[1].noStore ? noStore(response) : args[1].maxAge !== undefined ? cacheable(response, args[1].maxAge) : response
    )

  /** The body when the route takes one. */
  const readBody = (request: ApiRequest, found: Route, endUser = false): Effect.Effect<unknown, BodyRefused> => {
    if (!found.body) return Effect.succeed(undefined)
    const limit = found.auth === "none"
      ? Math.min(bodyLimit, CREDENTIAL_BODY_LIMIT)
      : endUser
      ? Math.min(bodyLimit, END_USER_BODY_LIMIT)
      : Math.max(bodyLimit, found.bodyLimit ?? 0)
    return Effect.mapError(
      readJson(request, { limit, timeoutMs: bodyTimeoutMs, budget: bodyBudget, textPlain: endUser }),
      (response) => new BodyRefused(response)
    )
  }

  /**
   * Authenticates from the headers, then reads the body when the route takes one, counts the
   * request and runs it: a request without a valid token is answered before its body is read
   * (the host discards the unread body), so it never holds memory.
   */
  const runRoute = async (
    request: ApiRequest,
    found: Route,
    params: ReadonlyArray<string>,
    rawQuery: string,
    requestId: string,
    seen: Seen
  ): Promise<ApiResponse> => {
    const address = clientAddress(request, hops)
    const span = !traced || seen.route === undefined ? undefined : { method: request.method.toUpperCase(), route: seen.route }
    if (found.auth === "none") {
      const context = { request, params, rawQuery, address }
      // A credential in a header is checked before the body is read, as a bearer's is.
      const open = found.admit === undefined
        ? Effect.flatMap(readBody(request, found), (body) => found.run({ ...context, body }))
        : Effect.flatMap(found.admit(context), (next) => Effect.flatMap(readBody(request, found), next))
      return respond(open, found.status, requestId, span, address)
    }
    const token = bearer(request)
    // Without a bearer, the organization's public key may stand in where a route takes it.
    const keyed = token === undefined ? publicKeyOf(request.headers, rawQuery) : undefined
    if (keyed !== undefined && !found.endUsers.includes("public-key")) {
      return publicKeyElsewhere()
    }
    const query = keyed?.fromQuery === true ? withoutPublicKey(rawQuery) : rawQuery
    // The page origin an end user's request was checked against: its answers, errors too, may be read there.
    let readableAt: string | undefined
    /** An end user's credential: the operation must take it, and its page's origin its organization's. */
    const endUserChecks = (principal: EndUserPrincipal, credential: NonNullable<ReturnType<typeof endUserCredentialOf>>) => {
      if (!found.endUsers.includes(credential)) return Effect.failSync(() => new Forbidden({ message: refusal(credential) }))
      const origin = header(request.headers, "origin")
      // A page this server served (a privacy center at `/privacy/<id>`) writes to its own
      // origin. Without the pages (`pages: false`) no page of that origin is this server's:
      // a host that embeds the API beside its own pages holds them to the organization's
      // origins like any page. Its answers are readable there once the origin passed.
      const ownPage = origin !== undefined && pages !== undefined && isOwnOrigin(request, origin, hops)
      const checked = origin === undefined
        ? Effect.void
        : Effect.map(ownPage ? Effect.void : requireOrigin(principal, origin, options.allowHttp === true), () => {
          readableAt = origin
        })
      // A visitor's writes are limited, whichever credential its device holds; its reads are not.
      if (request.method.toUpperCase() !== "POST") return checked
      return Effect.zipRight(
        checked,
        Effect.flatMap(endUserWriteLimits(principal, address), (limits) =>
          Effect.flatMap(PublicRateLimit, (limiter) => limiter.take(limits)).pipe(
            Effect.tapError(() => Effect.flatMap(Metrics, (m) => m.publicRateLimited))
          ))
      )
    }
    // Every request of a bearer or a key goes this way: plain combinators, no generator per step.
    const afterPrincipal = (principal: Principal) => {
      seen.principal = principal._tag
      if ("organizationId" in principal) seen.organizationId = principal.organizationId
      const endUser = isEndUser(principal)
      const credential = endUserCredentialOf(principal)
      const checked = isEndUser(principal) && credential !== undefined ? endUserChecks(principal, credential) : Effect.void
      return Effect.zipRight(
        checked,
        Effect.flatMap(readBody(request, found, endUser), (body) => {
          const context: Context = { request, params, rawQuery: query, body, address }
          if (!found.countsApiRequests) return found.run(context, principal)
          const counted = Effect.flatMap(countedOrganizations(principal, found, context), (organizations) =>
            organizations.length === 0 ? Effect.void : Effect.flatMap(ApiUsage, (usage) => usage.hit(organizations)).pipe(
              Effect.tapError(() => Effect.flatMap(Metrics, (m) => m.quotaRejected))
            ))
          return Effect.zipRight(counted, found.run(context, principal))
        })
      )
    }
    const effect = Effect.flatMap(keyed !== undefined ? authenticatePublicKey(keyed.key) : authenticate(token), afterPrincipal)
    const response = await respond(effect, found.status, requestId, span, address)
    return readableAt === undefined ? response : allowOrigin(response, readableAt)
  }

  /** A route's template for the log (`/v1/consents/users/:id`). */
  const template = (base: string, route: Route) => `${base}/v1/${route.path.map((s) => (s === ":" ? ":id" : s)).join("/")}`

  const v1 = async (request: ApiRequest, path: string, rawQuery: string, requestId: string, base: string, seen: Seen) => {
    const trimmed = path.replace(/^\/+|\/+$/g, "")
    const method = request.method === "HEAD" ? "GET" : request.method.toUpperCase()
    let segments: Array<string>
    try {
      segments = trimmed === "" ? [] : trimmed.split("/").map(decodeURIComponent)
    } catch {
      return errorResponse(400, "Invalid path: the id is not a valid URI component")
    }
    const lower = trimmed.toLowerCase()
    const action = matchRoute(actionRoutes, segments, method)
    if (action) {
      seen.route = template(base, action.route)
      seen.metric = action.route.metric
      return run(request, action.route, action.params, rawQuery, requestId, seen)
    }
    const onAction = actionMethods(actionRoutes, segments)
    // Every declared resource behind one map from path to declaration.
    let def = byPath.get(lower)
    let id: string | undefined
    // An action's own path (`platform-integrations/sessions`) is never an id of its parent service.
    if (!def && onAction.length === 0) {
      const slash = trimmed.lastIndexOf("/")
      def = slash > 0 ? byPath.get(lower.slice(0, slash)) : undefined
      if (def) id = segments[segments.length - 1]
    }
    if (def) seen.route = `${base}/v1/${def.path}${id === undefined ? "" : "/:id"}`
    // A browser asks before a page's cross-origin write; the request that follows is the one checked.
    if (method === "OPTIONS") {
      const open = [...new Set([...(def ? endUserMethodsOf(def, id !== undefined) : []), ...endUserActionMethods(actionRoutes, segments)])]
      if (open.length > 0) return preflight(open, header(request.headers, "origin"))
    }
    const found = def && resourceRoute(def, method, id !== undefined)
    if (found) {
      seen.metric = found.metric
      return run(request, found, id === undefined ? [] : [id], rawQuery, requestId, seen)
    }
    // A public key opens only the operations declared to take it: with it, anything else is unauthenticated, whatever the path.
    if (bearer(request) === undefined && method !== "OPTIONS" && publicKeyOf(request.headers, rawQuery) !== undefined) {
      return publicKeyElsewhere()
    }
    // A known path answers an unsupported method with 405 and what it allows, as Feathers does.
    const allow = [...new Set([...(def ? methodsOf(def, id !== undefined) : []), ...onAction])]
    if (allow.length > 0) {
      return errorResponse(405, `Method ${request.method} is not supported by ${def?.path ?? lower}`, {}, { allow: allow.join(", ") })
    }
    return errorResponse(404, `Page not found: ${request.method} ${base}/v1${path}`)
  }

  const owns = (url: string) => {
    const path = url.split("?")[0]!.toLowerCase()
    if (options.only === "pages") return pages !== undefined && pages.owns(path)
    return path === "/v1" || path.startsWith("/v1/") || path === "/openapi.json" || path === "/docs" || path.startsWith("/docs/") ||
      isProbePath(path) || (pages !== undefined && pages.owns(path))
  }

  /** A hosted page's answer, when the path is one of the pages'. */
  const page = async (request: ApiRequest, path: string, rawQuery: string, base: string, seen: Seen): Promise<ApiResponse | undefined> => {
    if (pages === undefined) return undefined
    const found = await runtime.runPromise(pages.answer({
      method: request.method.toUpperCase(),
      path,
      query: rawQuery,
      host: header(request.headers, "host"),
      acceptLanguage: header(request.headers, "accept-language"),
      base,
      apiBase: options.apiBase ?? `${base}/v1`
    }))
    if (found === undefined) return undefined
    seen.route = `${base}${found.route}`
    return { status: found.status, headers: found.headers, body: found.body }
  }

  const answer = async (request: ApiRequest, requestId: string, seen: Seen): Promise<ApiResponse> => {
    const base = request.mountPath ?? ""
    const method = request.method.toUpperCase()
    const host = header(request.headers, "host")
    // One carrying a path or user information is how a request reaches one path for a host that
    // builds its URL from `Host` while a proxy in front routed it by another.
    if (host !== undefined && !isHostHeader(host)) return errorResponse(400, "Invalid Host header")
    if (unsupportedMethods.has(method)) return unsupportedMethodResponse(request.method)
    const q = request.url.indexOf("?")
    const path = q < 0 ? request.url : request.url.slice(0, q)
    const rawQuery = q < 0 ? "" : request.url.slice(q + 1)
    // Answered as a path of its own, never as the one a URL parser would make of it.
    if (isRewrittenPath(path)) return errorResponse(404, `Page not found: ${request.method} ${base}${path}`)
    // Probes and scrapes come over plain HTTP from inside the deployment: never redirected.
    if (options.only !== "pages" && isProbePath(path.toLowerCase())) {
      seen.probe = true
      return probes(request, path.toLowerCase(), path)
    }
    if (options.allowHttp !== true && !isSecure(request, hops)) {
      if (host === undefined) return errorResponse(400, "Invalid Host header")
      return toHttps(`https://${host}${base}${request.url}`)
    }
    const lower = path.toLowerCase()
    if (options.only === "pages") return (await page(request, path, rawQuery, base, seen)) ?? errorResponse(404, `Page not found: ${request.method} ${base}${path}`)
    if (lower === "/v1" || lower.startsWith("/v1/")) return v1(request, path.slice(3), rawQuery, requestId, base, seen)
    const readOnly = method === "GET" || method === "HEAD"
    if (lower === "/openapi.json" || lower === "/openapi.json/") {
      return readOnly ? json(200, servedAt(openapi, base)) : errorResponse(405, `Method ${request.method} is not supported by openapi.json`, {}, { allow: "GET, HEAD" })
    }
    if (lower === "/docs") return { status: 301, headers: { location: `${base}/docs/` }, body: "" }
    if (lower.startsWith("/docs/")) {
      const found = docsAsset(path.slice("/docs/".length), options.docsAssets)
      if (found) return readOnly ? found : errorResponse(405, `Method ${request.method} is not supported by ${base}${path}`, {}, { allow: "GET, HEAD" })
    }
    return (await page(request, path, rawQuery, base, seen)) ?? errorResponse(404, `Page not found: ${request.method} ${base}${path}`)
  }

  /**
   * The route a request's path names, its ids as parameters (`/v1/consents/users/:id`): what the
   * request log shows. An id may be personal data (an `organization_user_id` is often an e-mail
   * address), and a path no route has is whatever a caller typed, so neither is logged. Found
   * again here only for a request answered before its route was (a redirect, a refused `Host`),
   * with the metric of the operation its method names there.
   */
  const routeOf = (request: ApiRequest): Answered => {
    const base = request.mountPath ?? ""
    const path = request.url.split("?")[0]!
    const lower = path.toLowerCase()
    if (lower === "/openapi.json" || lower === "/openapi.json/" || lower === "/docs") return { route: `${base}${lower}` }
    if (lower.startsWith("/docs/")) return { route: docsAsset(path.slice("/docs/".length), options.docsAssets) ? `${base}${path}` : unknownRoute }
    if (lower !== "/v1" && !lower.startsWith("/v1/")) return { route: unknownRoute }
    const trimmed = lower.slice(3).replace(/^\/+|\/+$/g, "")
    const segments = trimmed === "" ? [] : trimmed.split("/")
    const method = request.method.toUpperCase() === "HEAD" ? "GET" : request.method.toUpperCase()
    const own = matchRoute(actionRoutes, segments, method)
    if (own) return { route: template(base, own.route), metric: own.route.metric }
    const action = actionMethods(actionRoutes, segments).map((m) => matchRoute(actionRoutes, segments, m)).find((a) => a !== undefined)
    if (action) return { route: template(base, action.route) }
    const def = byPath.get(trimmed)
    if (def) return { route: `${base}/v1/${trimmed}`, metric: resourceRoute(def, method, false)?.metric }
    const slash = trimmed.lastIndexOf("/")
    const parent = slash > 0 ? byPath.get(trimmed.slice(0, slash)) : undefined
    return parent ? { route: `${base}/v1/${parent.path}/:id`, metric: resourceRoute(parent, method, true)?.metric } : { route: unknownRoute }
  }

  const handle = async (request: ApiRequest): Promise<ApiResponse> => {
    const started = performance.now()
    const incoming = header(request.headers, "x-request-id")
    const requestId = incoming !== undefined && /^[\w.-]{1,128}$/.test(incoming) ? incoming : globalThis.crypto.randomUUID()
    let response: ApiResponse
    const seen: Seen = {}
    try {
      response = await answer(request, requestId, seen)
    } catch (error) {
      fork(Effect.logError("Unhandled error", String(error)), { requestId })
      response = internalErrorResponse()
    }
    if (seen.probe === true) return finish(response, requestId)
    const answered = seen.route === undefined ? routeOf(request) : { route: seen.route, metric: seen.metric }
    const route = answered.route
    const durationMs = performance.now() - started
    if (metrics !== undefined) record(metrics, request, answered, response.status, durationMs, seen.principal)
    if (logRequests) {
      fork(Effect.logInfo("request"), {
        requestId,
        method: request.method,
        route,
        status: response.status,
        durationMs,
        // Who asked, by kind and organization: never a token, a user or a body.
        ...(seen.principal === undefined ? {} : { principal: seen.principal }),
        ...(seen.organizationId === undefined ? {} : { organizationId: seen.organizationId })
      })
    }
    return finish(response, requestId)
  }

  return { handle, owns, openapi }
}
