import type { StorePorts } from "@cmp/core"
import { migrations, SqlStorage } from "@cmp/store-sql"
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

export const clientLayer = (options: PgStoreOptions) =>
  PgClient.layer({
    url: Redacted.make(options.url),
    maxConnections: options.maxConnections,
    // Keys inside JSON values are data (webhook payloads, configs): never renamed.
    transformJson: false,
    applicationName: "consent-platform"
  })

/** The core storage ports on PostgreSQL, migrated on start. */
export const layer = (
  options: PgStoreOptions
): Layer.Layer<StorePorts | SqlClient.SqlClient> =>
  SqlStorage.layer.pipe(
    Layer.provideMerge(migrate.pipe(Layer.provideMerge(clientLayer(options)))),
    Layer.orDie
  )

/**
 * PostgreSQL at a URL, as a host hands it to the platform:
 * `createPlatform({ store: postgres({ url: "postgres://…", maxConnections: 10 }) })`.
 */
export const postgres = (options: PgStoreOptions): Layer.Layer<StorePorts> =>
  Layer.suspend(() => layer(options))
