import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Conflict, type FieldInfo, type Row, type TableDef } from "@cmp/core"
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
      const ms = typeof v === "string" ? Date.parse(v) : Number.NaN
      return Number.isNaN(ms) ? v : new Date(ms).toISOString()
    }
    default:
      return v
  }
}

const canonicalIso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

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

const conflictFrom = (table: TableDef, columns: ReadonlyArray<string>) => {
  const named = columns.filter((c) => c !== "organization_id")
  const fieldName = named[named.length - 1] ?? columns[columns.length - 1] ?? "id"
  return new Conflict({
    message: `A record with this ${fieldName} already exists`,
    errors: { [fieldName]: "already exists" }
  })
}

/** Unique violations become Conflict; every other SQL failure is a defect (a 500). */
export const mapWriteError = (table: TableDef) => (error: SqlError) => {
  const columns = uniqueColumns(error)
  return columns === undefined ? Unavailable.die(error) : Effect.fail(conflictFrom(table, columns))
}

export const dialectOf = (sql: SqlClient.SqlClient): Dialect =>
  sql.onDialectOrElse({ pg: () => "pg" as const, orElse: () => "sqlite" as const })
