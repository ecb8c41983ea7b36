import {
  type ActionRequest,
  type ActionTarget,
  type AnyAction,
  type DomainError,
  type EndUserCredential,
  InvalidInput,
  type Method,
  type OperationMetric,
  operationsOf,
  type PlatformServices,
  type Principal,
  type ServedResource,
  ResourceService
} from "@cmp/core"
import * as Effect from "effect/Effect"
import { type ApiRequest, header } from "./Message.js"
import { parseQuery } from "./Query.js"

/**
 * The routes of `/v1`: the generic methods of every declared resource, and every declared action
 * (sessions, replays, generators, exports, TC strings, dashboards, languages), both from core's
 * registry.
 */

export type Use = Effect.Effect<unknown, DomainError, PlatformServices>

/** What a route sees of its request. */
export interface Context {
  readonly request: ApiRequest
  readonly params: ReadonlyArray<string>
  readonly rawQuery: string
  readonly body: unknown
  readonly address: string | undefined
}

/** The one stored object a request works on, named by its path or its body (an action's `target`). */
export type Target = ActionTarget

interface RouteData {
  readonly method: string
  /** Lower-case path segments after `/v1`; `:` is a parameter. */
  readonly path: ReadonlyArray<string>
  readonly body: boolean
  /** Bytes its body may have, when not the API's default. */
  readonly bodyLimit?: number | undefined
  readonly status: number
  /** Its answers show a credential (a token, a secret): `Cache-Control: no-store`. */
  readonly noStore: boolean
  /** Its successful answers may be cached this many seconds (`Cache-Control: public, max-age`). */
  readonly maxAge?: number | undefined
  /** The object it works on, whose organization a member's request is counted against. */
  readonly target?: ((context: Context) => Target | undefined) | undefined
  /**
   * Whether `?organization_id=` chooses the organization it acts in (a find's filter, a look-up
   * by an id that is unique per organization only). Actions whose object or body gives the
   * organization ignore the query: it changes neither their scope nor where they count.
   */
  readonly queryNamesOrganization: boolean
  /** Whether a request counts against `api_requests` (its declaration's `countsApiRequests`). */
  readonly countsApiRequests: boolean
  /** What its answer adds to the metrics beyond the request count (its declaration's). */
  readonly metric?: OperationMetric | undefined
}

/** A route called with an access token, or an end user's credential it takes. */
export interface BearerRoute extends RouteData {
  readonly auth: "bearer"
  /** The end users' credentials it takes besides access tokens (a public key, a consent token). */
  readonly endUsers: ReadonlyArray<EndUserCredential>
  readonly run: (context: Context, principal: Principal) => Use
}

/** A credential exchange: no principal, its credential is in its body or its header. */
export interface OpenRoute extends RouteData {
  readonly auth: "none"
  readonly run: (context: Context) => Use
  /**
   * An open route whose credential is in a header: checks it before the body is read, and
   * answers what to run with the body then (its action's `admit`).
   */
  readonly admit?: ((context: Omit<Context, "body">) => Effect.Effect<(body: unknown) => Use, DomainError, PlatformServices>) | undefined
}

export type Route = BearerRoute | OpenRoute

interface RouteOptions {
  readonly body?: boolean
  readonly bodyLimit?: number | undefined
  readonly status?: number
  readonly noStore?: boolean
  readonly maxAge?: number | undefined
  readonly target?: Route["target"]
  readonly queryNamesOrganization?: boolean
  readonly countsApiRequests?: boolean | undefined
  readonly metric?: OperationMetric | undefined
}

const routeData = (method: string, path: string, options: RouteOptions): RouteData => ({
  method,
  path: path.split("/").filter(Boolean),
  body: options.body ?? (method === "POST" || method === "PUT" || method === "PATCH"),
  bodyLimit: options.bodyLimit,
  status: options.status ?? 200,
  noStore: options.noStore ?? false,
  maxAge: options.maxAge,
  target: options.target,
  queryNamesOrganization: options.queryNamesOrganization ?? true,
  countsApiRequests: options.countsApiRequests ?? true,
  metric: options.metric
})

const withQuery = (context: Context, use: (query: Record<string, unknown>) => Use): Use =>
  Effect.flatMap(parseQuery(context.rawQuery), use)

/** `?organization_id=` of a look-up by id: which of the principal's organizations is meant. */
const lookUpOf = (q: Record<string, unknown>): Effect.Effect<ResourceService.LookUp, InvalidInput> => {
  const organizationId = q.organization_id
  if (organizationId === undefined) return Effect.succeed({ query: q })
  if (typeof organizationId !== "string" || organizationId === "") {
    return Effect.fail(new InvalidInput({
      message: "Invalid query: organization_id must be one organization id",
      errors: { organization_id: "must be one organization id" }
    }))
  }
  return Effect.succeed({ organizationId, query: q })
}

/** A route on one record: its query may name the organization (`?organization_id=`). */
const withLookUp = (context: Context, use: (at: ResourceService.LookUp, query: Record<string, unknown>) => Use): Use =>
  withQuery(context, (q) => Effect.flatMap(lookUpOf(q), (at) => use(at, q)))

/** The credential of an action authenticated by its own header. */
const credentialOf = (a: AnyAction, c: Omit<Context, "body">) =>
  a.credentialHeader === undefined ? undefined : header(c.request.headers, a.credentialHeader)?.replace(/^Bearer\s+/i, "")

/** An action's request, from what its route saw: its query read the way the action declares. */
const requestOf = (a: AnyAction, c: Context, use: (request: ActionRequest) => Use): Use => {
  const base = { id: c.params[0] ?? "", body: c.body, address: c.address, credential: credentialOf(a, c) }
  if (a.query === "find") return withQuery(c, (query) => use({ ...base, query, at: {} }))
  if (a.query === "lookUp") return withLookUp(c, (at, query) => use({ ...base, query, at }))
  return use({ ...base, query: {}, at: {} })
}

/** The route of a declared action. */
export const actionRoute = (a: AnyAction): Route => {
  const { target } = a
  const data = routeData(a.method, a.path.replace(/:[A-Za-z_]+/g, ":"), {
    body: a.body !== undefined,
    status: a.status,
    noStore: a.revealsCredentials === true,
    maxAge: a.cacheSeconds,
    target: target === undefined ? undefined : (c) => target({ id: c.params[0] ?? "", body: c.body }),
    queryNamesOrganization: a.queryNamesOrganization ?? true,
    countsApiRequests: a.countsApiRequests,
    metric: a.metric
  })
  if (a.auth === "bearer") {
    return { ...data, auth: "bearer", endUsers: a.endUsers?.credentials ?? [], run: (c, p) => requestOf(a, c, (request) => a.run(p, request)) }
  }
  const { admit } = a
  return {
    ...data,
    auth: "none",
    run: (c) => requestOf(a, c, (request) => a.run(undefined, request)),
    // An admitted action reads no query: its credential and address are all it is given.
    admit: admit === undefined
      ? undefined
      : (c) => admit({ id: c.params[0] ?? "", query: {}, at: {}, address: c.address, credential: credentialOf(a, c) })
  }
}

/** The parameters of a path the action's path matches, or undefined. */
const paramsOf = (r: Route, segments: ReadonlyArray<string>): Array<string> | undefined => {
  if (r.path.length !== segments.length) return undefined
  const params: Array<string> = []
  for (let i = 0; i < r.path.length; i++) {
    if (r.path[i] === ":") params.push(segments[i]!)
    else if (r.path[i] !== segments[i]!.toLowerCase()) return undefined
  }
  return params
}

/** The action route of a path and method, with the path's parameters. */
export const matchRoute = (
  actions: ReadonlyArray<Route>,
  segments: ReadonlyArray<string>,
  method: string
): { route: Route; params: Array<string> } | undefined => {
  for (const r of actions) {
    if (r.method !== method) continue
    const params = paramsOf(r, segments)
    if (params) return { route: r, params }
  }
  return undefined
}

/** The methods the actions answer on a path (for the `Allow` of a 405); GET answers HEAD too. */
export const actionMethods = (actions: ReadonlyArray<Route>, segments: ReadonlyArray<string>): Array<string> =>
  actions.filter((r) => paramsOf(r, segments) !== undefined).flatMap((r) => (r.method === "GET" ? ["GET", "HEAD"] : [r.method]))

/** The methods of an action's path that an end user's credential may use (what a CORS preflight allows). */
export const endUserActionMethods = (actions: ReadonlyArray<Route>, segments: ReadonlyArray<string>): Array<string> =>
  actions.filter((r) => r.auth === "bearer" && r.endUsers.length > 0 && paramsOf(r, segments) !== undefined).map((r) => r.method)

/** The methods of a path that an end user's credential may use (what a CORS preflight allows). */
export const endUserMethodsOf = (def: ServedResource, withId: boolean): Array<string> => {
  const open = def.endUsers?.methods ?? {}
  const has = (m: Method) => (open[m]?.length ?? 0) > 0 && operationsOf(def).includes(m)
  return withId ? (has("get") ? ["GET"] : []) : [...(has("find") ? ["GET"] : []), ...(has("create") ? ["POST"] : [])]
}

export const methodsOf = (def: ServedResource, withId: boolean): Array<string> => {
  const m = operationsOf(def)
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

/** A create body with the fields its request's headers set (`Sec-GPC: 1` sets `gpc`). */
const withHeaderFields = (def: ServedResource, c: Context): unknown => {
  const fields = def.headerFields
  if (fields === undefined || typeof c.body !== "object" || c.body === null || Array.isArray(c.body)) return c.body
  let body = c.body as Readonly<Record<string, unknown>>
  for (const f of fields) {
    if (header(c.request.headers, f.header.toLowerCase())?.trim() === f.when) body = { ...body, [f.field]: f.value }
  }
  return body
}

/** The route of a generic method, made once per resource, method and whether an id is named. */
const makeResourceRoute = (def: ServedResource, method: string, byId: boolean): BearerRoute | undefined => {
  const m = operationsOf(def)
  const credentials = def.revealsCredentials
  const verbs: Record<string, Method> = byId ? { GET: "get", PUT: "update", PATCH: "patch", DELETE: "remove" } : { GET: "find", POST: "create" }
  // The id is the request's one parameter.
  const idOf = (c: Context) => c.params[0]!
  const r = (verb: string, run: BearerRoute["run"], status = 200): BearerRoute => ({
    ...routeData(verb, def.path, {
      status,
      bodyLimit: def.bodyLimit,
      noStore: credentials === "every" || (credentials === "create" && !byId && verb === "POST"),
      target: byId ? (c) => ({ def, id: idOf(c) }) : undefined,
      countsApiRequests: def.countsApiRequests,
      metric: def.metrics?.[verbs[verb]!]
    }),
    auth: "bearer",
    endUsers: def.endUsers?.methods[verbs[verb]!] ?? [],
    run
  })
  if (!byId) {
    if (method === "GET" && m.includes("find")) {
      return r("GET", (c, p) => withQuery(c, (q) => ResourceService.findAsRequested(def, p, q)))
    }
    if (method === "POST" && m.includes("create")) {
      return r("POST", (c, p) => withQuery(c, (query) => ResourceService.create(def, p, withHeaderFields(def, c), { query })), 201)
    }
    return undefined
  }
  if (method === "GET" && m.includes("get")) {
    return r("GET", (c, p) => withLookUp(c, (at) => ResourceService.getAsRequested(def, p, idOf(c), at)))
  }
  if (method === "PUT" && m.includes("update")) {
    return r("PUT", (c, p) => withLookUp(c, (at) => ResourceService.update(def, p, idOf(c), c.body, at)))
  }
  if (method === "PATCH" && m.includes("patch")) {
    return r("PATCH", (c, p) => withLookUp(c, (at) => ResourceService.patch(def, p, idOf(c), c.body, at)))
  }
  if (method === "DELETE" && m.includes("remove")) {
    return r("DELETE", (c, p) => withLookUp(c, (at) => ResourceService.remove(def, p, idOf(c), at)))
  }
  return undefined
}

const resourceRoutes = new WeakMap<ServedResource, Map<string, BearerRoute | undefined>>()

/**
 * The generic method of a resource, or undefined when the resource does not have it. Its run
 * takes the id (when `byId`) as the request's one parameter. Made once: routing a request builds
 * nothing.
 */
export const resourceRoute = (def: ServedResource, method: string, byId: boolean): BearerRoute | undefined => {
  let made = resourceRoutes.get(def)
  if (made === undefined) resourceRoutes.set(def, made = new Map())
  const key = byId ? `${method} :id` : method
  if (made.has(key)) return made.get(key)
  const route = makeResourceRoute(def, method, byId)
  made.set(key, route)
  return route
}
