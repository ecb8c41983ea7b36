import type { ActionDef, AnySchema, DeclaredAction, DeclaredResource, DomainError, Method, Shape } from "@cmp/core"
import type * as Effect from "effect/Effect"
import type * as ManagedRuntime from "effect/ManagedRuntime"
import type * as Schema from "effect/Schema"
import type { Actor } from "./Actor.js"
import type { CursorOf, Found, FindQueryOf, SelectionOf } from "./FindQuery.js"
import type { OperatingMethods } from "./Operating.js"
import type { PlatformServices } from "./Platform.js"
import type { SubscriberMethods } from "./Subscribe.js"

/**
 * The types of the host API: how a list of declarations becomes a typed tree. A resource's path
 * names its place (`consents/events` is `consents.events`), its declaration its operations and
 * their types; an action sits at its `place` under its `name`. `Resources` and `Actions` are the
 * host's own declarations beside the registry's (none by default).
 */

// ---------------------------------------------------------------- options

export interface CallOptions {
  /** Who the call acts as: `cmp.asOrganization(id)` (gated like the organization's own key) or `cmp.asOperator()`. */
  readonly as: Actor
  /** The organization of a record whose id is chosen by clients (consent events and users), when the actor sees several. */
  readonly organizationId?: string | undefined
  /** View parameters (`{ regulation: "ccpa" }` for consent users). */
  readonly view?: Readonly<Record<string, string>> | undefined
}

/** The options of an open action (a credential exchange), which acts as no principal. */
export interface OpenCallOptions {
  /** The client's address: repeated failures from one address are slowed down. */
  readonly clientAddress?: string | undefined
  /** The credential of an action that takes its own (a platform integration's token). */
  readonly credential?: string | undefined
}

/** The options of a call in a scoped client: who it acts as is the client's. */
export type ScopedOptions = Omit<CallOptions, "as">

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

// ---------------------------------------------------------------- every resource

/** `texts-contents` is `textsContents`. */
type Camel<S extends string> = S extends `${infer Head}-${infer Tail}` ? `${Head}${Capitalize<Camel<Tail>>}` : S

/** A path as nested keys: `consents/events` is `{ consents: { events: Leaf } }`. */
type Nest<Path extends string, Leaf> = Path extends `${infer Head}/${infer Rest}` ? { readonly [K in Camel<Head>]: Nest<Rest, Leaf> }
  : { readonly [K in Camel<Path>]: Leaf }

type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never

/** Merges the intersected branches into one object type per level, down to the operations. */
type Flatten<T> = T extends (...args: never) => unknown ? T : { readonly [K in keyof T]: Flatten<T[K]> }

/** The declarations the host tree offers: those answered by the generic use-cases. */
type Offered<D> = Exclude<D, { readonly ownActions?: true }>

type Branch<D> = D extends { readonly path: infer Path extends string; readonly "~shape"?: infer S extends Shape | undefined }
  ? Nest<Path, ResourceOperations<NonNullable<S>>>
  : never

// ---------------------------------------------------------------- actions

/** An action's arguments, from its declaration: its path's id, its body, its query, then the options. */
type ActionArgs<A> = A extends ActionDef<string, string, infer Path, infer In, infer Q, infer Auth, unknown, unknown> ? [
    ...(Path extends `${string}:${string}` ? [id: string] : []),
    ...(In extends AnySchema ? [input: Schema.Schema.Type<In>] : []),
    ...(Q extends "find" ? [query: Readonly<Record<string, unknown>>] : []),
    ...(Auth extends "none" ? [options?: OpenCallOptions] : [options: CallOptions])
  ]
  : never

/** An action as an Effect: its arguments, its use-case's answer. */
type ActionEffect<A> = A extends ActionDef<string, string, string, AnySchema | undefined, "find" | "lookUp" | undefined, "bearer" | "none", infer Out, unknown>
  ? (...args: ActionArgs<A>) => Effect.Effect<Out, DomainError>
  : never

type ActionBranch<A> = A extends { readonly place: infer Place extends string; readonly name: infer Name extends string }
  ? Nest<Place, { readonly [K in Name]: ActionEffect<A> }>
  : never

// ---------------------------------------------------------------- the tree

/**
 * The resources and actions by their path (`consents/events` is `consents.events`), as Effects:
 * the registry's, and a host's own (`Resources`, `Actions`: unions of their declarations).
 */
export type PlatformEffects<Resources = never, Actions = never> = Flatten<
  UnionToIntersection<Branch<Offered<DeclaredResource | Resources>> | ActionBranch<DeclaredAction | Actions>>
>

/**
 * A tree of Effects as Promises: each operation resolves with its value or rejects with a
 * `PlatformError`. A find is generic (its answer follows its query), which inferring its
 * parameters would lose, so it is mapped as a whole.
 */
export type Promised<T> = {
  readonly [K in keyof T]: T[K] extends FindEffect<infer S, infer O> ? FindPromise<S, O>
    : T[K] extends (...args: infer P) => Effect.Effect<infer A, unknown, unknown> ? (...args: P) => Promise<A>
    : Promised<T[K]>
}

type ScopedArgs<P> = P extends readonly [...infer Head, CallOptions] ? [...Head, options?: ScopedOptions] : P

/** A tree of operations acting as one principal: their options are optional and name no `as` (a find stays generic). */
export type Scoped<T> = {
  readonly [K in keyof T]: T[K] extends FindEffect<infer S, [CallOptions]> ? FindEffect<S, [options?: ScopedOptions]>
    : T[K] extends (...args: infer P) => infer R ? (...args: ScopedArgs<P>) => R
    : Scoped<T[K]>
}

/** The operations of every resource acting as one organization, as `asOrganization(id)` does. */
export type OrganizationClient<Resources = never, Actions = never> = Promised<Scoped<PlatformEffects<Resources, Actions>>> & {
  /** The same operations as Effects. */
  readonly effect: Scoped<PlatformEffects<Resources, Actions>>
}

/** What the platform object holds beside its tree of operations. */
export interface PlatformMembers<Resources = never, Actions = never> extends SubscriberMethods, OperatingMethods {
  /** The same operations as Effects, failing with the domain errors, needing nothing more. */
  readonly effect: PlatformEffects<Resources, Actions>
  /** Acts as an organization's own client: its scope, its premium features, its count quotas. */
  readonly asOrganization: (organizationId: string) => Actor
  /** Every operation acting as the organization (`cmp.forOrganization(id).consents.events.create(…)`), with no `{ as }` to pass. */
  readonly forOrganization: (organizationId: string) => OrganizationClient<Resources, Actions>
  /** Acts as the operator: every organization, operator-only fields and actions, never gated. */
  readonly asOperator: () => Actor
  /** The Effect runtime of the platform's services, for hosts that call core use-cases directly. */
  readonly runtime: ManagedRuntime.ManagedRuntime<PlatformServices, unknown>
  /** Stops the dispatcher (calls in flight finish) and closes the store. */
  readonly dispose: () => Promise<void>
}

/**
 * The platform for a host that calls it in-process: one object made once, with a method per
 * operation of every resource (the registry's and the host's own), as Promises for plain
 * JavaScript and as Effects (`effect`) for Effect hosts.
 */
export type ConsentPlatformApi<Resources = never, Actions = never> =
  & Promised<PlatformEffects<Resources, Actions>>
  & PlatformMembers<Resources, Actions>
