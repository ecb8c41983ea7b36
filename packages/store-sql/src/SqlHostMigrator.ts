import { type HostMigration, HostMigrator } from "@cmp/core"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { dialectOf } from "./SqlValues.js"

/**
 * A host's migrations, run by the same migrator as the store's own, after them. They are
 * recorded in a table of their own: the migrator runs only the migrations numbered above the
 * last one it recorded, so a host's numbers in the store's table would hide the store's next ones.
 */

/** Where a host's migrations are recorded. */
export const TABLE = "host_migrations"

/** What the migrator runs: `NNNN_name`, numbered as it orders them. */
const NAME = /^\d+_[A-Za-z0-9_]+$/

/** Any number, the same in every process: the key of the host migrations' lock on PostgreSQL. */
const LOCK = 7_243_981_552

const statementsOf = (migration: HostMigration, dialect: "sqlite" | "pg"): ReadonlyArray<string> =>
  "sqlite" in migration ? (dialect === "pg" ? migration.postgres : migration.sqlite) : migration

export const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const dialect = dialectOf(sql)
  // On PostgreSQL the migrator finds its table with a query that fails when it is absent, which
  // cannot run inside a transaction: servers starting at once create it first, under a lock, as
  // the store's own migrations do.
  const table = dialect === "pg"
    ? sql.withTransaction(
      sql`SELECT pg_advisory_xact_lock(${LOCK})`.pipe(
        Effect.zipRight(sql.unsafe(`CREATE TABLE IF NOT EXISTS ${TABLE} (
          migration_id integer primary key,
          created_at timestamp with time zone not null default now(),
          name text not null
        )`))
      )
    )
    : Effect.void
  return HostMigrator.of({
    migrate: (migrations) => {
      const names = Object.keys(migrations)
      if (names.length === 0) return Effect.void
      const misnamed = names.filter((name) => !NAME.test(name))
      if (misnamed.length > 0) {
        return Effect.dieMessage(`A host migration is named NNNN_name (its number orders it): not ${misnamed.join(", ")}`)
      }
      const loader = Migrator.fromRecord(Object.fromEntries(names.map((name) => [
        name,
        Effect.forEach(statementsOf(migrations[name]!, dialect), (statement) => sql.unsafe(statement), { discard: true })
      ])))
      return table.pipe(
        Effect.zipRight(Migrator.make({})({ loader, table: TABLE })),
        Effect.tapErrorCause((cause) => Effect.logError("Host migration failed", cause)),
        Effect.orDie,
        Effect.asVoid,
        Effect.provideService(SqlClient.SqlClient, sql)
      )
    }
  })
})

export const layer: Layer.Layer<HostMigrator, never, SqlClient.SqlClient> = Layer.effect(HostMigrator, make)
