import type { StorePorts } from "@cmp/core"
import { type Execute, migrations, type SqlLogScratch, SqlStorage } from "@cmp/store-sql"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as path from "node:path"
import * as SqliteConnection from "./SqliteConnection.js"

/** The migrations both stores share (`@cmp/store-sql`), rendered for this dialect when run. */
export { migrations }

export interface SqliteStoreOptions {
  /** A file path, or `:memory:` for tests. */
  readonly filename: string
}

const pragmas = Layer.effectDiscard(
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.all([
      // Another process (the bootstrap command) may hold the write lock for a moment.
      sql.unsafe("PRAGMA busy_timeout = 5000"),
      sql.unsafe("PRAGMA synchronous = NORMAL"),
      // 32 MiB of page cache (the default is 2 MiB): the indexes a consent event touches stay in
      // memory instead of being read back from the file on every insert.
      sql.unsafe("PRAGMA cache_size = -32768"),
      // Each consent event of a group commit runs in a savepoint of the batch's transaction, so
      // SQLite keeps a statement journal of the pages the batch changes. Past 64 KiB that journal
      // goes to a temporary file, created and deleted per transaction and written a page per
      // system call: about 40 % of SQLite's CPU per event. In memory it holds the changed pages
      // of one transaction at most, and temporary tables and sorts stay in memory too.
      sql.unsafe("PRAGMA temp_store = MEMORY")
    ])).pipe(Effect.orDie)
)

const migrate = Layer.effectDiscard(
  Migrator.make({})({ loader: Migrator.fromRecord(migrations) }).pipe(
    Effect.tapErrorCause((cause) => Effect.logError("SQLite migration failed", cause)),
    Effect.orDie
  )
)

/**
 * Creates the database file, and the directories leading to it, readable by their owner only:
 * the file holds the keys that sign operator tokens and open sealed secrets when they are not
 * configured. SQLite gives the `-wal`, `-shm` and journal files the mode of the database file.
 * A file or directory that already exists keeps the mode its owner chose.
 */
const createPrivately = (filename: string) => {
  fs.mkdirSync(path.dirname(path.resolve(filename)), { recursive: true, mode: 0o700 })
  try {
    fs.closeSync(fs.openSync(filename, "wx", 0o600))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
  }
}

/** The SQLite client alone, in WAL mode. */
export const clientLayer = (
  options: SqliteStoreOptions
): Layer.Layer<SqlClient.SqlClient | Execute.Direct | SqlLogScratch.ScratchDatabase> => {
  // An empty file is an empty database to SQLite.
  if (options.filename !== ":memory:") createPrivately(options.filename)
  return SqliteConnection.layer(options.filename)
}

/** A file made before, or copied in, may be readable by others: said at start, since it holds keys. */
const warnIfShared = (filename: string) =>
  Layer.effectDiscard(Effect.suspend(() => {
    if (filename === ":memory:") return Effect.void
    const mode = fs.statSync(filename).mode & 0o777
    return (mode & 0o077) === 0 ? Effect.void : Effect.logWarning(
      `The SQLite file ${filename} can be read by other users (mode ${mode.toString(8)}): it holds every ` +
        "stored secret and the keys kept in the database; make it and its directory readable by the server's user only"
    )
  }))

/** The core storage ports on SQLite, migrated on start. */
export const layer = (
  options: SqliteStoreOptions
): Layer.Layer<StorePorts | SqlClient.SqlClient> =>
  SqlStorage.layer.pipe(
    Layer.provideMerge(
      Layer.mergeAll(pragmas, migrate, warnIfShared(options.filename)).pipe(Layer.provideMerge(clientLayer(options)))
    ),
    Layer.orDie
  )

/**
 * SQLite on a file (`:memory:` for tests), as a host hands it to the platform:
 * `createPlatform({ store: sqlite({ filename: "./data/consent.db" }) })`. Nothing is opened or
 * created until the platform builds it, so a platform that refuses to start leaves no file.
 */
export const sqlite = (options: SqliteStoreOptions): Layer.Layer<StorePorts> =>
  Layer.suspend(() => layer(options))
