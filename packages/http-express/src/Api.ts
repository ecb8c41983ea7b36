import {
  acceptInvitation,
  createPlatformIntegrationSession,
  findDashboardUrls,
  getLanguages,
  ApiUsage,
  ConsentUsersResource,
  executeExport,
  generateSdkConfig,
  getUserByOrganizationUserId,
  tcStringOfEvent,
  replayDelivery,
  replayFailed,
  authenticate,
  createSession,
  type DomainError,
  InvalidInput,
  type Principal,
  type ResourceDef,
  ResourceService,
  resources as defaultResources
} from "@cmp/core"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import express from "express"
import * as crypto from "node:crypto"
import type { IncomingMessage } from "node:http"
import type { TLSSocket } from "node:tls"
import qs from "qs"
import { type ErrorStatus, errorBody, fromDomainError, unavailableReason } from "./Errors.js"
import { docsRouter, openApiDocument } from "./OpenApi.js"
import { type AppRuntime, type AppServices, makeRuntime, type RuntimeOptions } from "./Runtime.js"

export interface ApiOptions extends RuntimeOptions {
  /** Serve plain HTTP instead of answering 301 to the https URL (development only). */
  readonly allowHttp?: boolean | undefined
  /** Honour `X-Forwarded-Proto` from a proxy in front. */
  readonly trustProxy?: boolean | undefined
  /** Body size limit in bytes (default 1 MiB). */
  readonly bodyLimit?: number | undefined
  /** The resources served (default: every declared resource). */
  readonly resources?: ReadonlyArray<ResourceDef> | undefined
}

export interface Api {
  /** Mount with `app.use(api.router)` or `app.use("/prefix", api.router)`. */
  readonly router: express.Router
  readonly runtime: AppRuntime
  readonly openapi: Record<string, unknown>
  readonly dispose: () => Promise<void>
}

type Handler = (req: express.Request, res: express.Response) => void

/** Paths (relative to `/v1`) whose requests do not count against the `api_requests` quota. */
const uncounted = (path: string) => path.startsWith("/consents/")

const domainTags = new Set([
  "InvalidInput", "NotAuthenticated", "Forbidden", "NotFound", "Conflict", "QuotaExceeded", "TooManyRequests"
])
const isDomainError = (u: unknown): u is DomainError =>
  typeof u === "object" && u !== null && domainTags.has((u as { _tag?: string })._tag ?? "")

const send = (res: express.Response, status: number, body: unknown) => {
  if (!res.headersSent) res.status(status).json(body)
}

const sendError = (res: express.Response, code: ErrorStatus, message: string, errors?: Record<string, string>) =>
  send(res, code, errorBody(code, message, errors))

const isSecure = (req: IncomingMessage, trustProxy: boolean) => {
  if ((req.socket as TLSSocket).encrypted) return true
  if (!trustProxy) return false
  const proto = req.headers["x-forwarded-proto"]
  const first = (Array.isArray(proto) ? proto[0] : proto)?.split(",")[0]?.trim().toLowerCase()
  return first === "https"
}

const hostPattern = /^[a-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-f:.]+\](:\d{1,5})?$/i

const bearer = (req: express.Request): string | undefined => {
  const h = req.headers.authorization
  if (!h) return undefined
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h)
  return m ? m[1] : ""
}

/** The query string as Feathers clients send it, tokenised the way `qs` does. */
const parseQuery = (req: express.Request): Effect.Effect<Record<string, unknown>, InvalidInput> => {
  const url = req.originalUrl ?? req.url
  const i = url.indexOf("?")
  if (i < 0) return Effect.succeed({})
  const raw = url.slice(i + 1)
  // `qs` drops a `__proto__` key whatever its options, which would turn a filter into a full
  // scan: name it and refuse it like any other unknown field.
  if (/__proto__/i.test(raw) || /__proto__/i.test(safeDecode(raw))) {
    return Effect.fail(
      new InvalidInput({
        message: "Invalid query: __proto__ is not a field of this resource",
        // Not keyed by the name itself: an `errors` key `__proto__` would be lost on assignment.
        errors: { query: "__proto__ is not a field of this resource" }
      })
    )
  }
  // `plainObjects`: keys such as `constructor` or `toString` reach the query validator (and are
  // rejected there as unknown fields) instead of being dropped silently, which made a full scan.
  return Effect.succeed(qs.parse(raw, {
    depth: 8,
    arrayLimit: 1000,
    parameterLimit: 2000,
    allowPrototypes: false,
    plainObjects: true
  }))
}

const safeDecode = (s: string) => {
  try {
    return decodeURIComponent(s.replace(/\+/g, " "))
  } catch {
    return s
  }
}

/**
 * JSON nested deeper than this is refused with 400 before any use-case sees it: no resource
 * nests that deep, and formatting the validation error of such a value (Effect's
 * `formatUnknown` is recursive) overflowed the stack, which answered 500.
 */
const MAX_JSON_DEPTH = 64

const nestedTooDeep = (value: unknown): boolean => {
  const stack: Array<[unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!
    if (typeof v !== "object" || v === null) continue
    if (depth >= MAX_JSON_DEPTH) return true
    for (const child of Object.values(v)) stack.push([child, depth + 1])
  }
  return false
}

export const createApi = async (options: ApiOptions): Promise<Api> => {
  const runtime = makeRuntime(options)
  // Build the layer now: a broken database or configuration fails here, not on a request.
  await runtime.runtime()
  const services = options.resources ?? defaultResources
  const trustProxy = options.trustProxy === true
  const openapi = openApiDocument(services)

  /** Runs a use-case and writes its result or its error in the contract's shape. */
  const respond = (
    res: express.Response,
    effect: Effect.Effect<unknown, DomainError, AppServices>,
    status: number,
    requestId: string
  ) =>
    runtime.runPromiseExit(effect.pipe(Effect.annotateLogs({ requestId }))).then((exit) => {
      if (Exit.isSuccess(exit)) return send(res, status, exit.value)
      const failure = Cause.failureOption(exit.cause)
      if (failure._tag === "Some" && isDomainError(failure.value)) {
        const e = failure.value
        if (e._tag === "TooManyRequests") res.setHeader("Retry-After", String(e.retryAfterSeconds))
        const body = fromDomainError(e)
        return send(res, body.code, body)
      }
      runtime.runFork(Effect.logError("Request failed", exit.cause).pipe(Effect.annotateLogs({ requestId })))
      const reason = unavailableReason(Option.getOrUndefined(Cause.dieOption(exit.cause)))
      if (reason) {
        res.setHeader("Retry-After", "5")
        return sendError(res, 503, `Service unavailable: ${reason}`)
      }
      return sendError(res, 500, "An internal error occurred")
    })

  /** Authenticates, counts the request against `api_requests`, then runs the use-case. */
  const authed = (
    use: (principal: Principal, req: express.Request) => Effect.Effect<unknown, DomainError, AppServices>,
    status = 200
  ): Handler =>
  (req, res) => {
    // Relative to the v1 router: `req.baseUrl` carries the host app's mount prefix (`/api/v1`).
    const path = req.path
    const effect = Effect.gen(function*() {
      const principal = yield* authenticate(bearer(req))
      if (principal._tag === "Client" && !uncounted(path)) {
        yield* Effect.flatMap(ApiUsage, (usage) => usage.hit(principal.organizationId))
      }
      return yield* use(principal, req)
    })
    void respond(res, effect, status, res.locals.requestId as string)
  }

  const router = express.Router({ strict: false })
  const logRequests = ["All", "Trace", "Debug", "Info", undefined].includes(options.logLevel)

  router.use((req, res, next) => {
    const incoming = req.headers["x-request-id"]
    const requestId = typeof incoming === "string" && /^[\w.-]{1,128}$/.test(incoming) ? incoming : crypto.randomUUID()
    res.locals.requestId = requestId
    res.setHeader("X-Request-Id", requestId)
    if (logRequests) {
      const started = process.hrtime.bigint()
      res.on("finish", () => {
        // Path only: a query string may carry values the caller considers private.
        runtime.runFork(Effect.logInfo("request").pipe(Effect.annotateLogs({
          requestId,
          method: req.method,
          path: req.baseUrl + req.path,
          status: res.statusCode,
          durationMs: Number(process.hrtime.bigint() - started) / 1e6
        })))
      })
    }
    if (options.allowHttp !== true && !isSecure(req, trustProxy)) {
      const host = req.headers.host ?? ""
      if (!hostPattern.test(host)) return sendError(res, 400, "Invalid Host header")
      res.redirect(301, `https://${host}${req.originalUrl}`)
      return
    }
    next()
  })

  router.get("/openapi.json", (_req, res) => res.json(openapi))
  router.use("/docs", docsRouter())

  const v1 = express.Router({ strict: false })
  v1.use(express.json({ limit: options.bodyLimit ?? 1024 * 1024, type: ["application/json", "application/*+json"] }))
  v1.use((req, res, next) => {
    if (!nestedTooDeep(req.body)) return next()
    sendError(res, 400, "The request body is nested too deeply", {
      body: `must not be nested deeper than ${MAX_JSON_DEPTH} levels`
    })
  })

  v1.post("/sessions", (req, res) => {
    // The peer address, or the proxy's X-Forwarded-For when TRUST_PROXY says to believe it.
    const address = trustProxy ? req.ip : req.socket.remoteAddress
    void respond(res, createSession(req.body, address), 201, res.locals.requestId as string)
  })
  // No token: the invitation token itself is the credential. Answers with an email session.
  v1.post("/invitations/accept", (req, res) => {
    void respond(res, acceptInvitation(req.body), 201, res.locals.requestId as string)
  })

  // Actions on a delivery log: before the generic routes, which would read them as ids.
  v1.post("/webhooks/deliveries/replay", authed((p, req) => replayFailed(p, req.body)))
  v1.post("/webhooks/deliveries/:id/replay", authed((p, req) => replayDelivery(p, String(req.params.id))))

  // Notices and exports: actions that are not stored resources.
  v1.post("/widgets/notices/generators/sdk", authed((p, req) => generateSdkConfig(p, req.body), 201))
  v1.all("/widgets/notices/generators/sdk", (req, res) =>
    sendError(res, 405, `Method ${req.method} is not supported by widgets/notices/generators/sdk`))
  v1.post("/exports/execute", authed((p, req) => executeExport(p, req.body), 201))
  v1.all("/exports/execute", (req, res) => sendError(res, 405, `Method ${req.method} is not supported by exports/execute`))
  v1.get("/consents/events/:id/tcstring", authed((p, req) => tcStringOfEvent(p, String(req.params.id))))

  // Organization resources (issue 5): routes that are not generic, before the generic ones.
  // No bearer token: the integration's own token (`x-platform-authorization`) is the credential.
  v1.post("/platform-integrations/sessions", (req, res) => {
    const header = req.headers["x-platform-authorization"]
    const token = typeof header === "string" ? header.replace(/^Bearer\s+/i, "") : undefined
    void respond(res, createPlatformIntegrationSession(token, req.body), 201, res.locals.requestId as string)
  })
  v1.all("/platform-integrations/sessions", (req, res) =>
    sendError(res, 405, `Method ${req.method} is not supported by platform-integrations/sessions`))
  v1.get("/analytics/dashboards-urls", authed((p, req) => Effect.flatMap(parseQuery(req), (q) => findDashboardUrls(p, q))))
  v1.get("/languages", authed((p) => getLanguages(p)))
  v1.all("/languages", (req, res) => sendError(res, 405, `Method ${req.method} is not supported by languages`))

  // Every declared resource behind one route: a map from path to declaration, instead of a
  // route per method and resource that Express would test one by one on every request.
  const byPath = new Map(services.map((def) => [def.path, def]))
  const byOrganizationUserId = (p: Principal, req: express.Request, id: string, def: ResourceDef) =>
    Effect.flatMap(parseQuery(req), (q) => {
      // `?$by_organization_user_id=true`: the id is the organization's own user id.
      const by = q.$by_organization_user_id
      if (by === undefined || by === "false") return ResourceService.get(def, p, id)
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
      return getUserByOrganizationUserId(p, id)
    })
  const handlerFor = (def: ResourceDef, method: string, id: string | undefined): Handler | undefined => {
    const allowed = def.methods
    if (id === undefined) {
      if (method === "GET" && allowed.includes("find")) {
        return authed((p, req) => Effect.flatMap(parseQuery(req), (q) => ResourceService.find(def, p, q)))
      }
      if (method === "POST" && allowed.includes("create")) return authed((p, req) => ResourceService.create(def, p, req.body), 201)
      return undefined
    }
    if (method === "GET" && allowed.includes("get")) {
      return def.path === ConsentUsersResource.path
        ? authed((p, req) => byOrganizationUserId(p, req, id, def))
        : authed((p) => ResourceService.get(def, p, id))
    }
    if (method === "PUT" && allowed.includes("update")) return authed((p, req) => ResourceService.update(def, p, id, req.body))
    if (method === "PATCH" && allowed.includes("patch")) return authed((p, req) => ResourceService.patch(def, p, id, req.body))
    if (method === "DELETE" && allowed.includes("remove")) return authed((p) => ResourceService.remove(def, p, id))
    return undefined
  }
  v1.use((req, res, next) => {
    // Express matches paths case-insensitively and ignores a trailing slash: so does this.
    const trimmed = req.path.replace(/^\/+|\/+$/g, "")
    let def = byPath.get(trimmed.toLowerCase())
    let id: string | undefined
    if (!def) {
      const slash = trimmed.lastIndexOf("/")
      if (slash <= 0) return next()
      def = byPath.get(trimmed.slice(0, slash).toLowerCase())
      if (!def) return next()
      try {
        id = decodeURIComponent(trimmed.slice(slash + 1))
      } catch {
        return sendError(res, 400, "Invalid path: the id is not a valid URI component")
      }
    }
    const method = req.method === "HEAD" ? "GET" : req.method
    const handle = handlerFor(def, method, id)
    // A known service answers an unsupported method with 405, as Feathers does.
    if (!handle) return sendError(res, 405, `Method ${req.method} is not supported by ${def.path}`)
    handle(req, res)
  })
  v1.all("/sessions", (req, res) => sendError(res, 405, `Method ${req.method} is not supported by sessions`))

  v1.use((req, res) => sendError(res, 404, `Page not found: ${req.method} ${req.baseUrl}${req.path}`))

  // Body parser and other middleware errors: malformed JSON is the client's fault, never a 500.
  v1.use((err: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    const e = err as { type?: string; status?: number; message?: string }
    if (e?.type === "entity.too.large") return sendError(res, 413, "The request body is too large")
    if (e?.type === "entity.parse.failed") return sendError(res, 400, "The request body is not valid JSON", { body: "is not valid JSON" })
    if (e?.type === "encoding.unsupported" || e?.type === "charset.unsupported") {
      return sendError(res, 415, "Unsupported body encoding")
    }
    if (typeof e?.status === "number" && e.status >= 400 && e.status < 500) {
      return sendError(res, 400, e.message ?? "Bad request")
    }
    runtime.runFork(Effect.logError("Unhandled error", String(e?.message ?? err)))
    return sendError(res, 500, "An internal error occurred")
  })

  router.use("/v1", v1)

  return { router, runtime, openapi, dispose: () => runtime.dispose() }
}
