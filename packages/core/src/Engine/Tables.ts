import { type FieldInfo } from "./Fields.js"
import type { IndexDef, Relation, TableDef } from "./Ports.js"
import type { SortKey } from "./Query.js"
import { RowOf } from "./Shape.js"

/** A table that is not a REST resource (persons, settings). */
export const defineTable = <const F extends Readonly<Record<string, FieldInfo>>>(
  table: string,
  fields: F,
  options: {
    /** `["id"]` unless given (a counter keyed by its organization and period). */
    readonly key?: ReadonlyArray<string>
    readonly unique?: ReadonlyArray<ReadonlyArray<string>>
    readonly indexes?: ReadonlyArray<IndexDef>
    readonly references?: ReadonlyArray<Relation>
    /** `created_at` ascending unless given (attempts are read in the order they were made). */
    readonly defaultSort?: ReadonlyArray<SortKey>
  } = {}
): TableDef<RowOf<F>> => ({
  table,
  fields,
  key: options.key ?? ["id"],
  unique: options.unique ?? [],
  indexes: options.indexes ?? [],
  references: options.references ?? [],
  defaultSort: options.defaultSort ?? ("created_at" in fields ? [{ field: "created_at", direction: 1 }] : [])
})

export const field = {
  string: { kind: "string", nullable: false },
  optionalString: { kind: "string", nullable: true },
  timestamp: { kind: "timestamp", nullable: false },
  optionalTimestamp: { kind: "timestamp", nullable: true },
  number: { kind: "number", nullable: false },
  optionalNumber: { kind: "number", nullable: true },
  bigint: { kind: "number", nullable: false, storage: "bigint" },
  optionalReal: { kind: "number", nullable: true, storage: "real" },
  boolean: { kind: "boolean", nullable: false },
  optionalBoolean: { kind: "boolean", nullable: true },
  json: { kind: "json", nullable: true }
} as const satisfies Record<string, FieldInfo>

/** A JSON column whose value has a known type (a private column the output does not show). */
export interface JsonField<A> extends FieldInfo {
  readonly kind: "json"
  readonly nullable: false
  /** The value's type, for the compiler only. */
  readonly "~json"?: A
}

/** A NOT NULL JSON column holding an `A`. */
export const jsonField = <A>(): JsonField<A> => ({ kind: "json", nullable: false })
