import { StoreProbe, StoreUnavailable } from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { dialectOf } from "./SqlValues.js"
import * as Unavailable from "./Unavailable.js"

/** A timestamp as either driver returns it: a `Date` (pg) or ISO text (SQLite). */
const millisOf = (value: unknown): number => (value instanceof Date ? value.getTime() : Date.parse(String(value)))

/**
 * The store's answers to an operator: a ping and the outbox's backlog, the same SQL on both
 * dialects, and on PostgreSQL the platform's connections by state. The ping reads the migrations' own table rather than `SELECT 1`, which SQLite answers
 * without touching the file: it fails when the database cannot be read, and when it was never
 * migrated.
 */
export const make = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const unanswered = (timeoutMs: number) =>
    new StoreUnavailable({ reason: "unreachable", message: `the database did not answer within ${timeoutMs} ms` })
  return StoreProbe.of({
    ping: (timeoutMs) =>
      sql`SELECT 1 FROM effect_sql_migrations LIMIT 1`.pipe(
        Effect.catchAll((e) =>
          Effect.fail(Unavailable.classify(e) ?? new StoreUnavailable({ reason: "io", message: "the database cannot be read or was never migrated" }))
        ),
        Effect.timeoutFail({ duration: timeoutMs, onTimeout: () => unanswered(timeoutMs) }),
        Effect.asVoid
      ),
    outbox: Effect.gen(function*() {
      // `delivering` is pending too: leased, not yet settled. Each status through its own
      // partial index (a condition over both would read the whole table).
      const rows = yield* sql<{ n: unknown; oldest: unknown }>`SELECT COUNT(*) AS n, MIN(created_at) AS oldest
          FROM webhook_deliveries WHERE status = 'pending'
        UNION ALL SELECT COUNT(*) AS n, MIN(created_at) AS oldest
          FROM webhook_deliveries WHERE status = 'delivering'`
      const pending = rows.reduce((n, r) => n + Number(r.n ?? 0), 0)
      const oldest = rows.map((r) => r.oldest).filter((t) => t != null).map(millisOf)
      if (pending === 0 || oldest.length === 0) return { pending, oldestAgeSeconds: 0 }
      const now = yield* Clock.currentTimeMillis
      return { pending, oldestAgeSeconds: Math.max(0, (now - Math.min(...oldest)) / 1000) }
    }).pipe(Unavailable.orDie),
    // Every process of the platform names its connections alike (`application_name`).
    connections: dialectOf(sql) === "pg"
      ? sql<{ state: string | null; n: unknown }>`SELECT state, COUNT(*) AS n FROM pg_stat_activity
          WHERE application_name = current_setting('application_name') GROUP BY state`.pipe(
          Effect.map((rows) => rows.map((r) => ({ state: r.state ?? "unknown", count: Number(r.n) }))),
          Unavailable.orDie
        )
      : Effect.succeed([])
  })
})

export const layer: Layer.Layer<StoreProbe, never, SqlClient.SqlClient> = Layer.effect(StoreProbe, make)
