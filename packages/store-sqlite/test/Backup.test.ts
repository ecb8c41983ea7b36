import { assert, describe, it } from "@effect/vitest"
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { SqliteBackup } from "../src/index.js"

/**
 * `SqliteBackup.backup`: a copy of every committed transaction, the ones still in the `-wal`
 * file included, taken while another process writes; never over an existing file, and nothing
 * left behind when it fails.
 */

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "cmp-sqlite-backup-"))

/** A WAL database whose commits all stay in its `-wal` file while `db` is open (no checkpoint). */
const walDatabase = (file: string) => {
  const db = new Database(file)
  db.pragma("journal_mode = WAL")
  db.pragma("wal_autocheckpoint = 0")
  db.exec("CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
  return db
}

const idsOf = (file: string): Array<number> => {
  const db = new Database(file, { readonly: true })
  try {
    assert.strictEqual(db.pragma("integrity_check", { simple: true }), "ok")
    return db.prepare("SELECT id FROM rows ORDER BY id").all().map((r) => (r as { id: number }).id)
  } finally {
    db.close()
  }
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1)

describe("SqliteBackup.backup", () => {
  it.effect("copies every committed row, those only in the -wal file too, into a file its owner alone reads", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const source = path.join(dir, "consent.db")
      const db = walDatabase(source)
      const insert = db.prepare("INSERT INTO rows (id, body) VALUES (?, ?)")
      for (let i = 1; i <= 2000; i++) insert.run(i, "x".repeat(200))
      // The main file holds no row yet: a copy of it alone would lose them all.
      assert.isAbove(fs.statSync(`${source}-wal`).size, fs.statSync(source).size)
      const destination = path.join(dir, "backup.db")
      const done = yield* SqliteBackup.backup({ filename: source, destination })
      db.close()
      assert.deepStrictEqual(idsOf(destination), range(2000))
      assert.strictEqual(done.path, destination)
      assert.strictEqual(done.bytes, fs.statSync(destination).size)
      assert.strictEqual(done.pages * 4096, done.bytes)
      assert.strictEqual(fs.statSync(destination).mode & 0o077, 0)
      assert.deepStrictEqual(fs.readdirSync(dir).filter((f) => f.includes("partial")), [])
      fs.rmSync(dir, { recursive: true, force: true })
    }))

  it.live("taken while another process keeps committing, finishes (where steps of 100 pages start over at every commit) and holds every transaction committed before it began, in order, none half-way", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const source = path.join(dir, "consent.db")
      // Large enough (about 12 MB) that a backup in steps of 100 pages would see a commit
      // between two steps, and start over, again and again.
      const db = walDatabase(source)
      const fill = db.prepare("INSERT INTO rows (id, body) VALUES (?, ?)")
      db.transaction(() => {
        for (let i = 1; i <= 20_000; i++) fill.run(i, "y".repeat(500))
      })()
      db.close()
      // One row per transaction, ids in commit order, until killed.
      const writer = spawn(process.execPath, ["-e", `
        const Database = require(${JSON.stringify(createRequire(import.meta.url).resolve("better-sqlite3"))})
        const db = new Database(${JSON.stringify(source)})
        db.pragma("busy_timeout = 5000")
        const insert = db.prepare("INSERT INTO rows (id, body) VALUES (?, ?)")
        let i = 20000
        const step = () => { for (let k = 0; k < 20; k++) insert.run(++i, "y".repeat(500)); setImmediate(step) }
        step()
      `], { stdio: "ignore" })
      try {
        const reader = new Database(source, { readonly: true })
        const committed = () => (reader.prepare("SELECT count(*) AS n FROM rows").get() as { n: number }).n
        while (committed() < 20_500) yield* Effect.sleep("10 millis")
        const before = committed()
        reader.close()
        const destination = path.join(dir, "backup.db")
        yield* SqliteBackup.backup({ filename: source, destination })
        const ids = idsOf(destination)
        assert.isAtLeast(ids.length, before)
        assert.deepStrictEqual(ids, range(ids.length))
      } finally {
        writer.kill("SIGKILL")
        fs.rmSync(dir, { recursive: true, force: true })
      }
    }), 30_000)

  it.effect("never replaces a file, names what is missing, and leaves nothing when it fails", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const source = path.join(dir, "consent.db")
      walDatabase(source).close()
      const taken = path.join(dir, "taken.db")
      fs.writeFileSync(taken, "an earlier backup")
      const failure = (destination: string, filename = source) =>
        Effect.map(Effect.either(SqliteBackup.backup({ filename, destination })), (e) => {
          assert.isTrue(Either.isLeft(e))
          const error = (e as Either.Left<SqliteBackup.SqliteBackupFailed, unknown>).left
          assert.strictEqual(error._tag, "SqliteBackupFailed")
          return error.message
        })
      assert.strictEqual(yield* failure(taken), `${taken} exists: a backup never replaces a file`)
      assert.strictEqual(fs.readFileSync(taken, "utf8"), "an earlier backup")
      assert.strictEqual(yield* failure(source), `${source} exists: a backup never replaces a file`)
      assert.strictEqual(yield* failure(path.join(dir, "none", "b.db")), `The directory ${path.join(dir, "none")} does not exist`)
      assert.strictEqual(yield* failure(path.join(dir, "b.db"), path.join(dir, "missing.db")), `There is no database at ${path.join(dir, "missing.db")}`)
      // Not a database: SQLite refuses to read it, and the partial copy goes.
      const notDb = path.join(dir, "not-a-database.db")
      fs.writeFileSync(notDb, "x".repeat(8192))
      assert.match(yield* failure(path.join(dir, "c.db"), notDb), /^The backup to .*c\.db failed: /)
      assert.deepStrictEqual(fs.readdirSync(dir).sort(), ["consent.db", "not-a-database.db", "taken.db"])
      fs.rmSync(dir, { recursive: true, force: true })
    }))
})
