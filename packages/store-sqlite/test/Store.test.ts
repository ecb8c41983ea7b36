import { ConsentLogStore, Storage, Tables } from "@cmp/core"
import { SqlLogScratch, SqlStorage } from "@cmp/store-sql"
import { migrationSuite, schemaSuite } from "@cmp/test-support/schema-contract"
import { suite } from "@cmp/test-support/store-contract"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqliteStore } from "../src/index.js"

/** A fresh database file name in the temp directory. */
const tempFile = () => path.join(os.tmpdir(), `cmp-store-${crypto.randomUUID()}.sqlite`)

/** The database file and, in WAL mode, its `-wal` and `-shm` companions. */
const removeDatabase = (file: string) =>
  Effect.sync(() => {
    for (const suffix of ["", "-wal", "-shm", "-journal"]) fs.rmSync(file + suffix, { force: true })
  })

/** A store on a new temp file, deleted (with its WAL files) once the layer is released. */
const fileLayer = () =>
  Layer.unwrapScoped(
    Effect.acquireRelease(Effect.sync(tempFile), removeDatabase).pipe(
      Effect.map((filename) => SqliteStore.layer({ filename }))
    )
  )

suite("sqlite :memory:", () => SqliteStore.layer({ filename: ":memory:" }))

suite("sqlite temp file (WAL)", fileLayer)

schemaSuite("sqlite", () => SqliteStore.layer({ filename: ":memory:" }))

migrationSuite("sqlite", {
  migrations: SqliteStore.migrations,
  makeClient: () => SqliteStore.clientLayer({ filename: ":memory:" }),
  storage: SqlStorage.layer
})

describe("SqliteStore", () => {
  const key = {
    id: "key-1",
    name: "operator",
    description: "kept across restarts",
    organization_id: "org-1",
    enabled: true,
    is_internal: true,
    secret_hash: "hash",
    previous_secret_hash: null,
    previous_secret_expires_at: null,
    created_at: "2024-01-01T00:00:00.000Z",
    updated_at: "2024-01-01T00:00:00.000Z",
    version: 1
  }

  it.effect("migrations are idempotent: reopening a file migrates nothing twice and keeps the data", () =>
    Effect.gen(function*() {
      const filename = tempFile()
      yield* Effect.addFinalizer(() => removeDatabase(filename))
      const open = <A, E>(effect: Effect.Effect<A, E, Storage | SqlClient.SqlClient>) =>
        Effect.provide(effect, SqliteStore.layer({ filename }))
      const keys = Effect.map(Storage, (s) => s.repository(Tables.keys))
      const migrationsApplied = Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql<{ migration_id: number; name: string }>`SELECT migration_id, name FROM effect_sql_migrations`)

      yield* open(Effect.flatMap(keys, (repo) => repo.create(key)))
      for (let i = 0; i < 2; i++) {
        const [stored, applied] = yield* open(
          Effect.all([Effect.flatMap(keys, (repo) => repo.get("key-1")), migrationsApplied])
        )
        assert.deepStrictEqual(stored, Option.some(key))
        // Each declared migration exactly once, in order, however often the file is reopened.
        const declared = Object.keys(SqliteStore.migrations).map((k) => {
          const [id, ...name] = k.split("_")
          return [Number(id), name.join("_")]
        })
        assert.deepStrictEqual(applied.map((m) => [Number(m.migration_id), m.name]), declared)
      }
      yield* open(Effect.flatMap(keys, (repo) => repo.patch("key-1", { enabled: false }, 1)))
      const reopened = yield* open(Effect.flatMap(keys, (repo) => repo.get("key-1")))
      assert.deepStrictEqual(reopened, Option.some({ ...key, enabled: false, version: 2 }))
    }).pipe(Effect.scoped))

  it.effect("a file database runs in WAL mode", () =>
    Effect.gen(function*() {
      const mode = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql<{ journal_mode: string }>`PRAGMA journal_mode`)
      assert.strictEqual(mode[0]?.journal_mode, "wal")
    }).pipe(Effect.provide(fileLayer())))

  it.effect("a new database file, its WAL files and the directory made for it are readable by their owner only", () =>
    Effect.gen(function*() {
      const dir = path.join(os.tmpdir(), `cmp-store-${crypto.randomUUID()}`)
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      const filename = path.join(dir, "data", "consent.db")
      const mode = (file: string) => fs.statSync(file).mode & 0o777
      // Checked while the store is open: closing it folds the WAL back and removes its files.
      yield* Effect.flatMap(Storage, (s) => s.repository(Tables.keys).create(key)).pipe(
        Effect.andThen(() => {
          assert.strictEqual(mode(filename), 0o600)
          assert.strictEqual(mode(`${filename}-wal`), 0o600)
          assert.strictEqual(mode(`${filename}-shm`), 0o600)
        }),
        Effect.provide(SqliteStore.layer({ filename }))
      )
      assert.strictEqual(mode(path.dirname(filename)), 0o700)
      assert.strictEqual(mode(dir), 0o700)
    }).pipe(Effect.scoped))

  it.effect("a database file others can read is reported at start; a private one is not", () =>
    Effect.gen(function*() {
      const shared = tempFile()
      const owned = tempFile()
      yield* Effect.addFinalizer(() => Effect.zipRight(removeDatabase(shared), removeDatabase(owned)))
      fs.writeFileSync(shared, "", { mode: 0o644 })
      fs.chmodSync(shared, 0o644)
      const warnings: Array<string> = []
      const capture = Logger.replace(
        Logger.defaultLogger,
        Logger.make(({ logLevel, message }) => {
          if (logLevel._tag === "Warning") warnings.push(String(Array.isArray(message) ? message.join(" ") : message))
        })
      )
      const open = (filename: string) =>
        Effect.provide(Effect.flatMap(Storage, (s) => s.repository(Tables.keys).count([])), SqliteStore.layer({ filename })).pipe(
          Effect.provide(capture)
        )
      yield* open(owned)
      assert.deepStrictEqual(warnings, [])
      yield* open(shared)
      assert.strictEqual(warnings.length, 1)
      assert.include(warnings[0], shared)
      assert.include(warnings[0], "can be read by other users (mode 644)")
    }).pipe(Effect.scoped))

  it.effect("two stores open on one file see each other's writes", () =>
    Effect.gen(function*() {
      const filename = tempFile()
      yield* Effect.addFinalizer(() => removeDatabase(filename))
      const a = yield* Layer.build(SqliteStore.layer({ filename }))
      const b = yield* Layer.build(SqliteStore.layer({ filename }))
      const repoA = Effect.map(Storage, (s) => s.repository(Tables.keys)).pipe(Effect.provide(a))
      const repoB = Effect.map(Storage, (s) => s.repository(Tables.keys)).pipe(Effect.provide(b))
      yield* Effect.flatMap(repoA, (repo) => repo.create(key))
      assert.deepStrictEqual(yield* Effect.flatMap(repoB, (repo) => repo.get("key-1")), Option.some(key))
      const won = yield* Effect.flatMap(repoB, (repo) => repo.patch("key-1", { enabled: false }, 1))
      assert.strictEqual(won.version, 2)
      const lost = yield* Effect.flip(Effect.flatMap(repoA, (repo) => repo.patch("key-1", { enabled: true }, 1)))
      assert.strictEqual(lost._tag, "Conflict")
    }).pipe(Effect.scoped))

  // The store's connection keeps temporary tables in memory: a scratch there grew with the log.
  it.effect("a consent log verify's scratch is a database of its own, never the store connection's temporary tables, and goes with the verify", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const log = yield* ConsentLogStore
      const temporaryTables = sql<{ name: string }>`SELECT name FROM sqlite_temp_master WHERE type = 'table'`
      const changes = Array.from({ length: 3000 }, (_, i) => ({
        subject: `consent_users:user-${i}`,
        shard: i % 4,
        seq: i + 1,
        digest: `digest-${i}`,
        kind: "consent_users",
        order: i
      }))
      const [found, tables] = yield* Effect.scoped(Effect.gen(function*() {
        const scratch = yield* log.scratch
        yield* scratch.noteChanges(changes)
        yield* scratch.noteRows([{ subject: "consent_users:user-7", digest: "digest-7", table: "consent_users", id: "user-7", shard: 3, order: 0 }])
        const tables = yield* temporaryTables
        return [(yield* scratch.mismatches(undefined, 5000)).found, tables] as const
      }))
      assert.deepStrictEqual(tables, [])
      // Every subject but the one noted with its row is gone.
      assert.strictEqual(found.length, 2999)
      // A second verify starts from nothing.
      const again = yield* Effect.scoped(Effect.flatMap(log.scratch, (scratch) => scratch.mismatches(undefined, 10)))
      assert.deepStrictEqual(again, { found: [], next: undefined })
    }).pipe(Effect.provide(SqliteStore.layer({ filename: ":memory:" }))))

  // Indexing a scratch is one statement, seconds long for a million events: the server's thread
  // must not run it.
  it.effect("a consent log verify's scratch runs its statements on a thread of its own: the event loop turns meanwhile", () =>
    Effect.gen(function*() {
      const { open } = yield* SqlLogScratch.ScratchDatabase
      const sql = yield* open
      let turned = false
      setImmediate(() => (turned = true))
      const [{ n }] = yield* sql<{ n: number }>`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 2000000) SELECT count(*) AS n FROM c`
      const turnedBefore = turned
      assert.strictEqual(n, 2_000_000)
      assert.isTrue(turnedBefore)
      // A statement it refuses is an error of the statement, and the scratch goes on.
      const refused = yield* Effect.flip(sql`SELECT * FROM no_such_table`)
      assert.strictEqual(refused._tag, "SqlError")
      assert.deepStrictEqual(yield* sql<{ one: number }>`SELECT 1 AS one`, [{ one: 1 }])
    }).pipe(Effect.scoped, Effect.provide(SqliteStore.clientLayer({ filename: ":memory:" }))), { timeout: 30_000 })

  it.effect("a statement's rows as a stream: every row in order; a statement SQLite refuses is a SqlError", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const rows = yield* Stream.runCollect(
        sql<{ n: number }>`WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 1000) SELECT n FROM c`.stream
      )
      assert.deepStrictEqual(Chunk.toReadonlyArray(rows).map((r) => r.n), Array.from({ length: 1000 }, (_, i) => i + 1))
      const refused = yield* Effect.flip(Stream.runCollect(sql`SELECT * FROM no_such_table`.stream))
      assert.strictEqual(refused._tag, "SqlError")
    }).pipe(Effect.provide(SqliteStore.layer({ filename: ":memory:" }))))
})
