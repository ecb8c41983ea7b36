import {
  type ActionDef,
  actions,
  type AnyAction,
  type AnySchema,
  type DeclaredAction,
  type DeclaredResource,
  type DomainError,
  type ErrorBody,
  fromDomainError,
  fromStoreUnavailable,
  generalErrorBody,
  isDomainError,
  isStoreUnavailable,
  operationsOf,
  type Method,
  type Principal,
  type ResourceDef,
  resources,
  ResourceService,
  Settings,
  type Shape,
  takesId
} from "@cmp/core"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import type { CursorOf, Found, FindQueryOf, SelectionOf } from "./FindQuery.js"
import type { PlatformOptions } from "./Options.js"
import { layer, type PlatformServices } from "./Platform.js"
import { operatingMethods, type OperatingMethods } from "./Operating.js"
import { subscriberMethods, type SubscriberMethods } from "./Subscribe.js"

/**
 * The platform for a host that calls it in-process: one object made once, with a method per
 * operation of every resource, as Promises for plain JavaScript and as Effects for Effect hosts.
 * Each call acts as a principal the host names (`asOrganization(id)`, `asOperator()`); it goes
 * through the same use-cases as an HTTP request (scope, validation, premium features, count
 * quotas, webhooks), but it is not an API request: `api_requests` does not count it.
 */

// ---------------------------------------------------------------- errors

/** A failure of a call, with the contract's `code`, `name`, `className` and `errors`. */
export class PlatformError extends Error implements ErrorBody {
  readonly code: number
  readonly className: string
  readonly errors: Record<string, string>
  constructor(body: ErrorBody, options?: { readonly cause?: unknown }) {
    super(body.message, options)
    this.name = body.name
    this.code = body.code
    this.className = body.className
    this.errors = body.errors
  }
}
/** 400: the input is invalid (`errors` names the fields). */
export class BadRequest extends PlatformError {}
/** 401: a credential was missing, malformed or expired. */
export class NotAuthenticated extends PlatformError {}
/** 403: not allowed: another organization, an operator-only action, a premium feature off, a count quota reached. */
export class Forbidden extends PlatformError {}
/** 404: no such record among those the principal may see. */
export class NotFound extends PlatformError {}
/** 409: a duplicate unique value, or a stale `version`. */
export class Conflict extends PlatformError {}
/** 429: a rate limit; `retryAfterSeconds` tells when to come back. */
export class TooManyRequests extends PlatformError {
  constructor(body: ErrorBody, readonly retryAfterSeconds: number) {
    super(body)
  }
}
/** 503: the store cannot serve for now (try again). */
export class Unavailable extends PlatformError {}
/** 500: a bug; `cause` holds what failed. */
export class GeneralError extends PlatformError {}

const classes = { 400: BadRequest, 401: NotAuthenticated, 403: Forbidden, 404: NotFound, 409: Conflict } as const

/** The exported error class of a domain failure. */
export const toPlatformError = (e: DomainError): PlatformError => {
  const body = fromDomainError(e)
  if (e._tag === "TooManyRequests") return new TooManyRequests(body, e.retryAfterSeconds)
  const Class = classes[body.code as keyof typeof classes] ?? PlatformError
  return new Class(body, { cause: e })
}

const fromCause = (cause: Cause.Cause<unknown>): PlatformError => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure) && isDomainError(failure.value)) return toPlatformError(failure.value)
  const defect = Cause.dieOption(cause)
  if (Option.isSome(defect) && isStoreUnavailable(defect.value)) {
    return new Unavailable(fromStoreUnavailable(defect.value), { cause: defect.value })
  }
  return new GeneralError(generalErrorBody(), { cause: Cause.squash(cause) })
}

// ---------------------------------------------------------------- principals

declare const ActorBrand: unique symbol

/** Who a call acts as; made by `asOrganization` or `asOperator`, never by hand. */
export interface Actor {
  readonly [ActorBrand]: true
  readonly principal: Principal
}

const actor = (principal: Principal) => ({ principal }) as Actor

/** The key id a host's calls carry where a change names who made it. */
export const HOST_KEY_ID = "in-process"

export interface CallOptions {
  /** Who the call acts as: `cmp.asOrganization(id)` (gated like the organization's own key) or `cmp.asOperator()`. */
  readonly as: Actor
  /** The organization of a record whose id is chosen by clients (consent events and users), when the actor sees several. */
  readonly organizationId?: string | undefined
  /** View parameters (`{ regulation: "ccpa" }` for consent users). */
  readonly view?: Readonly<Record<string, string>> | undefined
}

export type { CursorPage, Page } from "./FindQuery.js"

// ---------------------------------------------------------------- one resource

type CreateOf<S extends Shape> = S["create"]
type UpdateOf<S extends Shape> = S["update"]

/**
 * A find of one resource, typed by its declaration (`FindQueryOf`): `$select` narrows the
 * outputs, `$cursor` answers a cursor page. `Options`: the arguments after the query.
 */
export interface FindEffect<S extends Shape, Options extends ReadonlyArray<unknown> = [options: CallOptions]> {
  <const Sel extends SelectionOf<S> = undefined, Cur extends CursorOf<S> = undefined>(
    query: FindQueryOf<S, Sel, Cur>,
    ...options: Options
  ): Effect.Effect<Found<S, Sel, Cur>, DomainError>
}

/** The same find as a Promise, rejecting with a `PlatformError`. */
export interface FindPromise<S extends Shape, Options extends ReadonlyArray<unknown> = [options: CallOptions]> {
  <const Sel extends SelectionOf<S> = undefined, Cur extends CursorOf<S> = undefined>(
    query: FindQueryOf<S, Sel, Cur>,
    ...options: Options
  ): Promise<Found<S, Sel, Cur>>
}

/** The operations of one resource as Effects (failing with the domain errors). */
export interface ResourceEffects<S extends Shape> {
  readonly find: FindEffect<S>
  readonly get: (id: string, options: CallOptions) => Effect.Effect<S["output"], DomainError>
  readonly create: (input: CreateOf<S>, options: CallOptions) => Effect.Effect<S["output"], DomainError>
  readonly update: (id: string, input: UpdateOf<S>, options: CallOptions) => Effect.Effect<S["output"], DomainError>
  readonly patch: (id: string, input: Partial<UpdateOf<S>> & { readonly version?: number }, options: CallOptions) => Effect.Effect<S["output"], DomainError>
  readonly remove: (id: string, options: CallOptions) => Effect.Effect<S["output"], DomainError>
}

/**
 * The operations a resource offers: its declared methods, less a create without a create schema
 * and an update or patch without an update schema (what `operationsOf` keeps at run time).
 */
type OfferedMethods<S extends Shape> = Exclude<
  S extends { readonly methods: infer M extends Method } ? M : Method,
  ([S["create"]] extends [never] ? "create" : never) | ([S["update"]] extends [never] ? "update" | "patch" : never)
>

/** The operations of one resource that its declaration offers, as Effects. */
export type ResourceOperations<S extends Shape> = Pick<ResourceEffects<S>, OfferedMethods<S>>

/** The same operations as Promises, rejecting with a `PlatformError`. */
export type ResourceClient<S extends Shape> = Promised<ResourceEffects<S>>

/** How a call's options are completed before it runs (a scoped client's, which may be left out, get its `as`). */
type Bind = (options: CallOptions) => CallOptions

const lookUp = (o: CallOptions): ResourceService.LookUp => ({ organizationId: o.organizationId, query: o.view })

const effectsOf = <S extends Shape>(def: ResourceDef<S, any, any>, provide: Provide, bind: Bind): ResourceEffects<S> => {
  // Every declaration of the registry needs at most the platform's services.
  const registered: ResourceDef<S, PlatformServices, any> = def
  return {
    // The answer follows the query by construction: the engine pages by cursor when `$cursor` is
    // given, and keeps what `$select` names.
    find: ((query: Readonly<Record<string, unknown>>, given: CallOptions) => {
      const o = bind(given)
      return provide(ResourceService.findAsRequested(registered, o.as.principal, { ...o.view, ...query }))
    }) as FindEffect<S>,
    get: (id, given) => {
      const o = bind(given)
      return provide(ResourceService.get(registered, o.as.principal, id, lookUp(o)))
    },
    create: (input, given) => {
      const o = bind(given)
      return provide(ResourceService.create(registered, o.as.principal, input, { query: o.view }))
    },
    update: (id, input, given) => {
      const o = bind(given)
      return provide(ResourceService.update(registered, o.as.principal, id, input, lookUp(o)))
    },
    patch: (id, input, given) => {
      const o = bind(given)
      return provide(ResourceService.patch(registered, o.as.principal, id, input, lookUp(o)))
    },
    remove: (id, given) => {
      const o = bind(given)
      return provide(ResourceService.remove(registered, o.as.principal, id, lookUp(o)))
    }
  }
}

/** Runs a use-case with the platform's services (the runtime's, built once). */
type Provide = <A>(effect: Effect.Effect<A, DomainError, PlatformServices>) => Effect.Effect<A, DomainError>

// ---------------------------------------------------------------- every resource

/** `texts-contents` is `textsContents`. */
type Camel<S extends string> = S extends `${infer Head}-${infer Tail}` ? `${Head}${Capitalize<Camel<Tail>>}` : S

/** A path as nested keys: `consents/events` is `{ consents: { events: Leaf } }`. */
type Nest<Path extends string, Leaf> = Path extends `${infer Head}/${infer Rest}` ? { readonly [K in Camel<Head>]: Nest<Rest, Leaf> }
  : { readonly [K in Camel<Path>]: Leaf }

type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never

/** Merges the intersected branches into one object type per level, down to the operations. */
type Flatten<T> = T extends (...args: ReadonlyArray<any>) => unknown ? T : { readonly [K in keyof T]: Flatten<T[K]> }

/** The declarations the host offers: those answered by the generic use-cases. */
type HostResource = Exclude<DeclaredResource, { readonly ownActions?: true }>

type Branch<D> = D extends { readonly path: infer Path extends string; readonly "~shape"?: infer S extends Shape | undefined }
  ? Nest<Path, ResourceOperations<NonNullable<S>>>
  : never

// ---------------------------------------------------------------- actions

/** The options of an open action (a credential exchange), which acts as no principal. */
export interface OpenCallOptions {
  /** The client's address: repeated failures from one address are slowed down. */
  readonly clientAddress?: string | undefined
  /** The credential of an action that takes its own (a platform integration's token). */
  readonly credential?: string | undefined
}

/** An action's arguments, from its declaration: its path's id, its body, its query, then the options. */
type ActionArgs<A> = A extends ActionDef<any, any, infer Path, infer In, infer Q, infer Auth, any, any> ? [
    ...(Path extends `${string}:${string}` ? [id: string] : []),
    ...(In extends AnySchema ? [input: Schema.Schema.Type<In>] : []),
    ...(Q extends "find" ? [query: Readonly<Record<string, unknown>>] : []),
    ...(Auth extends "none" ? [options?: OpenCallOptions] : [options: CallOptions])
  ]
  : never

/** An action as an Effect: its arguments, its use-case's answer. */
type ActionEffect<A> = A extends ActionDef<any, any, any, any, any, any, infer Out, any>
  ? (...args: ActionArgs<A>) => Effect.Effect<Out, DomainError>
  : never

type ActionBranch<A> = A extends { readonly place: infer Place extends string; readonly name: infer Name extends string }
  ? Nest<Place, { readonly [K in Name]: ActionEffect<A> }>
  : never

const actionEffect = (a: AnyAction, provide: Provide, bind: Bind) => (...args: ReadonlyArray<unknown>) => {
  let i = 0
  const id = takesId(a) ? String(args[i++]) : ""
  const body = a.body !== undefined ? args[i++] : undefined
  const query = a.query === "find" ? (args[i++] as Readonly<Record<string, unknown>> | undefined) ?? {} : {}
  const given = (args[i] ?? {}) as CallOptions & OpenCallOptions
  const o = bind(given)
  const request = { id, body, query: { ...o.view, ...query }, at: lookUp(o), address: given.clientAddress, credential: given.credential }
  // An open action acts for no one: its use-case reads its credential from the body or the options.
  return provide(a.auth === "none" ? a.run(undefined, request) : a.run(o.as.principal, request))
}

/** The resources and actions by their path (`consents/events` is `consents.events`), as Effects. */
export type PlatformEffects = Flatten<UnionToIntersection<Branch<HostResource> | ActionBranch<DeclaredAction>>>

const camel = (segment: string): string => segment.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase())

/** The keys of a resource in the host tree: its path's segments in camelCase. */
const hostKeys = (path: string): ReadonlyArray<string> => path.split("/").map(camel)

/** Whether the host tree offers a declaration's generic operations. */
const isHostResource = (def: { readonly ownActions?: boolean | undefined }): boolean => def.ownActions !== true

const effectsTree = (provide: Provide, bind: Bind): PlatformEffects => {
  const tree: Record<string, Record<string, unknown>> = {}
  for (const def of resources) {
    if (!isHostResource(def)) continue
    const keys = hostKeys(def.path)
    let node = tree
    for (const key of keys.slice(0, -1)) node = (node[key] ??= {}) as Record<string, Record<string, unknown>>
    const last = keys[keys.length - 1]!
    // A resource that is also a parent (`webhooks`, `webhooks/deliveries`) has both.
    const all: Readonly<Record<string, unknown>> = { ...effectsOf(def, provide, bind) }
    const offered = Object.fromEntries(operationsOf(def).map((m) => [m, all[m]]))
    node[last] = { ...node[last], ...offered }
  }
  for (const a of actions) {
    const keys = hostKeys(a.place)
    let node = tree
    for (const key of keys) node = (node[key] ??= {}) as Record<string, Record<string, unknown>>
    ;(node as Record<string, unknown>)[a.name] = actionEffect(a, provide, bind)
  }
  // The shape follows the registry's types by construction: the loops above mirror `PlatformEffects`.
  return tree as unknown as PlatformEffects
}

/**
 * A tree of Effects as Promises: each operation resolves with its value or rejects with a
 * `PlatformError`. A find is generic (its answer follows its query), which inferring its
 * parameters would lose, so it is mapped as a whole.
 */
export type Promised<T> = {
  readonly [K in keyof T]: T[K] extends FindEffect<infer S, infer O> ? FindPromise<S, O>
    : T[K] extends (...args: infer P) => Effect.Effect<infer A, any, any> ? (...args: P) => Promise<A>
    : Promised<T[K]>
}

const promiseTree = <T extends object>(tree: T, run: Run): Promised<T> => {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(tree)) {
    out[k] = typeof v === "function"
      ? (...args: ReadonlyArray<unknown>) => run((v as (...a: ReadonlyArray<unknown>) => Effect.Effect<unknown, DomainError>)(...args))
      : promiseTree(v as object, run)
  }
  // The shape follows T by construction: the loop above mirrors it key by key.
  return out as Promised<T>
}

type Run = <A>(effect: Effect.Effect<A, DomainError>) => Promise<A>

// ---------------------------------------------------------------- one organization's client

/** The options of a call in a scoped client: who it acts as is the client's. */
export type ScopedOptions = Omit<CallOptions, "as">

type ScopedArgs<P> = P extends readonly [...infer Head, CallOptions] ? [...Head, options?: ScopedOptions] : P

/** A tree of operations acting as one principal: their options are optional and name no `as` (a find stays generic). */
export type Scoped<T> = {
  readonly [K in keyof T]: T[K] extends FindEffect<infer S, [CallOptions]> ? FindEffect<S, [options?: ScopedOptions]>
    : T[K] extends (...args: infer P) => infer R ? (...args: ScopedArgs<P>) => R
    : Scoped<T[K]>
}

/** The operations of every resource acting as one organization, as `asOrganization(id)` does. */
export interface OrganizationClient extends Promised<Scoped<PlatformEffects>> {
  /** The same operations as Effects. */
  readonly effect: Scoped<PlatformEffects>
}

// ---------------------------------------------------------------- the platform

export interface ConsentPlatformApi extends Promised<PlatformEffects>, SubscriberMethods, OperatingMethods {
  /** The same operations as Effects, failing with the domain errors, needing nothing more. */
  readonly effect: PlatformEffects
  /** Acts as an organization's own client: its scope, its premium features, its count quotas. */
  readonly asOrganization: (organizationId: string) => Actor
  /** Every operation acting as the organization (`cmp.forOrganization(id).consents.events.create(…)`), with no `{ as }` to pass. */
  readonly forOrganization: (organizationId: string) => OrganizationClient
  /** Acts as the operator: every organization, operator-only fields and actions, never gated. */
  readonly asOperator: () => Actor
  /** The Effect runtime of the platform's services, for hosts that call core use-cases directly. */
  readonly runtime: ManagedRuntime.ManagedRuntime<PlatformServices, unknown>
  /** Stops the dispatcher (calls in flight finish) and closes the store. */
  readonly dispose: () => Promise<void>
}

/**
 * Makes the platform: migrates the store, creates the operator organization (and the `admin`
 * key when given), and, unless `dispatcher: false`, delivers webhooks from this process.
 */
export const createPlatform = async (options: PlatformOptions): Promise<ConsentPlatformApi> => {
  const runtime = ManagedRuntime.make(layer({ ...options, dispatcher: options.dispatcher ?? true }))
  const settings = await runtime.runPromise(Settings)
  const provide: Provide = (effect) => Effect.flatMap(runtime.runtimeEffect, (rt) => Effect.provide(effect, rt)) as never
  const run: Run = (effect) =>
    runtime.runPromiseExit(effect).then((exit) => (Exit.isSuccess(exit) ? exit.value : Promise.reject(fromCause(exit.cause))))
  const effects = effectsTree(provide, (o) => o)
  const asOrganization = (organizationId: string) => actor({ _tag: "Client", keyId: HOST_KEY_ID, organizationId, via: "in-process" })
  const forOrganization = (organizationId: string): OrganizationClient => {
    const as = asOrganization(organizationId)
    // The options may be left out since the bind completes them; its `as` comes last, so an `as`
    // a plain-JavaScript caller passes cannot leave the organization.
    const scoped = effectsTree(provide, (given) => ({ ...given, as })) as unknown as Scoped<PlatformEffects>
    return { ...promiseTree(scoped, run), effect: scoped }
  }
  return {
    ...promiseTree(effects, run),
    ...operatingMethods(runtime),
    effect: effects,
    asOrganization,
    forOrganization,
    asOperator: () => actor({ _tag: "Operator", keyId: HOST_KEY_ID, organizationId: settings.operatorOrganizationId, via: "in-process" }),
    runtime,
    ...(await subscriberMethods(runtime, (effect) => run(provide(effect)))),
    dispose: () => runtime.dispose()
  }
}

