import * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Unavailable from "./Unavailable.js"
import { dialectOf } from "./SqlValues.js"

/**
 * The row counts the database keeps (migration 0019): for each counted table, `<table>_counts`
 * holds how many rows it has per value of a few columns, kept by triggers in the writing
 * transaction. A count whose conditions name only those columns is the sum of the matching
 * count rows, whatever the table holds.
 */
export const counted: ReadonlyMap<string, ReadonlyArray<string>> = new Map([
  ["consent_users", ["organization_id"]],
  ["consent_events", ["organization_id"]],
  ["consent_proofs", ["organization_id"]],
  ["webhook_deliveries", ["organization_id", "webhook_id", "status"]]
])

export const countsOf = (table: string) => `${table}_counts`

/** How often a PostgreSQL store folds the committed transactions' slots into each count's slot 0. */
export const FOLD_EVERY = Duration.seconds(1)

/**
 * PostgreSQL: each writing transaction adds its difference to a count row of its own (its
 * transaction id as `slot`), so writers never wait for each other's counts. The committed slots
 * are folded into slot 0 here, which keeps the rows a count sums few. One statement per table
 * moves them (rows a reader sums at one instant, before or after it), under a lock only one
 * server's fold takes at a time; a count left at zero goes. Answers how many counts it wrote, or
 * false when another server holds the lock. SQLite's triggers write slot 0 directly: nothing to fold.
 */
const foldRows = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  if (dialectOf(sql) !== "pg") return false
  return yield* sql.withTransaction(Effect.gen(function*() {
    const [lock] = yield* sql<{ got: boolean }>`SELECT pg_try_advisory_xact_lock(hashtextextended('cmp:row-counts', 0)) AS got`
    if (lock?.got !== true) return false
    let folded = 0
    for (const [table, by] of counted) {
      const t = sql(countsOf(table))
      const columns = sql.csv(by.map((c) => sql`${sql(c)}`))
      const left = yield* sql<Record<string, unknown>>`WITH moved AS (DELETE FROM ${t} WHERE slot > 0 RETURNING ${columns}, row_count)
        INSERT INTO ${t} (${columns}, slot, row_count) SELECT ${columns}, 0, SUM(row_count) FROM moved GROUP BY ${columns}
        ON CONFLICT (${columns}, slot) DO UPDATE SET row_count = ${t}.row_count + excluded.row_count
        RETURNING ${columns}, row_count`
      folded += left.length
      // Rare (after removals), so one statement each.
      for (const r of left) {
        if (Number(r.row_count) !== 0) continue
        yield* sql`DELETE FROM ${t} WHERE ${sql.and(by.map((c) => sql`${sql(c)} = ${r[c] as string}`))} AND slot = 0 AND row_count = 0`
      }
    }
    return folded
  }))
})

/** The fold, answering whether it ran (false when another server's fold holds the lock). */
export const fold: Effect.Effect<boolean, never, SqlClient.SqlClient> = foldRows.pipe(
  Effect.map((folded) => folded !== false),
  Unavailable.orDie
)

/**
 * PostgreSQL: the count rows folds removed, vacuumed away. Every writing transaction leaves a row
 * that a fold deletes within a second, and until PostgreSQL vacuums the table, each deleted row
 * stays in it and in its index, where every count reads past it. Autovacuum does that where it
 * runs; on a server where it is off, a count would read past a row per transaction since the
 * store began (100,000 writes made a page of users three times as costly). So the store vacuums
 * these few small tables itself, after a fold that moved rows and once when it opens (a store
 * left by a server of an earlier release, or stopped between a fold and its vacuum). It never
 * waits: a table another server is vacuuming is skipped (`SKIP_LOCKED`), and writers and
 * readers go on meanwhile (a vacuum takes no lock they wait for).
 */
export const vacuum: Effect.Effect<void, never, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  if (dialectOf(sql) !== "pg") return
  yield* sql.unsafe(`VACUUM (SKIP_LOCKED) ${[...counted.keys()].map(countsOf).join(", ")}`)
}).pipe(Unavailable.orDie)

/** The store's fold, every `FOLD_EVERY` while the store is open (PostgreSQL only). */
export const layer: Layer.Layer<never, never, SqlClient.SqlClient> = Layer.scopedDiscard(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    if (dialectOf(sql) !== "pg") return
    let vacuumed = false
    const once = foldRows.pipe(
      Effect.flatMap((folded) => {
        if (vacuumed && (folded === false || folded === 0)) return Effect.void
        return Effect.zipRight(vacuum, Effect.sync(() => (vacuumed = true)))
      }),
      Effect.provideService(SqlClient.SqlClient, sql),
      // A fold or a vacuum that cannot run now (the database restarting) runs at the next turn;
      // the counts stay exact meanwhile, only their rows grow.
      Effect.catchAllCause((cause) => Effect.logDebug("row counts not folded", cause))
    )
    // Housekeeping in real time, on the live clock whatever clock the platform's rules read: a
    // clock moved on by days (a test's, a host's simulation) would otherwise run a day's folds.
    const live = Clock.make()
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.withClock(Effect.sleep(FOLD_EVERY), live), once)))
  })
)
