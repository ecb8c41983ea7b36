/**
 * The schema, described once for both dialects. A migration is a list of operations on
 * dialect-neutral column types; each dialect renders them with its own type map:
 *
 * | type      | SQLite                  | PostgreSQL       |
 * |-----------|-------------------------|------------------|
 * | text      | TEXT                    | TEXT             |
 * | integer   | INTEGER                 | INTEGER          |
 * | bigint    | INTEGER (always 64-bit) | BIGINT           |
 * | real      | REAL                    | DOUBLE PRECISION |
 * | boolean   | INTEGER 0/1             | BOOLEAN          |
 * | json      | TEXT                    | JSONB            |
 * | timestamp | TEXT (ISO 8601)         | TIMESTAMPTZ      |
 * | bytes     | BLOB                    | BYTEA            |
 *
 * Migrations are history: an applied one is never edited, a change is a new operation in a
 * new migration. The Migrator runs every pending migration in one transaction.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

export type Dialect = "sqlite" | "pg"

export type ColumnType = "text" | "integer" | "bigint" | "real" | "boolean" | "json" | "timestamp" | "bytes"

export type DefaultValue = string | number | boolean

export interface ColumnSpec {
  readonly type: ColumnType
  readonly notNull: boolean
  /** A single-column primary key; a composite one is the table's `primaryKey`. */
  readonly primaryKey: boolean
  readonly unique: boolean
  readonly default: DefaultValue | undefined
}

export class Column {
  constructor(readonly spec: ColumnSpec) {}
  notNull(): Column {
    return new Column({ ...this.spec, notNull: true })
  }
  primaryKey(): Column {
    return new Column({ ...this.spec, primaryKey: true })
  }
  unique(): Column {
    return new Column({ ...this.spec, unique: true })
  }
  default(value: DefaultValue): Column {
    return new Column({ ...this.spec, default: value })
  }
}

const column = (type: ColumnType) => new Column({ type, notNull: false, primaryKey: false, unique: false, default: undefined })

export const text = () => column("text")
export const integer = () => column("integer")
export const bigint = () => column("bigint")
export const real = () => column("real")
export const boolean = () => column("boolean")
export const json = () => column("json")
export const bytes = () => column("bytes")
export const timestamp = () => column("timestamp")

export interface Table {
  readonly name: string
  /** In the order they are created. */
  readonly columns: ReadonlyArray<readonly [name: string, column: Column]>
  readonly primaryKey: ReadonlyArray<string>
  readonly unique: ReadonlyArray<ReadonlyArray<string>>
}

export const table = (
  name: string,
  columns: Readonly<Record<string, Column>>,
  options: {
    /** Over several columns; a single-column key is marked on its column instead. */
    readonly primaryKey?: ReadonlyArray<string>
    readonly unique?: ReadonlyArray<ReadonlyArray<string>>
  } = {}
): Table => ({
  name,
  columns: Object.entries(columns),
  primaryKey: options.primaryKey ?? [],
  unique: options.unique ?? []
})

export type Operation =
  | { readonly _tag: "CreateTable"; readonly table: Table }
  | {
    readonly _tag: "CreateIndex"
    readonly table: string
    readonly name: string
    readonly columns: ReadonlyArray<string>
    readonly ifNotExists: boolean
    readonly where: string | undefined
  }
  | { readonly _tag: "DropIndex"; readonly name: string }
  | { readonly _tag: "AddColumn"; readonly table: string; readonly name: string; readonly column: Column }
  | { readonly _tag: "RenameColumn"; readonly table: string; readonly from: string; readonly to: string }
  | { readonly _tag: "ChangePrimaryKey"; readonly table: Table; readonly primaryKey: ReadonlyArray<string> }
  | { readonly _tag: "Only"; readonly dialect: Dialect; readonly operations: ReadonlyArray<Operation> }
  | { readonly _tag: "Raw"; readonly statements: ReadonlyArray<string> }

/** Statements the operations above cannot say (a trigger), as written; wrap it in `only` for one dialect. */
export const raw = (...statements: ReadonlyArray<string>): Operation => ({ _tag: "Raw", statements })

export const createTable = (t: Table): Operation => ({ _tag: "CreateTable", table: t })

export const createIndex = (
  tableName: string,
  name: string,
  columns: ReadonlyArray<string>,
  options: {
    readonly ifNotExists?: boolean
    /**
     * A partial index: only rows matching this condition (SQL both dialects read alike) have an
     * entry. A statement reads it only where its own condition repeats this one as written, with
     * literals, not parameters.
     */
    readonly where?: string
  } = {}
): Operation => ({ _tag: "CreateIndex", table: tableName, name, columns, ifNotExists: options.ifNotExists ?? false, where: options.where })

export const dropIndex = (name: string): Operation => ({ _tag: "DropIndex", name })

/** SQLite needs a default for a NOT NULL column added to a table that may have rows. */
export const addColumn = (tableName: string, name: string, c: Column): Operation => ({
  _tag: "AddColumn",
  table: tableName,
  name,
  column: c
})

/** Keeps the column's data, type and constraints; indexes follow it on both dialects. */
export const renameColumn = (tableName: string, from: string, to: string): Operation => ({
  _tag: "RenameColumn",
  table: tableName,
  from,
  to
})

/**
 * Replaces the primary key of `t`, which must describe the table exactly as it stands (SQLite
 * rebuilds the table from it, so a stale description would lose columns: it is checked first).
 * Indexes are kept; the key's columns become NOT NULL.
 */
export const changePrimaryKey = (t: Table, primaryKey: ReadonlyArray<string>): Operation => ({
  _tag: "ChangePrimaryKey",
  table: t,
  primaryKey
})

/**
 * Operations run on one dialect only. The schemas are the same on both; this records where an
 * applied migration once made them differ, so that migration keeps doing exactly what it did.
 */
export const only = (dialect: Dialect, operations: ReadonlyArray<Operation>): Operation => ({
  _tag: "Only",
  dialect,
  operations
})

// ---------------------------------------------------------------- rendering

const types: Record<Dialect, Record<ColumnType, string>> = {
  sqlite: {
    text: "TEXT",
    integer: "INTEGER",
    bigint: "INTEGER",
    real: "REAL",
    boolean: "INTEGER",
    json: "TEXT",
    timestamp: "TEXT",
    bytes: "BLOB"
  },
  pg: {
    text: "TEXT",
    integer: "INTEGER",
    bigint: "BIGINT",
    real: "DOUBLE PRECISION",
    boolean: "BOOLEAN",
    json: "JSONB",
    timestamp: "TIMESTAMPTZ",
    bytes: "BYTEA"
  }
}

/**
 * PostgreSQL's reserved key words (SQLite reserves a subset of them). Only these are quoted, so
 * the stored schema text reads as it was written by hand before.
 */
const reserved = new Set([
  "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "both", "case",
  "cast", "check", "collate", "column", "constraint", "create", "current_catalog", "current_date",
  "current_role", "current_time", "current_timestamp", "current_user", "default", "deferrable",
  "desc", "distinct", "do", "else", "end", "except", "false", "fetch", "for", "foreign", "from",
  "grant", "group", "having", "in", "initially", "intersect", "into", "lateral", "leading", "limit",
  "localtime", "localtimestamp", "not", "null", "offset", "on", "only", "or", "order", "placing",
  "primary", "references", "returning", "select", "session_user", "some", "symmetric", "table",
  "then", "to", "trailing", "true", "union", "unique", "user", "using", "variadic", "when", "where",
  "window", "with"
])

const identifier = (name: string): string => {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`Ddl: not a plain lower-case identifier: ${name}`)
  return reserved.has(name) ? `"${name}"` : name
}

const list = (names: ReadonlyArray<string>) => names.map(identifier).join(", ")

const literal = (dialect: Dialect, value: DefaultValue): string => {
  if (typeof value === "boolean") return dialect === "pg" ? String(value) : value ? "1" : "0"
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new Error(`Ddl: not a finite default: ${value}`)
    return String(value)
  }
  return `'${value.replace(/'/g, "''")}'`
}

const columnDefinition = (dialect: Dialect, name: string, c: Column): string => {
  const s = c.spec
  return [
    identifier(name),
    types[dialect][s.type],
    s.primaryKey ? "PRIMARY KEY" : "",
    s.notNull ? "NOT NULL" : "",
    s.unique ? "UNIQUE" : "",
    s.default === undefined ? "" : `DEFAULT ${literal(dialect, s.default)}`
  ].filter((part) => part !== "").join(" ")
}

const createTableStatement = (dialect: Dialect, t: Table, name = t.name): string => {
  const lines = [
    ...t.columns.map(([n, c]) => columnDefinition(dialect, n, c)),
    ...(t.primaryKey.length > 0 ? [`PRIMARY KEY (${list(t.primaryKey)})`] : []),
    ...t.unique.map((u) => `UNIQUE (${list(u)})`)
  ]
  return `CREATE TABLE ${identifier(name)} (\n${lines.map((l) => `  ${l}`).join(",\n")}\n)`
}

/** The table with `primaryKey` as its key, which also makes those columns NOT NULL. */
const rekeyed = (t: Table, primaryKey: ReadonlyArray<string>): Table => ({
  ...t,
  columns: t.columns.map(([n, c]) => [
    n,
    new Column({ ...c.spec, primaryKey: false, notNull: c.spec.notNull || primaryKey.includes(n) })
  ]),
  primaryKey
})

const checkColumns = (t: Table, names: ReadonlyArray<string>) => {
  for (const n of names) {
    if (!t.columns.some(([c]) => c === n)) throw new Error(`Ddl: ${t.name} has no column ${n}`)
  }
}

/**
 * The statements of an operation that needs nothing from the database. SQLite's primary-key
 * change reads the table's indexes, so it is only available through `run`.
 */
export const statements = (dialect: Dialect, op: Operation): ReadonlyArray<string> => {
  switch (op._tag) {
    case "CreateTable": {
      checkColumns(op.table, [...op.table.primaryKey, ...op.table.unique.flat()])
      return [createTableStatement(dialect, op.table)]
    }
    case "CreateIndex":
      return [
        `CREATE INDEX ${op.ifNotExists ? "IF NOT EXISTS " : ""}${identifier(op.name)} ON ${identifier(op.table)} (${
          list(op.columns)
        })${op.where === undefined ? "" : ` WHERE ${op.where}`}`
      ]
    case "DropIndex":
      return [`DROP INDEX ${identifier(op.name)}`]
    case "AddColumn":
      return [`ALTER TABLE ${identifier(op.table)} ADD COLUMN ${columnDefinition(dialect, op.name, op.column)}`]
    case "RenameColumn":
      return [`ALTER TABLE ${identifier(op.table)} RENAME COLUMN ${identifier(op.from)} TO ${identifier(op.to)}`]
    case "ChangePrimaryKey": {
      checkColumns(op.table, op.primaryKey)
      if (dialect === "sqlite") throw new Error("Ddl: SQLite changes a primary key by rebuilding the table (use run)")
      const t = identifier(op.table.name)
      // Tables created with a PRIMARY KEY clause have PostgreSQL's default constraint name.
      const constraint = identifier(`${op.table.name}_pkey`)
      return [`ALTER TABLE ${t} DROP CONSTRAINT ${constraint}, ADD CONSTRAINT ${constraint} PRIMARY KEY (${
        list(op.primaryKey)
      })`]
    }
    case "Only":
      return op.dialect === dialect ? op.operations.flatMap((o) => statements(dialect, o)) : []
    case "Raw":
      return op.statements
  }
}

/**
 * SQLite cannot alter a primary key: the table is copied into a new one with the new key,
 * the old one dropped and the new one renamed, inside the migration's transaction (there are
 * no foreign keys to disable). Dropping a table drops its indexes and triggers (its row
 * counts'), so they are recreated from their stored definitions once the rows are in (the copy
 * counts nothing twice); its UNIQUE constraints come back with the new table.
 */
const rebuildSqlite = (sql: SqlClient.SqlClient, t: Table, primaryKey: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    checkColumns(t, primaryKey)
    const existing = yield* sql.unsafe<{ name: string; type: string; notnull: number }>(
      `SELECT name, type, "notnull" FROM pragma_table_info(?) ORDER BY cid`,
      [t.name]
    )
    const described = t.columns.map(([n, c]) => `${n} ${types.sqlite[c.spec.type]}${c.spec.notNull ? " NOT NULL" : ""}`)
    const actual = existing.map((c) => `${c.name} ${c.type.toUpperCase()}${c.notnull === 1 ? " NOT NULL" : ""}`)
    if (described.join(", ") !== actual.join(", ")) {
      return yield* Effect.dieMessage(
        `Ddl: the description of ${t.name} (${described.join(", ")}) is not the table (${actual.join(", ")})`
      )
    }
    const declared = t.columns.map(([n]) => n)
    const indexes = yield* sql.unsafe<{ sql: string }>(
      `SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL ORDER BY name`,
      [t.name]
    )
    const triggers = yield* sql.unsafe<{ sql: string }>(
      `SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ? ORDER BY name`,
      [t.name]
    )
    const temporary = `${t.name}_new`
    const columns = list(declared)
    yield* sql.unsafe(createTableStatement("sqlite", rekeyed(t, primaryKey), temporary))
    yield* sql.unsafe(`INSERT INTO ${identifier(temporary)} (${columns}) SELECT ${columns} FROM ${identifier(t.name)}`)
    yield* sql.unsafe(`DROP TABLE ${identifier(t.name)}`)
    yield* sql.unsafe(`ALTER TABLE ${identifier(temporary)} RENAME TO ${identifier(t.name)}`)
    yield* Effect.forEach([...indexes, ...triggers], (i) => sql.unsafe(i.sql), { discard: true })
  })

const dialectOf = (sql: SqlClient.SqlClient): Dialect | undefined =>
  sql.onDialectOrElse({ sqlite: () => "sqlite" as const, pg: () => "pg" as const, orElse: () => undefined })

/** Runs one operation on the current client's dialect. */
export const run = (op: Operation): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const dialect = dialectOf(sql)
    if (dialect === undefined) return Effect.dieMessage("Ddl: only SQLite and PostgreSQL are supported")
    if (op._tag === "ChangePrimaryKey" && dialect === "sqlite") return rebuildSqlite(sql, op.table, op.primaryKey)
    if (op._tag === "Only") return op.dialect === dialect ? Effect.forEach(op.operations, run, { discard: true }) : Effect.void
    return Effect.forEach(statements(dialect, op), (s) => sql.unsafe(s), { discard: true })
  })

/** A migration: its operations in order (the Migrator wraps them in its transaction). */
export const migration = (operations: ReadonlyArray<Operation>): Effect.Effect<void, SqlError, SqlClient.SqlClient> =>
  Effect.forEach(operations, run, { discard: true })
