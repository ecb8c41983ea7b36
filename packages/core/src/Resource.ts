import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { PremiumFeatureFlag, QuotaField } from "./Domain/Account.js"
import type { DomainError } from "./Domain/Errors.js"
import { type FieldInfo, fieldsOf } from "./Fields.js"
import type { Ids, IndexDef, Row, SecretHasher, Storage, TableDef, UnitOfWork } from "./Ports.js"
import type { Settings } from "./Settings.js"
import type { SecretBox } from "./Webhooks/Ports.js"
import type { Principal } from "./Principal.js"
import type { FindQuery } from "./Query.js"

export type Method = "find" | "get" | "create" | "update" | "patch" | "remove"

/** What the generic use-cases and hooks may require. */
export type CoreServices = Storage | UnitOfWork | Ids | SecretHasher | Settings | SecretBox

export type AnySchema = Schema.Schema<any, any, never>

/** The special behaviour of a resource, run inside the write's transaction. */
export interface Hooks {
  /** Narrows a find for the principal, after organization scope is applied. */
  readonly find?: (
    principal: Principal,
    query: FindQuery,
    params: Readonly<Record<string, unknown>>
  ) => Effect.Effect<FindQuery, DomainError, CoreServices>
  /** Whether the principal may see this row at all; an invisible row is a 404. */
  readonly visible?: (principal: Principal, row: Row) => boolean
  /** Completes a new row; `reveal` holds values shown once in the response (secrets). */
  readonly create?: (
    principal: Principal,
    row: Row,
    input: Row
  ) => Effect.Effect<{ readonly row: Row; readonly reveal?: Row }, DomainError, CoreServices>
  /** Runs after the insert, in its transaction; `prepared` is what `create` returned (with transient marks). */
  readonly afterCreate?: (
    principal: Principal,
    row: Row,
    prepared: Row
  ) => Effect.Effect<void, DomainError, CoreServices>
  /** Checks or completes a changed row (state machines, derived fields). */
  readonly update?: (
    principal: Principal,
    before: Row,
    after: Row,
    input: Row
  ) => Effect.Effect<Row, DomainError, CoreServices>
  readonly remove?: (principal: Principal, row: Row) => Effect.Effect<void, DomainError, CoreServices>
  /** Runs after an update or patch, in its transaction. */
  readonly afterUpdate?: (principal: Principal, before: Row, after: Row) => Effect.Effect<void, DomainError, CoreServices>
  /** Runs after a remove, in its transaction. */
  readonly afterRemove?: (principal: Principal, removed: Row) => Effect.Effect<void, DomainError, CoreServices>
  /** Runs once the write's transaction has committed, with its output (to drop a cached copy). */
  readonly afterCommit?: (output: Row) => Effect.Effect<void>
  /** Adds related data to the output of a `get` (a delivery's attempts). */
  readonly expand?: (principal: Principal, row: Row, output: Row) => Effect.Effect<Row, DomainError, CoreServices>
}

export interface ResourceOptions {
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
  /** Stored columns that are not part of the output (hashes, input-only fields). */
  readonly privateFields?: Readonly<Record<string, FieldInfo>>
  readonly unique?: ReadonlyArray<ReadonlyArray<string>>
  /** Secondary indexes (for the store and its schema contract). */
  readonly indexes?: ReadonlyArray<IndexDef>
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
  readonly ownerFrom?: (principal: Principal, input: Row) => Effect.Effect<string, DomainError, CoreServices>
  /** Normalizes a create body before validation (a domain name is trimmed and lower-cased). */
  readonly normalizeCreate?: (body: Readonly<Record<string, unknown>>) => Record<string, unknown>
  readonly hooks?: Hooks
}

export interface ResourceDef extends ResourceOptions {
  readonly tableDef: TableDef
  /** Fields of the output, for output-only detection and `$select`. */
  readonly outputFields: Readonly<Record<string, FieldInfo>>
  readonly queryFields: Readonly<Record<string, FieldInfo>>
  readonly createFields: ReadonlySet<string>
  readonly updateFields: ReadonlySet<string>
  readonly operatorFields: ReadonlySet<string>
  readonly operatorOnly: ReadonlyArray<Method>
  readonly hooks: Hooks
  readonly defaults: Row
}

const keys = (s: AnySchema | undefined): ReadonlySet<string> => new Set(s ? Object.keys(fieldsOf(s)) : [])

/** Declares a resource once: its schemas, columns, scope, methods and hooks. */
export const defineResource = (options: ResourceOptions): ResourceDef => {
  const outputFields = fieldsOf(options.output)
  const transient = new Set(options.transient ?? [])
  const columns: Record<string, FieldInfo> = {}
  for (const [k, v] of Object.entries(outputFields)) if (!transient.has(k)) columns[k] = v
  Object.assign(columns, options.privateFields ?? {})
  const queryFields: Record<string, FieldInfo> = {}
  for (const [k, v] of Object.entries(columns)) {
    if (Object.hasOwn(outputFields, k) || options.queryable?.includes(k)) queryFields[k] = v
  }
  return {
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
      defaultSort: "created_at" in columns ? [{ field: "created_at", direction: 1 }] : []
    }
  }
}

/** A table that is not a REST resource (persons, settings). */
export const defineTable = (
  table: string,
  fields: Readonly<Record<string, FieldInfo>>,
  options: {
    readonly unique?: ReadonlyArray<ReadonlyArray<string>>
    readonly indexes?: ReadonlyArray<IndexDef>
  } = {}
): TableDef => ({
  table,
  fields,
  key: ["id"],
  unique: options.unique ?? [],
  indexes: options.indexes ?? [],
  defaultSort: "created_at" in fields ? [{ field: "created_at", direction: 1 }] : []
})

export const field = {
  string: { kind: "string", nullable: false },
  optionalString: { kind: "string", nullable: true },
  timestamp: { kind: "timestamp", nullable: false },
  optionalTimestamp: { kind: "timestamp", nullable: true },
  number: { kind: "number", nullable: false },
  boolean: { kind: "boolean", nullable: false },
  json: { kind: "json", nullable: true }
} as const satisfies Record<string, FieldInfo>
