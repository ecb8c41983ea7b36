import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as path from "node:path"

/**
 * An online backup of a SQLite store with SQLite's backup API, taken while servers keep writing
 * to it: the copy is the database as one read transaction saw it, so it holds every transaction
 * committed before the backup began and none half-way. A copy of the file (`cp`) would not be:
 * the recent commits live in the `-wal` file beside it, and pages copied while a checkpoint
 * moves them into the main file mix two states.
 */

export interface SqliteBackupOptions {
  /** The store's database file (what `SQLITE_PATH` names). */
  readonly filename: string
  /** The file to write; it must not exist yet. */
  readonly destination: string
}

export interface SqliteBackupResult {
  /** The backup's absolute path. */
  readonly path: string
  readonly bytes: number
  /** The database pages copied (of `PRAGMA page_size` bytes each). */
  readonly pages: number
  readonly durationMs: number
}

export class SqliteBackupFailed extends Schema.TaggedError<SqliteBackupFailed>()("SqliteBackupFailed", {
  message: Schema.String
}) {}

/**
 * Every page in one step of the backup API. Steps of a few pages (better-sqlite3 copies 100 per
 * turn of the event loop by default) let writers in between, and SQLite restarts a backup whose
 * source another connection changed: under a steady stream of consent events a large database
 * might never finish. One step is one read transaction, which in WAL mode never blocks writers.
 */
const ALL_PAGES = 0x7fffffff

const fail = (message: string) => new SqliteBackupFailed({ message })

/** Creates `file` readable by its owner only, as the store creates its database: a backup holds the same keys. */
const createPrivately = (file: string) => fs.closeSync(fs.openSync(file, "wx", 0o600))

const removeQuietly = (file: string) => fs.rmSync(file, { force: true })

/**
 * Writes a consistent copy of the database at `filename` to `destination`. The copy is written
 * beside the destination under another name and linked into place once whole, so a failed or
 * interrupted backup never leaves a file that looks like a backup; an existing file is never
 * replaced (the store's own file included).
 */
export const backup = (options: SqliteBackupOptions): Effect.Effect<SqliteBackupResult, SqliteBackupFailed> =>
  Effect.suspend(() => {
    const started = performance.now()
    const source = path.resolve(options.filename)
    const destination = path.resolve(options.destination)
    if (!fs.existsSync(source)) return Effect.fail(fail(`There is no database at ${source}`))
    if (fs.existsSync(destination)) return Effect.fail(fail(`${destination} exists: a backup never replaces a file`))
    if (!fs.existsSync(path.dirname(destination))) return Effect.fail(fail(`The directory ${path.dirname(destination)} does not exist`))
    const partial = `${destination}.partial-${process.pid}`
    const open = Effect.acquireRelease(
      Effect.try({
        // Read-write but never written: a read-only connection cannot open a WAL database whose
        // `-shm` file is missing (no server running).
        try: () => {
          const db = new Database(source, { fileMustExist: true })
          db.pragma("busy_timeout = 5000")
          return db
        },
        catch: (e) => fail(`Cannot open ${source}: ${describe(e)}`)
      }),
      (db) => Effect.sync(() => db.close())
    )
    const copy = (db: Database.Database) =>
      Effect.tryPromise({
        try: async () => {
          createPrivately(partial)
          return await db.backup(partial, { progress: () => ALL_PAGES })
        },
        catch: (e) => fail(`The backup to ${destination} failed: ${describe(e)}`)
      })
    const place = Effect.try({
      // A link fails when the destination appeared meanwhile, where a rename would replace it.
      try: () => {
        fs.linkSync(partial, destination)
        removeQuietly(partial)
      },
      catch: (e) => fail(`Cannot write ${destination}: ${describe(e)}`)
    })
    return Effect.scoped(Effect.flatMap(open, copy)).pipe(
      Effect.tap(() => place),
      Effect.map((progress) => ({
        path: destination,
        bytes: fs.statSync(destination).size,
        pages: progress.totalPages,
        durationMs: Math.round(performance.now() - started)
      })),
      Effect.onError(() => Effect.sync(() => removeQuietly(partial)))
    )
  })

const describe = (e: unknown) => (e instanceof Error ? e.message : String(e))
