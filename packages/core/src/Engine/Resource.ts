import type * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { PremiumFeatureFlag, QuotaField } from "../Domain/Account.js"
import type { DomainError } from "../Domain/Errors.js"
import { type FieldInfo, fieldsOf, neverNullFields } from "./Fields.js"
import type { IndexDef, Relation, Row, TableDef } from "./Ports.js"
import type { OperationMetric } from "./Metrics.js"
import type { ComputedFilters } from "./Query.js"
import type { Principal } from "./Principal.js"
import {
  GetBy,
  Method,
  EndUserAccess,
  CoreServices,
  AnySchema,
  Shape,
  ViewParamSchemas,
  AnyShape,
  ShapeOf
} from "./Shape.js"
import { Hooks } from "./Hooks.js"

/**
 * A count quota that is not a column of the organization's quotas (a host's resource): its name,
 * as the 403 names it, and how many rows an organization may have (none: no limit).
 */
export interface OwnQuota {
  readonly name: string
  readonly limit: number | ((organizationId: string) => Effect.Effect<number | undefined, never, CoreServices>)
}

/**
 * A count quota that is not a column of the organization's quotas (a host's resource): its name,
 * as the 403 names it, and how many rows an organization may have (none: no limit).
 */
export interface OwnQuota {
  readonly name: string
  readonly limit: number | ((organizationId: string) => Effect.Effect<number | undefined, never, CoreServices>)
}

/** The data of a declaration: schemas, columns, scope and rules, without behaviour. */
export interface ResourceData<
  O extends AnySchema = AnySchema,
  C extends AnySchema | undefined = AnySchema | undefined,
  U extends AnySchema | undefined = AnySchema | undefined,
  P extends Readonly<Record<string, FieldInfo>> = Readonly<Record<string, FieldInfo>>,
  T extends string = string,
  Path extends string = string,
  Own extends boolean = boolean,
  Q extends string = string,
  V extends ViewParamSchemas = ViewParamSchemas,
  Cur extends boolean = boolean,
  M extends Method = Method,
  F extends ComputedFilters = ComputedFilters
> {
  /** Human name used in messages ("API key"). */
  readonly name: string
  /** Service path under `/v1`; its literal type names the resource's place in the host API. */
  readonly path: Path
  /**
   * Its methods are answered by its own actions, not by the generic use-cases (a dashboard link
   * is signed per row), so the in-process host API offers no generic operations for it.
   */
  readonly ownActions?: Own
  readonly table: string
  readonly output: O
  readonly createInput?: C
  readonly updateInput?: U
  /** Extra input fields only the operator may send (output-only flags). */
  readonly operatorInput?: AnySchema
  readonly methods: ReadonlyArray<M>
  readonly operatorOnly?: ReadonlyArray<Method>
  /** Column naming the owning organization; `undefined` for an operator-wide registry. */
  readonly ownerField?: string | undefined
  /**
   * Rows stay when their organization is removed (the audit trail, which the operator still
   * reads): an `organization_id` owner field is then no reference that cascades.
   */
  readonly outlivesOwner?: boolean
  /**
   * Whether the generic writes record each change in the audit trail (`Engine/AuditTrail`): they
   * do unless the declaration says `false`, which consent records (the consent log is theirs) and
   * what is no configuration (runs, deliveries, links) say.
   */
  readonly audited?: boolean
  /** Output fields that are never stored (values shown once). */
  readonly transient?: ReadonlyArray<T>
  /**
   * Which answers show a credential (a token, a secret), so that no cache on the way may keep
   * them: `"create"` where one is shown once at creation, `"every"` where any answer may show one.
   */
  readonly revealsCredentials?: "create" | "every"
  /**
   * Stored columns that are not part of the output (hashes, input-only fields), or that are
   * stored more precisely than the output says (a `version` the output may omit is never NULL).
   */
  readonly privateFields?: P
  readonly unique?: ReadonlyArray<ReadonlyArray<string>>
  /** Secondary indexes (for the store and its schema contract). */
  readonly indexes?: ReadonlyArray<IndexDef>
  /**
   * Rows of other tables this one's rows name. An `organization_id` owner field is a reference
   * to the organization already (its rows go with it); list the others.
   */
  readonly references?: ReadonlyArray<Relation>
  /** Where ids are chosen by the client and unique only within their organization. */
  readonly keyedByOrganization?: boolean
  readonly defaults?: Row
  /** A count quota checked on create: one of the organization's quotas, or one of its own (a host's resource). */
  readonly quota?: QuotaField | OwnQuota
  /**
   * Whether a request to it counts against the organization's `api_requests` quota: it does
   * unless the declaration says `false`, for every method.
   */
  readonly countsApiRequests?: boolean
  /** What answering a method adds to the metrics beyond the request count (a consent write's outcome). */
  readonly metrics?: Partial<Record<Method, OperationMetric>>
  /** Bytes a create or write body may have, where more than the API's default is needed (files sent inline). */
  readonly bodyLimit?: number
  /** The premium feature an organization needs to use this service at all. */
  readonly premiumFeature?: PremiumFeatureFlag
  /**
   * The methods an end user's credential may use besides access tokens: a public key records
   * consent events, a consent token reads its own user and events and records its own. Nothing
   * undeclared is open to them; the hooks narrow what they see and write. A write by an end
   * user is gated by the hooks (which premium feature applies depends on who the user is), not
   * by `premiumFeature`; its reads are gated as anyone's.
   */
  readonly endUsers?: EndUserAccess
  /** Private columns that may still be used in a find query (`user_id` of events). */
  readonly queryable?: ReadonlyArray<Q>
  /**
   * Query parameters that choose how each output looks, not which rows match (`regulation` of
   * consent users): equality only, validated by their schema, passed to `present`. A create
   * or patch body naming one also chooses the view of its answer.
   */
  readonly viewParams?: V
  /** Query parameters the service reads itself (`$by_organization_user_id`). */
  readonly passthrough?: ReadonlyArray<string>
  /**
   * Filters on a value the service computes, not a column (a consent user's `consent_state`):
   * validated by the query parser, turned into conditions by the `find` hook, which must then
   * be declared too.
   */
  readonly filters?: F
  /**
   * Find also pages by cursor (`$cursor`): keyset paging in `created_at` then key order, for
   * tables a client walks end to end while rows keep arriving (consent events and users).
   */
  readonly cursorPaging?: Cur
  /**
   * Request headers that set a field of a create body, whatever the body says: a browser's
   * `Sec-GPC: 1` is the person's signal, which a page's script cannot take back. Hosts calling
   * the service without HTTP set the field in the body.
   */
  readonly headerFields?: ReadonlyArray<HeaderField>
  /** Normalizes a create body before validation (a domain name is trimmed and lower-cased). */
  readonly normalizeCreate?: (body: Readonly<Record<string, unknown>>) => Record<string, unknown>
  /** Normalizes the id of an item route the same way, so a name reads as it was created. */
  readonly normalizeId?: (id: string) => string
  /**
   * Refuses a create or write body before its schema reads it (field path → what is wrong), so
   * a value refused here is never stored nor quoted back in a schema's message.
   */
  readonly screenBody?: (body: Readonly<Record<string, unknown>>) => Readonly<Record<string, string>>
}

/** A request header that sets a create body's field when it has a given value. */
export interface HeaderField {
  /** The header's name as documented (`Sec-GPC`); matched in any case. */
  readonly header: string
  /** The header's value (trimmed) that sets the field. */
  readonly when: string
  readonly field: string
  readonly value: unknown
  /** What the header means, for the OpenAPI document. */
  readonly description: string
}

/**
 * The behaviour of a declaration. `ports` lists the ports its hooks need beyond the core
 * services (an SSO connection checks certificates): they become the declaration's type, so a
 * platform composed without one does not compile, and a hook using a port not listed does not
 * either.
 */
export interface Behaviour<S extends Shape, R, Carry> {
  readonly ports?: ReadonlyArray<Context.Tag<R, any>>
  /**
   * Derives the owning organization of a create from the input instead of reading the owner
   * field (a cookie belongs to its property's organization); fails when the caller may not use it.
   */
  ownerFrom?(principal: Principal, input: S["create"]): Effect.Effect<string, DomainError, CoreServices | NoInfer<R>>
  readonly hooks?: Hooks<S, NoInfer<R>, Carry>
  /** Another key a `get` may name its record by (its parameter is listed in `passthrough`). */
  readonly getBy?: GetBy<S["output"], NoInfer<R>>
}

export interface ResourceDef<S extends Shape = AnyShape, R = never, Carry = never, Path extends string = string, Own extends boolean = boolean>
  extends ResourceData<AnySchema, AnySchema | undefined, AnySchema | undefined, Readonly<Record<string, FieldInfo>>, string, Path, Own>
{
  /** The resource's types, for the compiler only. */
  readonly "~shape"?: S
  readonly tableDef: TableDef<S["stored"]>
  /** Fields of the output, for output-only detection and `$select`. */
  readonly outputFields: Readonly<Record<string, FieldInfo>>
  /** `outputFields` as pairs, made once: every answer of every row walks them. */
  readonly outputEntries: ReadonlyArray<readonly [string, FieldInfo]>
  /** Output fields that are absent rather than null (`neverNullFields`). */
  readonly outputNeverNull: ReadonlySet<string>
  readonly queryFields: Readonly<Record<string, FieldInfo>>
  readonly createFields: ReadonlySet<string>
  readonly updateFields: ReadonlySet<string>
  readonly operatorFields: ReadonlySet<string>
  readonly operatorOnly: ReadonlyArray<Method>
  readonly defaults: Row
  ownerFrom?(principal: Principal, input: S["create"]): Effect.Effect<string, DomainError, CoreServices | R>
  readonly hooks: Hooks<S, R, Carry>
  readonly getBy?: GetBy<S["output"], R> | undefined
}

/**
 * A resource's data, declared before its behaviour: for hooks that need the declaration's own
 * table (a consent user's hooks read users), which the declaration cannot name while it is
 * being written.
 */
export interface Declaration<S extends Shape, Path extends string = string, Own extends boolean = boolean> extends Declared<S, Path, Own> {
  readonly with: <R = never, Carry = never>(behaviour: Behaviour<S, R, Carry>) => ResourceDef<S, R, Carry, Path, Own>
}

/** A declaration's data, with or without its behaviour. */
export type Declared<S extends Shape, Path extends string = string, Own extends boolean = boolean> = Omit<
  ResourceDef<S, any, any, Path, Own>,
  "hooks" | "ownerFrom" | "getBy"
>

/** The stored row of a resource or declaration. */
export type StoredRow<D extends { readonly "~shape"?: Shape | undefined }> = NonNullable<D["~shape"]>["stored"]

/** The output of a resource or declaration. */
export type OutputOf<D extends { readonly "~shape"?: Shape | undefined }> = NonNullable<D["~shape"]>["output"]

const keys = (s: AnySchema | undefined): ReadonlySet<string> => new Set(s ? Object.keys(fieldsOf(s)) : [])

const declare = <S extends Shape, Path extends string, Own extends boolean>(
  options: ResourceData<AnySchema, AnySchema | undefined, AnySchema | undefined, Readonly<Record<string, FieldInfo>>, string, Path, Own>
): Declaration<S, Path, Own> => {
  const outputFields = fieldsOf(options.output)
  const transient = new Set<string>(options.transient ?? [])
  const columns: Record<string, FieldInfo> = {}
  for (const [k, v] of Object.entries(outputFields)) if (!transient.has(k)) columns[k] = v
  Object.assign(columns, options.privateFields ?? {})
  const queryFields: Record<string, FieldInfo> = {}
  for (const [k, v] of Object.entries(columns)) {
    if (Object.hasOwn(outputFields, k) || options.queryable?.includes(k)) queryFields[k] = v
  }
  const tableDef: TableDef<S["stored"]> = {
    table: options.table,
    fields: columns,
    key: options.keyedByOrganization ? ["organization_id", "id"] : ["id"],
    unique: options.unique ?? [],
    indexes: options.indexes ?? [],
    references: [
      ...(options.ownerField === "organization_id" && options.outlivesOwner !== true ? [ownedByOrganization] : []),
      ...(options.references ?? [])
    ],
    defaultSort: "created_at" in columns ? [{ field: "created_at", direction: 1 }] : []
  }
  if (options.cursorPaging && columns.created_at?.nullable !== false) {
    throw new Error(`${options.path}: cursor paging orders by created_at, which must be a non-null column`)
  }
  const data: Declared<S, Path, Own> = {
    ...options,
    operatorOnly: options.operatorOnly ?? [],
    defaults: options.defaults ?? {},
    outputFields,
    outputEntries: Object.entries(outputFields),
    outputNeverNull: neverNullFields(options.output),
    queryFields,
    createFields: keys(options.createInput),
    updateFields: keys(options.updateInput),
    operatorFields: keys(options.operatorInput),
    tableDef
  }
  return {
    ...data,
    with: <R, Carry>(behaviour: Behaviour<S, R, Carry>): ResourceDef<S, R, Carry, Path, Own> => ({
      ...data,
      ownerFrom: behaviour.ownerFrom,
      hooks: behaviour.hooks ?? {},
      getBy: behaviour.getBy
    })
  }
}

/** Declares a resource's data now and its behaviour later (`.with(…)`); see `Declaration`. */
export const declareResource = <
  O extends AnySchema,
  C extends AnySchema | undefined = undefined,
  U extends AnySchema | undefined = undefined,
  const P extends Readonly<Record<string, FieldInfo>> = {},
  const T extends string = never,
  const Path extends string = string,
  const Own extends boolean = false,
  const Q extends string = never,
  const V extends ViewParamSchemas = {},
  const Cur extends boolean = false,
  const M extends Method = Method,
  const F extends ComputedFilters = {}
>(options: ResourceData<O, C, U, P, T, Path, Own, Q, V, Cur, M, F>): Declaration<ShapeOf<O, C, U, P, T, Q, V, Cur, M, F>, Path, Own> =>
  declare(options)

/**
 * Declares a resource once: its schemas, columns, scope, methods and behaviour. Its types (the
 * stored row, the output, the inputs) come from the schemas and private columns, and flow into
 * the hooks and the generic use-cases. A hook that needs the declaration's own table declares
 * the data first and adds the behaviour with `.with(…)`.
 */
export const defineResource = <
  O extends AnySchema,
  C extends AnySchema | undefined = undefined,
  U extends AnySchema | undefined = undefined,
  const P extends Readonly<Record<string, FieldInfo>> = {},
  const T extends string = never,
  R = never,
  Carry = never,
  const Path extends string = string,
  const Own extends boolean = false,
  const Q extends string = never,
  const V extends ViewParamSchemas = {},
  const Cur extends boolean = false,
  const M extends Method = Method,
  const F extends ComputedFilters = {}
>(
  options: ResourceData<O, C, U, P, T, Path, Own, Q, V, Cur, M, F> & Behaviour<ShapeOf<O, C, U, P, T, Q, V, Cur, M, F>, R, Carry>
): ResourceDef<ShapeOf<O, C, U, P, T, Q, V, Cur, M, F>, Exclude<R, CoreServices>, Carry, Path, Own> => {
  const { hooks, ownerFrom, ports: _ports, ...data } = options
  // The core services are always there: a declaration's type names only the ports beyond them.
  return declare<ShapeOf<O, C, U, P, T, Q, V, Cur, M, F>, Path, Own>(data).with({ ownerFrom, hooks } as Behaviour<
    ShapeOf<O, C, U, P, T, Q, V, Cur, M, F>,
    Exclude<R, CoreServices>,
    Carry
  >)
}

/**
 * The ports of a declaration that needs several: a tag is invariant in its service, so a list
 * of different tags is typed by the declaration's `R`, which `.with<R>` names.
 */
export const portList = <R>(...tags: ReadonlyArray<Context.Tag<any, any>>): ReadonlyArray<Context.Tag<R, any>> => tags

/** Rows owned by an organization are removed with it. */
export const ownedByOrganization: Relation = { field: "organization_id", table: "organizations", onDelete: "cascade" }

/** A declaration of any resource, whatever its ports and carried data. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyResource = ResourceDef<AnyShape, any, any>

/** The ports a resource's hooks need beyond the core services. */
export type PortsOf<D> = D extends ResourceDef<any, infer R, any> ? R : never

/**
 * The generic operations a declaration offers: its methods, less a create without a create
 * schema and an update or patch without an update schema. The routes, the OpenAPI document and
 * the host API all offer exactly these.
 */
export const operationsOf = (def: Pick<ResourceData, "methods" | "createInput" | "updateInput">): ReadonlyArray<Method> =>
  def.methods.filter((m) =>
    m === "create" ? def.createInput !== undefined : m === "update" || m === "patch" ? def.updateInput !== undefined : true
  )
