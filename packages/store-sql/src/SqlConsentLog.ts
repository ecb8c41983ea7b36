import { ConsentLogStore, type LogEntry, type LogHead } from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Unavailable from "./Unavailable.js"
import { dialectOf } from "./SqlValues.js"

/**
 * The consent log over `SqlClient`. A chain's head row is what concurrent writers of that chain
 * queue on: each append updates it inside the caller's transaction, and the next writer's update
 * waits for that transaction to end and then sees its hash. An append is one statement on the
 * path of every consent write:
 * - PostgreSQL updates the head, hashing in SQL (`sha256`, the same formula as `link`), and
 *   inserts the entry from what the update returns.
 * - SQLite runs one write transaction at a time and hashes with `link`: the head this process
 *   last wrote is kept in memory, the update names the `seq` it expects (so a head another
 *   process moved, or a rolled-back append, is read again and the append retried), and the
 *   migration's trigger writes the entry the moved head describes.
 */
export const make = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const dialect = dialectOf(sql)

  const newHead = (organizationId: string, shard: number, at: string) =>
    sql`INSERT INTO consent_log_heads (organization_id, shard, seq, hash, changes, created_at)
      VALUES (${organizationId}, ${shard}, 0, '', '', ${at}) ON CONFLICT DO NOTHING`

  const appendPg = (organizationId: string, shard: number, changes: string, at: string) =>
    sql<{ seq: unknown; hash: string }>`WITH head AS (
      UPDATE consent_log_heads
      SET seq = seq + 1,
          hash = encode(sha256(convert_to(hash || E'\\n' || (seq + 1)::text || E'\\n' || ${changes}::text, 'UTF8')), 'hex'),
          changes = ${changes},
          created_at = ${at}
      WHERE organization_id = ${organizationId} AND shard = ${shard}
      RETURNING seq, hash
    )
    INSERT INTO consent_log (organization_id, shard, seq, created_at, changes, hash)
    SELECT ${organizationId}, ${shard}, head.seq, ${at}, ${changes}, head.hash FROM head
    RETURNING seq, hash`

  /** SQLite: the heads this process last wrote, by organization and chain. */
  const kept = new Map<string, { seq: number; hash: string }>()

  /** SQLite: the head as stored (made when the chain has none yet). */
  const readHead = (organizationId: string, shard: number, at: string) =>
    Effect.gen(function*() {
      const rows = yield* sql<{ seq: unknown; hash: string }>`SELECT seq, hash FROM consent_log_heads WHERE organization_id = ${organizationId} AND shard = ${shard}`
      if (rows.length > 0) return { seq: Number(rows[0]!.seq), hash: rows[0]!.hash }
      yield* newHead(organizationId, shard, at)
      return { seq: 0, hash: "" }
    })

  /** SQLite: moves the head from `from`, when it is still there; the trigger writes the entry. */
  const moveHead = (organizationId: string, shard: number, changes: string, at: string, from: { seq: number; hash: string }, hash: string) =>
    Effect.map(
      sql<{ seq: unknown }>`UPDATE consent_log_heads SET seq = ${from.seq + 1}, hash = ${hash}, changes = ${changes}, created_at = ${at}
        WHERE organization_id = ${organizationId} AND shard = ${shard} AND seq = ${from.seq} RETURNING seq`,
      (rows) => rows.length > 0
    )

  const append = (
    organizationId: string,
    shard: number,
    changes: string,
    at: string,
    link: (previous: string, seq: number) => string
  ): Effect.Effect<LogHead> =>
    Effect.gen(function*() {
      if (dialect === "pg") {
        let rows = yield* appendPg(organizationId, shard, changes, at)
        if (rows.length === 0) {
          // The chain's first entry: its head row is made once, then the append runs again.
          yield* newHead(organizationId, shard, at)
          rows = yield* appendPg(organizationId, shard, changes, at)
        }
        return { shard, seq: Number(rows[0]!.seq), hash: rows[0]!.hash }
      }
      const key = `${organizationId}\u0000${shard}`
      let from = kept.get(key) ?? (yield* readHead(organizationId, shard, at))
      let hash = link(from.hash, from.seq + 1)
      if (!(yield* moveHead(organizationId, shard, changes, at, from, hash))) {
        from = yield* readHead(organizationId, shard, at)
        hash = link(from.hash, from.seq + 1)
        if (!(yield* moveHead(organizationId, shard, changes, at, from, hash))) {
          return yield* Effect.dieMessage(`the head of consent log chain ${shard} moved while this transaction held it`)
        }
      }
      const head = { seq: from.seq + 1, hash }
      kept.set(key, head)
      return { shard, ...head }
    }).pipe(Unavailable.orDie)

  const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString())

  const entries = (
    organizationId: string,
    options: { readonly shard?: number | undefined; readonly after?: { shard: number; seq: number } | undefined; readonly limit: number }
  ): Effect.Effect<ReadonlyArray<LogEntry>> =>
    Effect.suspend(() => {
      const chain = options.shard === undefined ? sql`1=1` : sql`shard = ${options.shard}`
      const after = options.after === undefined ? sql`1=1` : sql`(shard, seq) > (${options.after.shard}, ${options.after.seq})`
      return sql<Record<string, unknown>>`SELECT organization_id, shard, seq, created_at, changes, hash FROM consent_log
        WHERE organization_id = ${organizationId} AND ${chain} AND ${after}
        ORDER BY shard, seq LIMIT ${options.limit}`
    }).pipe(
      Effect.map((rows) =>
        rows.map((r) => ({
          organization_id: String(r.organization_id),
          shard: Number(r.shard),
          seq: Number(r.seq),
          created_at: iso(r.created_at),
          changes: String(r.changes),
          hash: String(r.hash)
        }))
      ),
      Unavailable.orDie
    )

  const heads = (organizationId: string): Effect.Effect<ReadonlyArray<LogHead>> =>
    sql<Record<string, unknown>>`SELECT shard, seq, hash FROM consent_log_heads WHERE organization_id = ${organizationId} AND seq > 0 ORDER BY shard`.pipe(
      Effect.map((rows) => rows.map((r) => ({ shard: Number(r.shard), seq: Number(r.seq), hash: String(r.hash) }))),
      Unavailable.orDie
    )

  const forget = (organizationId: string) =>
    Effect.sync(() => {
      for (const key of [...kept.keys()]) if (key.startsWith(`${organizationId}\u0000`)) kept.delete(key)
    }).pipe(Effect.zipRight(Effect.all([
      sql`DELETE FROM consent_log WHERE organization_id = ${organizationId}`,
      sql`DELETE FROM consent_log_heads WHERE organization_id = ${organizationId}`
    ], { discard: true })), Unavailable.orDie)

  return ConsentLogStore.of({ append, entries, heads, forget })
})

export const layer: Layer.Layer<ConsentLogStore, never, SqlClient.SqlClient> = Layer.effect(ConsentLogStore, make)
