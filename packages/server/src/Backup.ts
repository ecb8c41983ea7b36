import { PlatformConfig } from "@cmp/platform"
import { SqliteBackup } from "@cmp/store-sqlite"
import * as Effect from "effect/Effect"
import * as path from "node:path"
import * as StoreConfig from "./StoreConfig.js"

/**
 * `pnpm backup <destination file>`: an online backup of the SQLite database `SQLITE_PATH` names,
 * taken with SQLite's backup API while servers and workers keep writing to it. Prints the
 * backup's path, size, pages and duration as JSON; exits 0 once the file is whole, 1 when the
 * backup failed (no file is left), 2 when asked wrongly. PostgreSQL is backed up with its own
 * `pg_dump` (docs/operating.md, "Backups and restores").
 */

const usage = "usage: backup <destination file> (a new file: an existing one is never replaced)"

export const backupCommand = async (args: ReadonlyArray<string>) => {
  const destination = args.find((a) => !a.startsWith("-"))
  if (destination === undefined || destination.trim() === "" || args.length !== 1) {
    console.error(usage)
    process.exitCode = 2
    return
  }
  const { base, store } = await Effect.runPromise(Effect.all({ base: PlatformConfig.baseDirectory, store: StoreConfig.settings }))
  if (store._tag === "postgres") {
    console.error("DATABASE_URL names a PostgreSQL database: back it up with pg_dump -Fc (docs/operating.md, \"Backups and restores\")")
    process.exitCode = 2
    return
  }
  if (store.options.filename === ":memory:") {
    console.error("SQLITE_PATH is :memory:, which no other process can read: there is nothing to back up")
    process.exitCode = 2
    return
  }
  const done = await Effect.runPromise(Effect.either(SqliteBackup.backup({ filename: store.options.filename, destination: path.resolve(base, destination) })))
  if (done._tag === "Left") {
    console.error(done.left.message)
    process.exitCode = 1
    return
  }
  const { bytes, durationMs, pages, path: written } = done.right
  process.stdout.write(`${JSON.stringify({ path: written, bytes, pages, duration_ms: durationMs })}\n`)
}
