import type { StorePorts } from "@cmp/core"
import { migrations, SqlChangeFeed, SqlLogScratch, SqlStorage } from "@cmp/store-sql"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"

/** The migrations both stores share (`@cmp/store-sql`), rendered for this dialect when run. */
export { migrations }

export interface PgStoreOptions {
  /** `postgres://user:password@host:port/database` */
  readonly url: string
  /** Pool size; 1 for a single-connection server such as PGlite's socket. */
  readonly maxConnections?: number | undefined
  /**
   * Hear the other servers' changes (`LISTEN`, on one connection of its own beside the pool,
   * opened once something listens: the platform does): default true, but false with
   * `maxConnections: 1`, a server that takes one connection. Without it this server still tells
   * the others, and sees their changes within its caches' ttl and its dispatcher's poll.
   */
  readonly listen?: boolean | undefined
}

/** Any number, the same in every process: the key of the migration lock. */
const MIGRATION_LOCK = 7_243_981_551

/**
 * Several servers may start at once on a new database. The migrator serialises itself with a
 * table lock, but only once its table exists: it probes for it with a query that fails when
 * absent, so it cannot run inside an enclosing transaction. Its table is therefore created
 * first, under an advisory lock, exactly as the migrator would create it.
 */
const migrate = Layer.effectDiscard(
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`.pipe(
        Effect.zipRight(sql`CREATE TABLE IF NOT EXISTS effect_sql_migrations (
          migration_id integer primary key,
          created_at timestamp with time zone not null default now(),
          name text not null
        )`)
      )
    ).pipe(Effect.zipRight(Migrator.make({})({ loader: Migrator.fromRecord(migrations) })))).pipe(
      Effect.tapErrorCause((cause) => Effect.logError("PostgreSQL migration failed", cause)),
      Effect.orDie
    )
)

/** The pool, and where a consent log verify keeps its scratch: unlogged tables reached through the pool. */
export const clientLayer = (options: PgStoreOptions) =>
  Layer.effect(SqlLogScratch.ScratchDatabase, Effect.map(SqlClient.SqlClient, SqlLogScratch.sharedScratch)).pipe(
    Layer.provideMerge(PgClient.layer({
      url: Redacted.make(options.url),
      maxConnections: options.maxConnections,
      // Keys inside JSON values are data (webhook payloads, configs): never renamed.
      transformJson: false,
      applicationName: "consent-platform"
    }))
  )

/** The core storage ports on PostgreSQL, migrated on start. */
export const layer = (
  options: PgStoreOptions
): Layer.Layer<StorePorts | SqlClient.SqlClient> => {
  const listening = options.listen ?? options.maxConnections !== 1
  const client = clientLayer(options)
  const storage = listening
    ? SqlStorage.layerListening.pipe(Layer.provide(Layer.effect(SqlChangeFeed.Listen, Effect.map(PgClient.PgClient, (pg) => pg.listen))))
    : SqlStorage.layer
  return storage.pipe(
    Layer.provideMerge(migrate.pipe(Layer.provideMerge(client))),
    Layer.orDie
  )
}

/**
 * PostgreSQL at a URL, as a host hands it to the platform:
 * `createPlatform({ store: postgres({ url: "postgres://…", maxConnections: 10 }) })`.
 */
export const postgres = (options: PgStoreOptions): Layer.Layer<StorePorts> =>
  Layer.suspend(() => layer(options))
