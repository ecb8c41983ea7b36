import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { PremiumFeatureFlag, QuotaField } from "./Domain/Account.js"
import type { DomainError } from "./Domain/Errors.js"
import { type FieldInfo, fieldsOf } from "./Fields.js"
import type { Ids, IndexDef, Relation, Row, SecretHasher, Storage, TableDef, UnitOfWork } from "./Ports.js"
import type { Relations } from "./Relations.js"
import type { Settings } from "./Settings.js"
import type { OutboxSignal, SecretBox } from "./Webhooks/Ports.js"
import type { FeatureCache } from "./FeatureCache.js"
import type { Principal } from "./Principal.js"
import type { FindQuery } from "./Query.js"

export type Method = "find" | "get" | "create" | "update" | "patch" | "remove"

/** What the generic use-cases and hooks may require. */
export type CoreServices =
  | Storage
  | UnitOfWork
  | Ids
  | SecretHasher
  | Settings
  | SecretBox
  | Relations
  | FeatureCache
  | OutboxSignal

export type AnySchema = Schema.Schema<any, any, never>

/** What a `create` hook hands on: the row to insert, values shown once, data for `afterCreate`. */
export interface Prepared<Carry = never> {
  readonly row: Row
  readonly reveal?: Row
  readonly carry?: Carry
}

/** The special behaviour of a resource, run inside the write's transaction. */
export interface Hooks<R = never, Carry = never> {
  /** Narrows a find for the principal, after organization scope is applied. */
  find?(
    principal: Principal,
    query: FindQuery,
    params: Readonly<Record<string, unknown>>
  ): Effect.Effect<FindQuery, DomainError, CoreServices | R>
  /** Whether the principal may see this row at all; an invisible row is a 404. */
  visible?(principal: Principal, row: Row): boolean
  /**
   * Completes a new row; `reveal` holds values shown once in the response (secrets), `carry`
   * what `afterCreate` needs of the preparation (the user an event found or made).
   */
  create?(
    principal: Principal,
    row: Row,
    input: Row
  ): Effect.Effect<Prepared<Carry>, DomainError, CoreServices | R>
  /** Runs after the insert, in its transaction, with what `create` carried over. */
  afterCreate?(
    principal: Principal,
    row: Row,
    carry: Carry | undefined
  ): Effect.Effect<void, DomainError, CoreServices | R>
  /** Checks or completes a changed row (state machines, derived fields). */
  update?(
    principal: Principal,
    before: Row,
    after: Row,
    input: Row
  ): Effect.Effect<Row, DomainError, CoreServices | R>
  remove?(principal: Principal, row: Row): Effect.Effect<void, DomainError, CoreServices | R>
  /** Runs after an update or patch, in its transaction. */
  afterUpdate?(principal: Principal, before: Row, after: Row): Effect.Effect<void, DomainError, CoreServices | R>
  /** Runs after a remove, in its transaction. */
  afterRemove?(principal: Principal, removed: Row): Effect.Effect<void, DomainError, CoreServices | R>
  /** Runs once the write's transaction has committed, with its output (to drop a cached copy). */
  afterCommit?(output: Row): Effect.Effect<void, never, R>
  /** Adds related data to the output of a `get` (a delivery's attempts). */
  expand?(principal: Principal, row: Row, output: Row): Effect.Effect<Row, DomainError, CoreServices | R>
}

/**
 * `R`: the ports the resource's hooks need beyond the core services (an SSO connection checks
 * certificates). It is part of the declaration's type, so composing a platform that does not
 * provide one fails to compile. `Carry`: what its `create` hook hands to `afterCreate`.
 */
export interface ResourceOptions<R = never, Carry = never> {
  /** Human name used in messages ("API key"). */
  readonly name: string
  /** Service path under `/v1`. */
  readonly path: string
  readonly table: string
  readonly output: AnySchema
  readonly createInput?: AnySchema
  readonly updateInput?: AnySchema
  /** Extra input fields only the operator may send (output-only flags). */
  readonly operatorInput?: AnySchema
  readonly methods: ReadonlyArray<Method>
  readonly operatorOnly?: ReadonlyArray<Method>
  /** Column naming the owning organization; `undefined` for an operator-wide registry. */
  readonly ownerField?: string | undefined
  /** Output fields that are never stored (values shown once). */
  readonly transient?: ReadonlyArray<string>
  /**
   * Stored columns that are not part of the output (hashes, input-only fields), or that are
   * stored more precisely than the output says (a `version` the output may omit is never NULL).
   */
  readonly privateFields?: Readonly<Record<string, FieldInfo>>
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
  /** A count quota checked on create. */
  readonly quota?: QuotaField
  /** The premium feature an organization needs to use this service at all. */
  readonly premiumFeature?: PremiumFeatureFlag
  /** Private columns that may still be used in a find query (`user_id` of events). */
  readonly queryable?: ReadonlyArray<string>
  /** Query parameters the service reads itself (`$by_organization_user_id`). */
  readonly passthrough?: ReadonlyArray<string>
  /**
   * Derives the owning organization of a create from the input instead of reading the owner
   * field (a cookie belongs to its property's organization); fails when the caller may not use it.
   */
  ownerFrom?(principal: Principal, input: Row): Effect.Effect<string, DomainError, CoreServices | R>
  /** Normalizes a create body before validation (a domain name is trimmed and lower-cased). */
  readonly normalizeCreate?: (body: Readonly<Record<string, unknown>>) => Record<string, unknown>
  readonly hooks?: Hooks<R, Carry>
}

export interface ResourceDef<R = never, Carry = never> extends ResourceOptions<R, Carry> {
  readonly tableDef: TableDef
  /** Fields of the output, for output-only detection and `$select`. */
  readonly outputFields: Readonly<Record<string, FieldInfo>>
  readonly queryFields: Readonly<Record<string, FieldInfo>>
  readonly createFields: ReadonlySet<string>
  readonly updateFields: ReadonlySet<string>
  readonly operatorFields: ReadonlySet<string>
  readonly operatorOnly: ReadonlyArray<Method>
  readonly hooks: Hooks<R, Carry>
  readonly defaults: Row
}

const keys = (s: AnySchema | undefined): ReadonlySet<string> => new Set(s ? Object.keys(fieldsOf(s)) : [])

/** Declares a resource once: its schemas, columns, scope, methods and hooks. */
export const defineResource = <R = never, Carry = never>(
  options: ResourceOptions<R, Carry>
): ResourceDef<Exclude<R, CoreServices>, Carry> => {
  const outputFields = fieldsOf(options.output)
  const transient = new Set(options.transient ?? [])
  const columns: Record<string, FieldInfo> = {}
  for (const [k, v] of Object.entries(outputFields)) if (!transient.has(k)) columns[k] = v
  Object.assign(columns, options.privateFields ?? {})
  const queryFields: Record<string, FieldInfo> = {}
  for (const [k, v] of Object.entries(columns)) {
    if (Object.hasOwn(outputFields, k) || options.queryable?.includes(k)) queryFields[k] = v
  }
  const def: ResourceDef<R, Carry> = {
    ...options,
    operatorOnly: options.operatorOnly ?? [],
    hooks: options.hooks ?? {},
    defaults: options.defaults ?? {},
    outputFields,
    queryFields,
    createFields: keys(options.createInput),
    updateFields: keys(options.updateInput),
    operatorFields: keys(options.operatorInput),
    tableDef: {
      table: options.table,
      fields: columns,
      key: options.keyedByOrganization ? ["organization_id", "id"] : ["id"],
      unique: options.unique ?? [],
      indexes: options.indexes ?? [],
      references: [
        ...(options.ownerField === "organization_id" ? [ownedByOrganization] : []),
        ...(options.references ?? [])
      ],
      defaultSort: "created_at" in columns ? [{ field: "created_at", direction: 1 }] : []
    }
  }
  // The core services are always there: a declaration's type names only the ports beyond them.
  return def as ResourceDef<Exclude<R, CoreServices>, Carry>
}

/** Rows owned by an organization are removed with it. */
export const ownedByOrganization: Relation = { field: "organization_id", table: "organizations", onDelete: "cascade" }

/** A table that is not a REST resource (persons, settings). */
export const defineTable = (
  table: string,
  fields: Readonly<Record<string, FieldInfo>>,
  options: {
    /** `["id"]` unless given (a counter keyed by its organization and period). */
    readonly key?: ReadonlyArray<string>
    readonly unique?: ReadonlyArray<ReadonlyArray<string>>
    readonly indexes?: ReadonlyArray<IndexDef>
    readonly references?: ReadonlyArray<Relation>
  } = {}
): TableDef => ({
  table,
  fields,
  key: options.key ?? ["id"],
  unique: options.unique ?? [],
  indexes: options.indexes ?? [],
  references: options.references ?? [],
  defaultSort: "created_at" in fields ? [{ field: "created_at", direction: 1 }] : []
})

export const field = {
  string: { kind: "string", nullable: false },
  optionalString: { kind: "string", nullable: true },
  timestamp: { kind: "timestamp", nullable: false },
  optionalTimestamp: { kind: "timestamp", nullable: true },
  number: { kind: "number", nullable: false },
  bigint: { kind: "number", nullable: false, storage: "bigint" },
  optionalReal: { kind: "number", nullable: true, storage: "real" },
  boolean: { kind: "boolean", nullable: false },
  json: { kind: "json", nullable: true }
} as const satisfies Record<string, FieldInfo>

/** A declaration of any resource, whatever its ports and carried data. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyResource = ResourceDef<any, any>

/** The ports a resource's hooks need beyond the core services. */
export type PortsOf<D> = D extends ResourceDef<infer R, any> ? R : never
