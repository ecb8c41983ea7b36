import type { DeliveryQueue, Storage, UnitOfWork, UsageStore } from "@cmp/core"
import { migrations, SqlStorage } from "@cmp/store-sql"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as path from "node:path"

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
      sql.unsafe("PRAGMA cache_size = -32768")
    ])).pipe(Effect.orDie)
)

const migrate = Layer.effectDiscard(
  Migrator.make({})({ loader: Migrator.fromRecord(migrations) }).pipe(
    Effect.tapErrorCause((cause) => Effect.logError("SQLite migration failed", cause)),
    Effect.orDie
  )
)

/** The SQLite client alone (WAL mode is the client's default). */
export const clientLayer = (options: SqliteStoreOptions) => {
  if (options.filename !== ":memory:") fs.mkdirSync(path.dirname(path.resolve(options.filename)), { recursive: true })
  return SqliteClient.layer({ filename: options.filename })
}

/** The core storage ports on SQLite, migrated on start. */
export const layer = (
  options: SqliteStoreOptions
): Layer.Layer<Storage | UnitOfWork | UsageStore | DeliveryQueue | SqlClient.SqlClient> =>
  SqlStorage.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(pragmas, migrate).pipe(Layer.provideMerge(clientLayer(options)))),
    Layer.orDie
  )
