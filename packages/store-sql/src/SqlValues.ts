import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import { Conflict, daysIn, type FieldInfo, type Row, type TableDef } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Unavailable from "./Unavailable.js"

/**
 * How a value crosses between a declared field and a column, on SQLite and PostgreSQL. The
 * dialects differ in how booleans, JSON and timestamps come back, which `decodeValue` absorbs;
 * every port over `SqlClient` (repository, delivery queue) reads and writes rows through it.
 */

export type Dialect = "sqlite" | "pg"

export const encodeValue = (dialect: Dialect, info: FieldInfo | undefined, v: unknown): unknown => {
  if (v === undefined || v === null) return null
  switch (info?.kind) {
    case "boolean":
      return dialect === "sqlite" ? (v ? 1 : 0) : Boolean(v)
    case "json":
      return JSON.stringify(v)
    case "timestamp": {
      // One canonical form (UTC, milliseconds): SQLite stores and compares timestamps as text,
      // so `+02:00` or a missing `.000` would otherwise compare by spelling, not by instant.
      if (v instanceof Date) return v.toISOString()
      // The form every write's own clock gives: already its instant's spelling (a tenth of the
      // parse and print below, several times per consent event).
      if (typeof v === "string" && canonicalInRange(v)) return v
      const ms = typeof v === "string" ? Date.parse(v) : Number.NaN
      return Number.isNaN(ms) ? v : new Date(ms).toISOString()
    }
    default:
      return v
  }
}

const canonicalIso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

/** The canonical form with its month, hours, minutes and seconds in range, and a day from 01 to 31. */
const canonicalShape = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/

const digits = (s: string, from: number, count: number) => {
  let n = 0
  for (let i = from; i < from + count; i++) n = n * 10 + s.charCodeAt(i) - 48
  return n
}

/**
 * The canonical form with every part in range, its day one its month has: `Date.parse` and
 * `toISOString` give it back unchanged. The 30th of February, the 31st of April or 24:00 parse
 * as another day, so they are not in it. (Until the days past the 28th were checked here, every
 * timestamp of the last days of a month took the parse and print.)
 */
const canonicalInRange = (v: string): boolean => {
  if (!canonicalShape.test(v)) return false
  const day = digits(v, 8, 2)
  return day <= 28 || day <= daysIn(digits(v, 0, 4), digits(v, 5, 2) - 1)
}

export const decodeValue = (dialect: Dialect, info: FieldInfo, v: unknown): unknown => {
  if (v === null || v === undefined) return null
  switch (info.kind) {
    case "boolean":
      return v === true || v === 1 || v === "1" || v === "t" || v === "true"
    case "json":
      // SQLite keeps JSON as text; PostgreSQL's JSONB comes back already decoded, where a
      // string is a JSON string value (`"[1]"`), not JSON text to parse again.
      return dialect === "sqlite" && typeof v === "string" ? JSON.parse(v) : v
    case "timestamp":
      if (v instanceof Date) return v.toISOString()
      // SQLite hands back the canonical form it was given: no need to parse it again.
      return typeof v === "string" && canonicalIso.test(v) ? v : new Date(String(v)).toISOString()
    case "number":
      return typeof v === "number" ? v : Number(v)
    case "string":
      return String(v)
    case "bytes":
      // A Buffer from either driver: handed on as the bytes it views, without a copy.
      return v instanceof Uint8Array ? v : new Uint8Array(v as ArrayBuffer)
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
const INT32 = 2 ** 31

/**
 * PostgreSQL: a value, as `encodeValue` wrote it, as its column stores it and `decodeValue`
 * would read it back; undefined where only the database can tell (a number an integer column
 * would round, text it would refuse or change, bytes). A NULL in a column declared not null is
 * left to the database to refuse.
 */
export const storedValue = (info: FieldInfo, v: unknown, dialect: Dialect): unknown => {
  if (v === null || v === undefined) return info.nullable ? null : undefined
  switch (info.kind) {
    case "boolean":
      // SQLite keeps a boolean as the 1 or 0 it was encoded to.
      if (dialect === "sqlite") return v === 1 ? true : v === 0 ? false : undefined
      return typeof v === "boolean" ? v : undefined
    case "json":
      // JSONB keeps the value, not its text: key order and spacing are not kept, which no
      // reader of a row depends on (the consent log digests its canonical form).
      return typeof v === "string" ? JSON.parse(v) : undefined
    case "timestamp":
      return typeof v === "string" && canonicalIso.test(v) ? v : undefined
    case "number":
      if (typeof v !== "number") return undefined
      if (info.storage === "real") return Number.isFinite(v) ? v : undefined
      return Number.isSafeInteger(v) && (info.storage === "bigint" || (v >= -INT32 && v < INT32)) ? v : undefined
    case "string":
      return typeof v === "string" && !v.includes("\u0000") && !LONE_SURROGATE.test(v) ? v : undefined
    case "bytes":
      return undefined
  }
}

/** A row read by a statement of its own, every declared field decoded (the repository decodes the columns it selects). */
export const decodeRow = (dialect: Dialect, fields: Readonly<Record<string, FieldInfo>>, raw: Record<string, unknown>): Row => {
  const out: Row = {}
  for (const [k, info] of Object.entries(fields)) out[k] = decodeValue(dialect, info, raw[k])
  return out
}

const uniqueColumns = (error: SqlError): ReadonlyArray<string> | undefined => {
  const cause = error.cause as { code?: unknown; message?: unknown; detail?: unknown } | undefined
  const code = String(cause?.code ?? "")
  if (code === "23505") {
    const m = /Key \(([^)]+)\)/.exec(String(cause?.detail ?? ""))
    return m ? m[1]!.split(",").map((s) => s.trim().replace(/"/g, "")) : []
  }
  if (code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY") {
    const m = /constraint failed: (.*)$/.exec(String(cause?.message ?? ""))
    return m ? m[1]!.split(",").map((s) => s.trim().split(".").pop()!) : []
  }
  return undefined
}

const conflictFrom = (columns: ReadonlyArray<string>) => {
  const named = columns.filter((c) => c !== "organization_id")
  const fieldName = named[named.length - 1] ?? columns[columns.length - 1] ?? "id"
  return new Conflict({
    message: `A record with this ${fieldName} already exists`,
    errors: { [fieldName]: "already exists" }
  })
}

/** The Conflict a write's failure is (a unique key taken), or undefined for any other failure. */
export const conflictOf = (error: SqlError): Conflict | undefined => {
  const columns = uniqueColumns(error)
  return columns === undefined ? undefined : conflictFrom(columns)
}

/** Unique violations become Conflict; every other SQL failure is a defect (a 500). */
export const mapWriteError = (_table: TableDef) => (error: SqlError) => {
  const conflict = conflictOf(error)
  return conflict === undefined ? Unavailable.die(error) : Effect.fail(conflict)
}

export const dialectOf = (sql: SqlClient.SqlClient): Dialect =>
  sql.onDialectOrElse({ pg: () => "pg" as const, orElse: () => "sqlite" as const })

/**
 * A LIMIT's row count, written into the statement rather than bound. The SQLite better-sqlite3
 * builds has STAT4, under which binding a value its planner reads (a LIMIT's) marks the statement
 * to be prepared again at its next run: a look-up of one row by a unique key took 9 to 11 µs with
 * its LIMIT bound against 2 with it written (consent users, SQLite 3.53), on every consent event.
 * A bound OFFSET costs nothing of the sort, and row counts take few values, so their statements
 * stay prepared. A count is a non-negative integer; anything else is the caller's bug.
 */
export const rowLimit = (sql: SqlClient.SqlClient, count: number): Statement.Fragment => {
  if (!Number.isSafeInteger(count) || count < 0) throw new Error(`a row limit must be a non-negative integer, not ${count}`)
  return sql.literal(String(count))
}
