/**
 * The schema contract: after migrating a fresh database, every table the core declares
 * (`TableDef`) is exactly what the store created. Columns with the dialect type of their kind
 * and NOT NULL exactly where the declaration is not nullable, the primary key, a unique index
 * behind every unique set, every declared index with its columns in order, and nothing more:
 * no undeclared column, secondary index or table. Run by each store package on its own layer.
 *
 * Also the migrations' own test: the upgrade that rekeys consent users and events keeps their
 * rows (`migrationSuite`).
 */
import {
  AttemptsTable,
  ConsentEventsResource,
  ConsentUsersResource,
  DeliveriesTable,
  DeliveryStats,
  eq,
  type FieldInfo,
  gte,
  resources,
  Storage,
  type StorePorts,
  type TableDef,
  tables,
  WebhooksResource
} from "@cmp/core"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"

type Dialect = "sqlite" | "pg"

/**
 * Every table declaration of the core, named for the test report: each resource's (resources
 * may share a table) and every other table of the registry's list of stored tables.
 */
export const declaredTables: ReadonlyArray<{ readonly label: string; readonly table: TableDef }> = [
  ...resources.map((r) => ({ label: `resource ${r.path} (${r.tableDef.table})`, table: r.tableDef })),
  ...tables
    .filter((t) => !resources.some((r) => r.tableDef.table === t.table))
    .map((t) => ({ label: `table ${t.table}`, table: t }))
]

/**
 * Tables a store keeps for itself and the core never names: the migrator's record, the row
 * counts its triggers keep (their exactness is the store contract's row-count suite), and
 * PostgreSQL's record of consent log verifies running.
 */
const storeTables = new Set([
  "effect_sql_migrations",
  "consent_users_counts",
  "consent_events_counts",
  "consent_proofs_counts",
  "webhook_deliveries_counts",
  "consent_log_verify_runs"
])

interface Index {
  readonly name: string
  readonly columns: ReadonlyArray<string>
  readonly unique: boolean
  readonly primary: boolean
  readonly partial: boolean
}

interface Actual {
  readonly columns: ReadonlyMap<string, { readonly type: string; readonly notNull: boolean }>
  readonly primaryKey: ReadonlyArray<string>
  readonly indexes: ReadonlyArray<Index>
}

const dialectOf = (sql: SqlClient.SqlClient): Dialect =>
  sql.onDialectOrElse({
    pg: () => "pg" as const,
    sqlite: () => "sqlite" as const,
    orElse: () => {
      throw new Error("schema contract: only SQLite and PostgreSQL are supported")
    }
  })

const sqliteTables = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql.unsafe<{ name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`),
    (rows) => rows.map((r) => r.name)
  )

const pgTables = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql.unsafe<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`
    ),
    (rows) => rows.map((r) => r.table_name)
  )

const sqliteActual = (sql: SqlClient.SqlClient, table: string) =>
  Effect.gen(function*() {
    const info = yield* sql.unsafe<{ name: string; type: string; notnull: number; pk: number }>(
      `SELECT name, type, "notnull", pk FROM pragma_table_info(?)`,
      [table]
    )
    const list = yield* sql.unsafe<{ name: string; unique: number; origin: string; partial: number }>(
      `SELECT name, "unique", origin, partial FROM pragma_index_list(?)`,
      [table]
    )
    const indexes = yield* Effect.forEach(list, (i) =>
      Effect.map(
        sql.unsafe<{ name: string }>(`SELECT name FROM pragma_index_info(?) ORDER BY seqno`, [i.name]),
        (cols): Index => ({
          name: i.name,
          columns: cols.map((c) => c.name),
          unique: i.unique === 1,
          primary: i.origin === "pk",
          partial: i.partial === 1
        })
      ))
    return {
      columns: new Map(info.map((c) => [c.name, {
        type: c.type.toUpperCase(),
        // SQLite lets a primary-key column that is not an INTEGER hold NULL unless it is also
        // declared NOT NULL (a bug kept for compatibility); the key is what stands for NOT NULL
        // here, as it does on PostgreSQL.
        notNull: c.notnull === 1 || c.pk > 0
      }])),
      primaryKey: info.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name),
      indexes
    } satisfies Actual
  })

const pgActual = (sql: SqlClient.SqlClient, table: string) =>
  Effect.gen(function*() {
    const info = yield* sql.unsafe<{ column_name: string; data_type: string; is_nullable: string }>(
      `SELECT column_name, data_type, is_nullable FROM information_schema.columns
       WHERE table_schema = current_schema() AND table_name = $1`,
      [table]
    )
    const rows = yield* sql.unsafe<
      { name: string; columns: string; is_unique: boolean; is_primary: boolean; is_partial: boolean }
    >(
      `SELECT i.relname AS name,
         string_agg(COALESCE(a.attname, '(expression)'), ',' ORDER BY k.ord) AS columns,
         ix.indisunique AS is_unique, ix.indisprimary AS is_primary, ix.indpred IS NOT NULL AS is_partial
       FROM pg_index ix
       JOIN pg_class t ON t.oid = ix.indrelid
       JOIN pg_namespace n ON n.oid = t.relnamespace
       JOIN pg_class i ON i.oid = ix.indexrelid
       CROSS JOIN LATERAL unnest(ix.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
       LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
       WHERE n.nspname = current_schema() AND t.relname = $1
       GROUP BY i.relname, ix.indisunique, ix.indisprimary, ix.indpred IS NOT NULL`,
      [table]
    )
    const indexes = rows.map((r): Index => ({
      name: r.name,
      columns: r.columns.split(","),
      unique: r.is_unique,
      primary: r.is_primary,
      partial: r.is_partial
    }))
    return {
      columns: new Map(info.map((c) => [c.column_name, { type: c.data_type, notNull: c.is_nullable === "NO" }])),
      primaryKey: indexes.find((i) => i.primary)?.columns ?? [],
      indexes
    } satisfies Actual
  })

/** The column type a field's kind is stored as, as the database reports it. */
const columnType = (dialect: Dialect, info: FieldInfo): string => {
  switch (info.kind) {
    case "string":
      return dialect === "pg" ? "text" : "TEXT"
    case "timestamp":
      return dialect === "pg" ? "timestamp with time zone" : "TEXT"
    case "json":
      return dialect === "pg" ? "jsonb" : "TEXT"
    case "bytes":
      return dialect === "pg" ? "bytea" : "BLOB"
    case "boolean":
      return dialect === "pg" ? "boolean" : "INTEGER"
    case "number":
      if (info.storage === "real") return dialect === "pg" ? "double precision" : "REAL"
      if (info.storage === "bigint") return dialect === "pg" ? "bigint" : "INTEGER"
      return dialect === "pg" ? "integer" : "INTEGER"
  }
}

const same = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.length === b.length && a.every((x, i) => x === b[i])
const sameSet = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => same([...a].sort(), [...b].sort())
const show = (columns: ReadonlyArray<string>) => `(${columns.join(", ")})`

/** How the database differs from the declaration, one line per difference; empty when they agree. */
const differences = (dialect: Dialect, def: TableDef, actual: Actual): ReadonlyArray<string> => {
  const problems: Array<string> = []
  if (actual.columns.size === 0) return [`table ${def.table} does not exist`]
  for (const [name, info] of Object.entries(def.fields)) {
    const column = actual.columns.get(name)
    if (!column) {
      problems.push(`column ${name} is declared but does not exist`)
      continue
    }
    const type = columnType(dialect, info)
    if (column.type !== type) problems.push(`column ${name} (${info.kind}) is ${column.type}, expected ${type}`)
    if (column.notNull === info.nullable) {
      problems.push(`column ${name} is ${column.notNull ? "NOT NULL" : "nullable"} but declared ${info.nullable ? "nullable" : "not nullable"}`)
    }
  }
  for (const name of actual.columns.keys()) {
    if (!Object.hasOwn(def.fields, name)) problems.push(`column ${name} exists but is not declared`)
  }
  if (!same(actual.primaryKey, def.key)) problems.push(`primary key is ${show(actual.primaryKey)}, declared ${show(def.key)}`)

  const secondary = actual.indexes.filter((i) => !i.primary)
  const declaredHere = def.indexes.filter((d) => d.only === undefined || d.only === dialect)
  for (const i of secondary) {
    const declared = declaredHere.find((d) => d.name === i.name)
    if (declared === undefined) continue
    if (i.partial && declared.where === undefined) problems.push(`index ${i.name} is partial, declared whole`)
    if (!i.partial && declared.where !== undefined) problems.push(`index ${i.name} is whole, declared partial (${declared.where})`)
  }
  const backsUnique = (i: Index) => i.unique && !i.partial && def.unique.some((u) => sameSet(u, i.columns))
  for (const u of def.unique) {
    if (!actual.indexes.some((i) => i.unique && !i.partial && sameSet(u, i.columns))) {
      problems.push(`unique ${show(u)} has no unique index or constraint`)
    }
  }
  for (const declared of declaredHere) {
    const found = secondary.find((i) => i.name === declared.name)
    if (!found) problems.push(`index ${declared.name} ${show(declared.columns)} is declared but does not exist`)
    else if (!same(found.columns, declared.columns)) {
      problems.push(`index ${declared.name} is on ${show(found.columns)}, declared ${show(declared.columns)}`)
    } else if (found.unique) problems.push(`index ${declared.name} is unique: declare its columns in \`unique\``)
  }
  for (const i of secondary) {
    if (!declaredHere.some((d) => d.name === i.name) && !backsUnique(i)) {
      problems.push(`${i.unique ? "unique " : ""}index ${i.name} ${show(i.columns)} exists but is not declared`)
    }
  }
  return problems
}

const inspect = (table: string) =>
  Effect.flatMap(SqlClient.SqlClient, (client) => {
    const sql = client.withoutTransforms()
    const dialect = dialectOf(sql)
    return Effect.map(
      dialect === "pg" ? pgActual(sql, table) : sqliteActual(sql, table),
      (actual) => ({ dialect, actual })
    )
  })

/**
 * Registers the schema contract on one migrated database from `makeLayer()` (a store's layer,
 * which migrates when built), shared by its tests: they only read.
 */
export const schemaSuite = (name: string, makeLayer: () => Layer.Layer<SqlClient.SqlClient, unknown>) =>
  // Built when the suite starts, once the test database exists.
  layer(Layer.suspend(makeLayer), { timeout: 60_000 })(`schema contract: ${name}`, (it) => {
    for (const { label, table } of declaredTables) {
      it.effect(label, () =>
        Effect.gen(function*() {
          const { actual, dialect } = yield* inspect(table.table)
          assert.deepStrictEqual(differences(dialect, table, actual), [], `${table.table} differs from its declaration`)
        }))
    }

    it.effect("every table in the database is declared by the core (or kept by the store itself)", () =>
      Effect.gen(function*() {
        const sql = (yield* SqlClient.SqlClient).withoutTransforms()
        const tables = yield* (dialectOf(sql) === "pg" ? pgTables(sql) : sqliteTables(sql))
        const declared = new Set(declaredTables.map((d) => d.table.table))
        assert.deepStrictEqual(tables.filter((t) => !declared.has(t) && !storeTables.has(t)).sort(), [])
      }))
  })

// ---------------------------------------------------------------- migrations

type Migrations = Readonly<Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>>>

const migrate = (migrations: Migrations, through: number) =>
  Migrator.make({})({
    loader: Migrator.fromRecord(
      Object.fromEntries(Object.entries(migrations).filter(([key]) => Number(key.split("_")[0]) <= through))
    )
  })

const ORGANIZATION_SCOPED_IDS = 6
const CONSENT_USER_STATES = 7
const ROW_COUNTS = 19

/**
 * A row of `table` for a raw insert: `values`, and for every other column NULL where it may be,
 * else a value of its kind as the dialect binds it. `omit` names columns the table had not yet.
 */
const rawRow = (dialect: Dialect, table: TableDef, values: Record<string, unknown>, omit: ReadonlyArray<string> = []) => {
  const row: Record<string, unknown> = {}
  for (const [name, info] of Object.entries(table.fields)) {
    if (omit.includes(name)) continue
    if (Object.hasOwn(values, name)) row[name] = values[name]
    else if (info.nullable) row[name] = null
    else if (info.kind === "boolean") row[name] = dialect === "pg" ? false : 0
    else if (info.kind === "number") row[name] = 1
    else if (info.kind === "json") row[name] = "{}"
    else if (info.kind === "timestamp") row[name] = "2024-01-01T00:00:00.000Z"
    else row[name] = "x"
  }
  return row
}

/**
 * The store's migrations on a database that has data: `makeClient()` is a client on a new,
 * empty database (no migrations run).
 */
export const migrationSuite = <R>(name: string, options: {
  readonly migrations: Migrations
  /** The store's client, with what else its ports need from it (`R`). */
  readonly makeClient: () => Layer.Layer<SqlClient.SqlClient | R, unknown>
  /** The store's ports over a client (its migrations already run), to read a migrated database through them. */
  readonly storage: Layer.Layer<StorePorts, never, SqlClient.SqlClient | R>
}) =>
  describe(`migrations: ${name}`, () => {
    const at = (n: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, n)).toISOString()
    const user = (organizationId: string, id: string, organizationUserId: string | null, n: number) => ({
      id,
      organization_id: organizationId,
      organization_user_id: organizationUserId,
      metadata: null,
      country: "FR",
      consents: JSON.stringify({ gdpr: { analytics: true } }),
      created_at: at(n),
      updated_at: at(n),
      version: 1
    })
    const event = (organizationId: string, id: string, userId: string, n: number) => ({
      id,
      organization_id: organizationId,
      status: "confirmed",
      regulation: "gdpr",
      metadata: JSON.stringify({ source: "test" }),
      user: JSON.stringify({ id: userId }),
      consents: JSON.stringify({ analytics: true }),
      user_id: userId,
      organization_user_id: null,
      created_at: at(n),
      updated_at: at(n),
      version: 1
    })

    it.effect("organization-scoped ids keep every consent user and event, and free an id for other organizations", () =>
      Effect.gen(function*() {
        const sql = (yield* SqlClient.SqlClient).withoutTransforms()
        yield* migrate(options.migrations, ORGANIZATION_SCOPED_IDS - 1)
        yield* sql`INSERT INTO consent_users ${
          sql.insert([user("o1", "u1", "crm-1", 1), user("o1", "u2", null, 2), user("o2", "u3", "crm-1", 3)])
        }`
        yield* sql`INSERT INTO consent_events ${
          sql.insert([event("o1", "e1", "u1", 4), event("o1", "e2", "u2", 5), event("o2", "e3", "u3", 6)])
        }`
        const snapshot = Effect.all([
          sql`SELECT * FROM consent_users ORDER BY organization_id, id`,
          sql`SELECT * FROM consent_events ORDER BY organization_id, id`
        ])
        const before = yield* snapshot

        yield* migrate(options.migrations, ORGANIZATION_SCOPED_IDS)
        assert.deepStrictEqual(yield* snapshot, before)

        // The same id in another organization is a different row; in the same one, a conflict.
        yield* sql`INSERT INTO consent_users ${sql.insert(user("o2", "u1", null, 7))}`
        yield* sql`INSERT INTO consent_events ${sql.insert(event("o2", "e1", "u1", 8))}`
        const duplicate = (statement: Effect.Effect<unknown, unknown>) =>
          Effect.map(Effect.exit(statement), (exit) => Exit.isFailure(exit))
        assert.isTrue(yield* duplicate(sql`INSERT INTO consent_users ${sql.insert(user("o1", "u1", null, 9))}`))
        assert.isTrue(yield* duplicate(sql`INSERT INTO consent_events ${sql.insert(event("o1", "e1", "u1", 9))}`))
        // The organization's own user ids stay unique within it.
        assert.isTrue(yield* duplicate(sql`INSERT INTO consent_users ${sql.insert(user("o1", "u9", "crm-1", 9))}`))

      }).pipe(Effect.provide(options.makeClient())), { timeout: 60_000 })

    it.effect("a consent user's states keep their JSON, every regulation's, under consent_states", () =>
      Effect.gen(function*() {
        const sql = (yield* SqlClient.SqlClient).withoutTransforms()
        yield* migrate(options.migrations, CONSENT_USER_STATES - 1)
        yield* sql`INSERT INTO consent_users ${sql.insert([user("o1", "u1", "crm-1", 1), user("o2", "u1", null, 2)])}`
        const parsed = (v: unknown): unknown => (typeof v === "string" ? JSON.parse(v) : v)
        const rows = (statement: Effect.Effect<ReadonlyArray<Record<string, unknown>>, unknown>) =>
          Effect.map(statement, (list) =>
            list.map(({ consents, consent_states, ...rest }) => ({
              ...rest,
              // SQLite keeps JSON as text, PostgreSQL as jsonb: compare the values.
              states: parsed(consent_states ?? consents)
            })))
        const before = yield* rows(sql`SELECT * FROM consent_users ORDER BY organization_id, id`)
        assert.deepStrictEqual(before[0]!.states, { gdpr: { analytics: true } })

        yield* migrate(options.migrations, Number.MAX_SAFE_INTEGER)
        assert.deepStrictEqual(yield* rows(sql`SELECT * FROM consent_users ORDER BY organization_id, id`), before)
        const columns = yield* sql.onDialectOrElse({
          pg: () => sql<{ name: string }>`SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'consent_users'`,
          orElse: () => sql<{ name: string }>`SELECT name FROM pragma_table_info('consent_users')`
        })
        assert.includeMembers(columns.map((c) => c.name), ["consent_states"])
        assert.notInclude(columns.map((c) => c.name), "consents")

        const applied = yield* sql<{ migration_id: number }>`SELECT migration_id FROM effect_sql_migrations ORDER BY migration_id`
        assert.deepStrictEqual(
          applied.map((m) => Number(m.migration_id)),
          Object.keys(options.migrations).map((k) => Number(k.split("_")[0]))
        )
      }).pipe(Effect.provide(options.makeClient())), { timeout: 60_000 })
    it.effect("row counts count the rows there before them; attempts name their webhook and whether they succeeded", () =>
      Effect.gen(function*() {
        const sql = (yield* SqlClient.SqlClient).withoutTransforms()
        const dialect = dialectOf(sql)
        yield* migrate(options.migrations, ROW_COUNTS - 1)
        const users = [["o1", "u1"], ["o1", "u2"], ["o1", "u3"], ["o2", "u1"]].map(([o, id], n) =>
          rawRow(dialect, ConsentUsersResource.tableDef, { organization_id: o, id, created_at: at(n) }))
        yield* sql`INSERT INTO consent_users ${sql.insert(users)}`
        const events = [["o1", "e1", "u1"], ["o1", "e2", "u2"]].map(([o, id, u]) =>
          // Rows as the release before the row counts wrote them: without the columns added after it.
          rawRow(dialect, ConsentEventsResource.tableDef, { organization_id: o, id, user_id: u, proofs_id: "[]" }, [
            "expression_method",
            "gpc",
            "gpc_conflict",
            "gpc_override"
          ]))
        yield* sql`INSERT INTO consent_events ${sql.insert(events)}`
        const webhook = rawRow(dialect, WebhooksResource.tableDef, { id: "w1", organization_id: "o1", event_types: "[]", regulations: "[]" }, [
          "previous_secret_sealed",
          "previous_secret_expires_at"
        ])
        yield* sql`INSERT INTO webhooks ${sql.insert(webhook)}`
        const messages = [["m1", "pending"], ["m2", "pending"], ["m3", "delivered"], ["m4", "failed"]].map(([id, status], n) =>
          rawRow(dialect, DeliveriesTable, { id, organization_id: "o1", webhook_id: "w1", status, created_at: at(n) }))
        yield* sql`INSERT INTO webhook_deliveries ${sql.insert(messages)}`
        const attempts = [["a1", "m3", 200, 10], ["a2", "m4", 500, 20], ["a3", "m4", null, 30]].map(([id, delivery, status, n]) =>
          rawRow(dialect, AttemptsTable, { id, delivery_id: delivery, organization_id: "o1", status_code: status, attempted_at: at(n as number) }, [
            "webhook_id",
            "succeeded"
          ]))
        yield* sql`INSERT INTO webhook_attempts ${sql.insert(attempts)}`

        yield* migrate(options.migrations, Number.MAX_SAFE_INTEGER)
        yield* Effect.gen(function*() {
          const storage = yield* Storage
          const totals = (table: TableDef, organizationId: string) =>
            Effect.all([
              storage.repository(table).count([eq("organization_id", organizationId)]),
              storage.repository(table).count([eq("organization_id", organizationId), gte("created_at", at(0))])
            ])
          assert.deepStrictEqual(yield* totals(ConsentUsersResource.tableDef, "o1"), [3, 3])
          assert.deepStrictEqual(yield* totals(ConsentUsersResource.tableDef, "o2"), [1, 1])
          assert.deepStrictEqual(yield* totals(ConsentEventsResource.tableDef, "o1"), [2, 2])
          assert.deepStrictEqual(yield* totals(DeliveriesTable, "o1"), [4, 4])
          const [stats] = yield* (yield* DeliveryStats).ofOrganization("o1")
          assert.deepStrictEqual(stats, {
            webhook_id: "w1",
            counts: { pending: 2, delivering: 0, delivered: 1, failed: 1 },
            oldest_pending_at: at(0),
            last_success: { attempted_at: at(10), status_code: 200, error: null },
            last_failure: { attempted_at: at(30), status_code: null, error: null }
          })
          // Written after the migration as the previous release writes them (a server still
          // running during the upgrade): counted, and the attempt's webhook and success filled in.
          yield* sql`INSERT INTO consent_users ${sql.insert(rawRow(dialect, ConsentUsersResource.tableDef, { organization_id: "o2", id: "u9" }))}`
          assert.deepStrictEqual(yield* totals(ConsentUsersResource.tableDef, "o2"), [2, 2])
          yield* sql`INSERT INTO webhook_attempts ${
            sql.insert(rawRow(dialect, AttemptsTable, { id: "a4", delivery_id: "m1", organization_id: "o1", status_code: 204, attempted_at: at(40) }, [
              "webhook_id",
              "succeeded"
            ]))
          }`
          const [later] = yield* (yield* DeliveryStats).ofOrganization("o1")
          assert.deepStrictEqual(later?.last_success, { attempted_at: at(40), status_code: 204, error: null })
        }).pipe(Effect.provide(options.storage))
      }).pipe(Effect.provide(options.makeClient())), { timeout: 60_000 })
  })
