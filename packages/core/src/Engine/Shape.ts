import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { DomainError } from "../Domain/Errors.js"
import { type FieldInfo } from "./Fields.js"
import type { ComputedFilters } from "./Query.js"
import type { Hmac, Ids, OutboxSignal, Row, SecretHasher, Storage, UnitOfWork } from "./Ports.js"
import type { Relations } from "./Relations.js"
import type { Settings } from "./Settings.js"
import type { SecretBox } from "./Secrets.js"
import type { OrganizationLimits } from "./OrganizationLimits.js"
import type { ChangeFeed } from "./ChangeFeed.js"
import type { EndUserCredential, Principal } from "./Principal.js"

/** Which of the principal's organizations an id is looked up in, and the rest of the request's query. */
export interface LookUp {
  readonly organizationId?: string | undefined
  /** The rest of the request's query: the resource's view parameters are read from it. */
  readonly query?: Readonly<Record<string, unknown>> | undefined
}

/**
 * A `get` whose id may name a record another way: `?<param>=true` makes it a key of the
 * organization's own (`$by_organization_user_id`: a consent user by its `organization_user_id`).
 */
export interface GetBy<Out, R> {
  readonly param: string
  /** What `?<param>=true` makes the id, for the OpenAPI document. */
  readonly description?: string | undefined
  readonly get: (principal: Principal, id: string, at: LookUp) => Effect.Effect<Out, DomainError, CoreServices | R>
}

/** The view parameters of a request, validated (`{ regulation: "ccpa" }`). */
export type View = Readonly<Record<string, string>>

export type Method = "find" | "get" | "create" | "update" | "patch" | "remove"

/**
 * What an end user's credential is told on an operation that does not take it, declared where
 * the credential is taken (the message names what it may do instead).
 */
export type EndUserRefusals = Partial<Record<EndUserCredential, string>>

/** Which end-user credentials may use each method, and what a public key's create answers. */
export interface EndUserAccess {
  readonly methods: Partial<Record<Method, ReadonlyArray<EndUserCredential>>>
  /** The output fields a create through the public key answers with (all when unset). */
  readonly publicAnswer?: ReadonlyArray<string>
  /** What these credentials are told elsewhere; where several served declarations say it, the first one's. */
  readonly elsewhere?: EndUserRefusals
}

/** What the generic use-cases and hooks may require. */
export type CoreServices =
  | Storage
  | UnitOfWork
  | Ids
  | SecretHasher
  | Hmac
  | Settings
  | SecretBox
  | Relations
  | OrganizationLimits
  | OutboxSignal
  | ChangeFeed

export type AnySchema = Schema.Schema<any, any, never>

/** The value a stored column holds, from its `FieldInfo` (JSON columns are opaque here). */
export type ColumnValue<F extends FieldInfo> =
  | (F extends { readonly "~json"?: infer A } ? (unknown extends A ? unknown : A)
    : F["kind"] extends "string" | "timestamp" ? string
    : F["kind"] extends "number" ? number
    : F["kind"] extends "boolean" ? boolean
    : unknown)
  | (F["nullable"] extends true ? null : never)

/** A row of columns declared by `FieldInfo`s (a table that is not a resource, private columns). */
export type RowOf<F extends Readonly<Record<string, FieldInfo>>> = { [K in keyof F]: ColumnValue<F[K]> }

type Simplify<A> = { [K in keyof A]: A[K] } & {}

/** An output kept as a row: every field a column, an optional one holding `null` when unset. */
export type StoredFields<Out> = {
  [K in keyof Out]-?: undefined extends Out[K] ? Exclude<Out[K], undefined> | null : Out[K]
}

/**
 * The types of a resource, kept from its declaration: the stored row (output fields as columns,
 * minus values shown once, plus private columns), the output, and the create and update inputs.
 */
export interface Shape {
  readonly stored: Row
  readonly output: Row
  readonly create: Row
  readonly update: Row
  /** What a find may name beyond the output's columns, for the compiler only (a typed find query). */
  readonly find?: FindShape
  /** The methods it declares, for the compiler only (the host API offers those). */
  readonly methods?: Method
}

/** Queryable private columns, view parameters, cursor paging and computed filters of a declaration, as types. */
export interface FindShape {
  readonly queryable: string
  readonly view: Readonly<Record<string, string>>
  readonly cursor: boolean
  /** Each computed filter's name → the values it takes. */
  readonly filters?: Readonly<Record<string, string>>
}

/** The view parameters a declaration lists (`viewParams`), each as the type its schema decodes to. */
export type ViewParamSchemas = Readonly<Record<string, Schema.Schema<string, string, never>>>

export interface AnyShape extends Shape {
  readonly stored: any
  readonly output: any
  readonly create: any
  readonly update: any
}

type TypeOr<S, Else> = S extends Schema.Schema<infer A, any, never> ? A : Else

export type ShapeOf<
  O extends AnySchema,
  C,
  U,
  P extends Readonly<Record<string, FieldInfo>>,
  T extends string,
  Q extends string = never,
  V extends ViewParamSchemas = {},
  Cur extends boolean = false,
  M extends Method = Method,
  F extends ComputedFilters = {}
> = {
  readonly stored: Simplify<Omit<StoredFields<Schema.Schema.Type<O>>, T | keyof P> & RowOf<P>>
  readonly output: Schema.Schema.Type<O>
  readonly create: TypeOr<C, never>
  readonly update: TypeOr<U, never>
  readonly find: {
    readonly queryable: Q
    readonly view: { readonly [K in keyof V]: Schema.Schema.Type<V[K]> }
    readonly cursor: Cur
    readonly filters: { readonly [K in keyof F]: F[K]["values"][number] }
  }
  readonly methods: M
}
