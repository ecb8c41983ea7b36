import { ConsentLogStore, Storage, Tables, UnitOfWork } from "@cmp/core"
import { domainReleaseSuite, exportRunSuite, logVerifySuite, resourceServiceSuite } from "@cmp/test-support/engine"
import { SqlStorage } from "@cmp/store-sql"
import { migrationSuite, schemaSuite } from "@cmp/test-support/schema-contract"
import { suite } from "@cmp/test-support/store-contract"
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import { afterAll, beforeAll } from "vitest"
import { PgStore } from "../src/index.js"
import { createTestDatabase, type TestDatabase } from "@cmp/test-support/database"

/**
 * The shared store contract on PostgreSQL, and core's engine on it (the generic use-cases, hooks,
 * sessions, API usage, export runs, the consent log's verify): the machine's server through
 * DATABASE_URL (CI), or an in-process PGlite where it is unset (slower: a fresh database per
 * test). Never skipped.
 */
let db: TestDatabase

beforeAll(async () => {
  db = await createTestDatabase()
}, 60_000)
afterAll(() => db?.close())

const fresh = () =>
  Layer.unwrapEffect(
    Effect.promise(() => db.reset()).pipe(
      Effect.as(PgStore.layer({ url: db.url, maxConnections: db.maxConnections }))
    )
  )

const label = `postgres (${process.env.DATABASE_URL ? "DATABASE_URL" : "PGlite"})`

suite(label, fresh)

resourceServiceSuite(label, fresh)

exportRunSuite(label, fresh)

logVerifySuite(label, fresh)

domainReleaseSuite(label, fresh)

schemaSuite(label, fresh)

migrationSuite(label, {
  migrations: PgStore.migrations,
  makeClient: () =>
    Layer.unwrapEffect(
      Effect.promise(() => db.reset()).pipe(
        Effect.as(PgStore.clientLayer({ url: db.url, maxConnections: db.maxConnections }))
      )
    ),
  storage: SqlStorage.layer
})

describe("PgStore", () => {
  it.effect("uses real boolean, jsonb and timestamptz columns, migrated once", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const columns = yield* sql<{ column_name: string; data_type: string }>`
        SELECT column_name, data_type FROM information_schema.columns
        WHERE table_name = 'organizations' AND column_name IN ('self_register', 'auth_message_priority', 'created_at')
        ORDER BY column_name`
      assert.deepStrictEqual(columns.map((c) => [c.column_name, c.data_type]), [
        ["auth_message_priority", "jsonb"],
        ["created_at", "timestamp with time zone"],
        ["self_register", "boolean"]
      ])
      const applied = yield* sql<{ migration_id: number }>`SELECT migration_id FROM effect_sql_migrations ORDER BY migration_id`
      assert.deepStrictEqual(applied.map((m) => Number(m.migration_id)), Object.keys(PgStore.migrations).map((k) => Number(k.split("_")[0])))
      // A count on a real table comes back as a number, not the driver's string.
      const repo = (yield* Storage).repository(Tables.keys)
      assert.strictEqual(yield* repo.count([]), 0)
    }).pipe(Effect.provide(fresh())), { timeout: 30_000 })
})

describe("PgStore: the consent log's entries sent with the COMMIT", () => {
  const entry = (shard: number, changes: string) => ({ organizationId: "o1", shard, changes, at: "2026-01-01T00:00:00.000Z", link: () => "" })

  it.effect("an entry that cannot be appended fails the COMMIT: nothing of the transaction stays, and its connection serves the next one", () =>
    Effect.gen(function*() {
      const uow = yield* UnitOfWork
      const log = yield* ConsentLogStore
      const onCommit = (shard: number, changes: string) =>
        uow.transaction(Effect.zipRight(
          log.append([entry(1, `now ${changes}`)]),
          uow.beforeCommit({ run: () => log.appendOnCommit([entry(shard, changes)]) }, changes)
        ))
      // A chain number past PostgreSQL's integer: the function refuses it inside the COMMIT's message.
      const failed = yield* Effect.exit(onCommit(2 ** 40, "refused"))
      assert.isTrue(Exit.isFailure(failed))
      assert.deepStrictEqual(yield* log.entries("o1", { limit: 10 }), [])
      // Every connection of the pool, one after the other, still commits.
      for (let i = 0; i < 12; i++) yield* onCommit(2, `kept ${i}`)
      const entries = yield* log.entries("o1", { limit: 100 })
      assert.deepStrictEqual(entries.filter((e) => e.shard === 1).map((e) => e.seq), Array.from({ length: 12 }, (_, i) => i + 1))
      assert.deepStrictEqual(entries.filter((e) => e.shard === 2).map((e) => e.changes), Array.from({ length: 12 }, (_, i) => `kept ${i}`))
      // A quote or a backslash in what is written out as text arrives as it was.
      yield* onCommit(3, `it's a \\ and a ' ; COMMIT; --`)
      assert.deepStrictEqual((yield* log.entries("o1", { shard: 3, limit: 10 })).map((e) => e.changes), [`it's a \\ and a ' ; COMMIT; --`])
    }).pipe(Effect.provide(fresh())), { timeout: 30_000 })
})

describe("PgStore: a consent log verify's scratch", () => {
  it.effect("tables a verify left behind (its process killed) are dropped by a later one once untouched for an hour; a running one's stay", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const [dead, running] = ["0a0a0a0a0a0a0a0a", "0b0b0b0b0b0b0b0b"]
      for (const [run, age] of [[dead, "2 hours"], [running, "5 minutes"]] as const) {
        yield* sql`INSERT INTO consent_log_verify_runs (run, alive_at) VALUES (${run}, now() - ${age}::interval)`
        yield* sql.unsafe(`CREATE UNLOGGED TABLE consent_log_verify_changes_${run} (subject TEXT)`)
        yield* sql.unsafe(`CREATE UNLOGGED TABLE consent_log_verify_rows_${run} (subject TEXT)`)
      }
      // A table an earlier version of the scratch named so, left behind.
      yield* sql.unsafe(`CREATE UNLOGGED TABLE consent_log_verify_present_${dead} (subject TEXT)`)
      const log = yield* ConsentLogStore
      yield* Effect.scoped(Effect.flatMap(log.scratch, (scratch) => scratch.mismatches(undefined, 10)))
      const tables = yield* sql<{ tablename: string }>`SELECT tablename FROM pg_tables WHERE tablename LIKE 'consent_log_verify_%' ORDER BY tablename`
      assert.deepStrictEqual(tables.map((t) => t.tablename), [
        `consent_log_verify_changes_${running}`,
        `consent_log_verify_rows_${running}`,
        "consent_log_verify_runs"
      ])
      assert.deepStrictEqual((yield* sql<{ run: string }>`SELECT run FROM consent_log_verify_runs`).map((r) => r.run), [running])
    }).pipe(Effect.provide(fresh())), { timeout: 30_000 })
})
