import { ConsentLogStore, type LogEntry, type LogHead } from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Unavailable from "./Unavailable.js"
import { dialectOf } from "./SqlValues.js"

/**
 * The consent log over `SqlClient`. A chain's head row is what concurrent writers of that chain
 * queue on: each append updates it inside the caller's transaction, and the next writer's update
 * waits for that transaction to end and then sees its hash. PostgreSQL does the whole append in
 * one statement, hashing in SQL (`sha256`, the same formula as `link`); SQLite runs one
 * transaction at a time, so it reads the head, hashes with `link`, and writes.
 */
export const make = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const dialect = dialectOf(sql)

  const newHead = (organizationId: string, shard: number) =>
    sql`INSERT INTO consent_log_heads (organization_id, shard, seq, hash) VALUES (${organizationId}, ${shard}, 0, '') ON CONFLICT DO NOTHING`

  const appendPg = (organizationId: string, shard: number, changes: string, at: string) =>
    sql<{ seq: unknown; hash: string }>`WITH head AS (
      UPDATE consent_log_heads
      SET seq = seq + 1,
          hash = encode(sha256(convert_to(hash || E'\\n' || (seq + 1)::text || E'\\n' || ${changes}::text, 'UTF8')), 'hex')
      WHERE organization_id = ${organizationId} AND shard = ${shard}
      RETURNING seq, hash
    )
    INSERT INTO consent_log (organization_id, shard, seq, created_at, changes, hash)
    SELECT ${organizationId}, ${shard}, head.seq, ${at}, ${changes}, head.hash FROM head
    RETURNING seq, hash`

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
          yield* newHead(organizationId, shard)
          rows = yield* appendPg(organizationId, shard, changes, at)
        }
        return { shard, seq: Number(rows[0]!.seq), hash: rows[0]!.hash }
      }
      const heads = yield* sql<{ seq: unknown; hash: string }>`SELECT seq, hash FROM consent_log_heads WHERE organization_id = ${organizationId} AND shard = ${shard}`
      if (heads.length === 0) yield* newHead(organizationId, shard)
      const seq = heads.length === 0 ? 1 : Number(heads[0]!.seq) + 1
      const hash = link(heads[0]?.hash ?? "", seq)
      yield* sql`INSERT INTO consent_log (organization_id, shard, seq, created_at, changes, hash) VALUES (${organizationId}, ${shard}, ${seq}, ${at}, ${changes}, ${hash})`
      yield* sql`UPDATE consent_log_heads SET seq = ${seq}, hash = ${hash} WHERE organization_id = ${organizationId} AND shard = ${shard}`
      return { shard, seq, hash }
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
    Effect.all([
      sql`DELETE FROM consent_log WHERE organization_id = ${organizationId}`,
      sql`DELETE FROM consent_log_heads WHERE organization_id = ${organizationId}`
    ], { discard: true }).pipe(Unavailable.orDie)

  return ConsentLogStore.of({ append, entries, heads, forget })
})

export const layer: Layer.Layer<ConsentLogStore, never, SqlClient.SqlClient> = Layer.effect(ConsentLogStore, make)
