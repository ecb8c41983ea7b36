import { type LogAppend, ConsentLogStore, type LogEntry, type LogHead } from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { CommitTail, literal } from "./CommitTail.js"
import { execute } from "./Execute.js"
import * as SqlLogScratch from "./SqlLogScratch.js"
import * as Unavailable from "./Unavailable.js"
import { dialectOf, rowLimit } from "./SqlValues.js"

/**
 * The consent log over `SqlClient`. A chain's head row is what concurrent writers of that chain
 * queue on: each append updates it inside the caller's transaction, and the next writer's update
 * waits for that transaction to end and then sees its hash. On the path of every consent write:
 * - PostgreSQL calls the migration's `consent_log_append`, which updates the head, hashing in SQL
 *   (`sha256`, the same formula as `link`), and inserts the entry from what the update returned;
 *   from commit work (`appendOnCommit`) the call goes in the COMMIT's own message.
 * - SQLite runs one write transaction at a time and hashes with `link`: the head this process
 *   last wrote is kept in memory, the update names the `seq` it expects (so a head another
 *   process moved, or a rolled-back append, is read again and the append retried), and the
 *   migration's trigger writes the entry the moved head describes. The heads of every chain of
 *   an append move in that one statement: a group commit's entries cost one statement.
 */
interface Position {
  readonly seq: number
  readonly hash: string
}

export const make = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const dialect = dialectOf(sql)
  const scratchDatabase = yield* SqlLogScratch.ScratchDatabase

  /** SQLite: a chain's head row before its first entry (PostgreSQL's function makes its own). */
  const newHead = (organizationId: string, shard: number, at: string) =>
    execute(sql`INSERT INTO consent_log_heads (organization_id, shard, seq, hash, changes, created_at)
      VALUES (${organizationId}, ${shard}, 0, '', '', ${at}) ON CONFLICT DO NOTHING`)

  /** PostgreSQL: the migration's function moves the head (made if missing) and inserts the entry. */
  const appendPg = (entry: LogAppend) =>
    Effect.map(
      sql<{ seq: unknown; hash: string }>`SELECT seq, hash FROM consent_log_append(${entry.organizationId}, ${entry.shard}, ${entry.changes}, ${entry.at})`,
      (rows) => ({ shard: entry.shard, seq: Number(rows[0]!.seq), hash: rows[0]!.hash })
    )

  /** SQLite: the heads this process last wrote, by `keyOf` organization and chain. */
  const kept = new Map<string, Position>()
  const keyOf = (organizationId: string, shard: number) => `${organizationId}\u0000${shard}`

  /** SQLite: the head as stored (made when the chain has none yet). */
  const readHead = (organizationId: string, shard: number, at: string) =>
    Effect.gen(function*() {
      const rows = yield* execute(sql<{ seq: unknown; hash: string }>`SELECT seq, hash FROM consent_log_heads WHERE organization_id = ${organizationId} AND shard = ${shard}`)
      if (rows.length > 0) return { seq: Number(rows[0]!.seq), hash: rows[0]!.hash }
      yield* newHead(organizationId, shard, at)
      return { seq: 0, hash: "" }
    })

  /**
   * SQLite: moves each chain's head from where it is expected to be to its next position, for
   * those where it still is; the trigger writes their entries. Answers which moved.
   */
  const moveHeads = (moves: ReadonlyArray<{ entry: LogAppend; from: Position; to: Position }>) =>
    Effect.map(
      execute(sql<{ organization_id: string; shard: unknown }>`UPDATE consent_log_heads
        SET seq = v.column3, hash = v.column4, changes = v.column5, created_at = v.column6
        FROM (VALUES ${
        sql.join(", ", false)(moves.map(({ entry, from, to }) =>
          sql`(${entry.organizationId}, ${entry.shard}, ${to.seq}, ${to.hash}, ${entry.changes}, ${entry.at}, ${from.seq})`
        ))
      }) AS v
        WHERE consent_log_heads.organization_id = v.column1 AND consent_log_heads.shard = v.column2 AND consent_log_heads.seq = v.column7
        RETURNING consent_log_heads.organization_id, consent_log_heads.shard`),
      (rows) => new Set(rows.map((r) => keyOf(r.organization_id, Number(r.shard))))
    )

  const chainOf = (entry: LogAppend) => keyOf(entry.organizationId, entry.shard)
  const next = (entry: LogAppend, from: Position) => ({ entry, from, to: { seq: from.seq + 1, hash: entry.link(from.hash, from.seq + 1) } })

  const appendSqlite = (entries: ReadonlyArray<LogAppend>) =>
    Effect.gen(function*() {
      const moves = []
      for (const entry of entries) {
        moves.push(next(entry, kept.get(chainOf(entry)) ?? (yield* readHead(entry.organizationId, entry.shard, entry.at))))
      }
      const moved = yield* moveHeads(moves)
      for (let i = 0; i < moves.length; i++) {
        if (moved.has(chainOf(moves[i]!.entry))) continue
        // Not where this process left it: read again (this transaction holds the write lock now).
        const entry: LogAppend = moves[i]!.entry
        moves[i] = next(entry, yield* readHead(entry.organizationId, entry.shard, entry.at))
        if ((yield* moveHeads([moves[i]!])).size === 0) {
          return yield* Effect.dieMessage(`the head of consent log chain ${entry.shard} moved while this transaction held it`)
        }
      }
      return moves.map(({ entry, to }) => {
        kept.set(chainOf(entry), to)
        return { shard: entry.shard, ...to }
      })
    })

  const append = (entries: ReadonlyArray<LogAppend>): Effect.Effect<ReadonlyArray<LogHead>> =>
    (entries.length === 0
      ? Effect.succeed([])
      : dialect === "pg"
      ? Effect.forEach(entries, appendPg)
      : appendSqlite(entries)).pipe(Unavailable.orDie)

  /**
   * PostgreSQL, from commit work: each entry's call rides with the COMMIT, written out as text
   * (its values are ids, digests and a time). Outside such a transaction, `append` as it is.
   */
  const appendOnCommit = (entries: ReadonlyArray<LogAppend>): Effect.Effect<void> =>
    dialect !== "pg" || entries.length === 0
      ? Effect.asVoid(append(entries))
      : Effect.flatMap(Effect.serviceOption(CommitTail), (tail) => {
        if (Option.isNone(tail)) return Effect.asVoid(append(entries))
        for (const e of entries) {
          tail.value.push(
            `SELECT consent_log_append(${literal(e.organizationId)}, ${Math.trunc(e.shard)}, ${literal(e.changes)}, ${literal(e.at)})`
          )
        }
        return Effect.void
      })

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
        ORDER BY shard, seq LIMIT ${rowLimit(sql, options.limit)}`
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

  const scratch = Effect.flatMap(scratchDatabase.open, (client) => SqlLogScratch.make(client.withoutTransforms(), dialect))

  return ConsentLogStore.of({ append, appendOnCommit, entries, heads, scratch, forget })
})

export const layer: Layer.Layer<ConsentLogStore, never, SqlClient.SqlClient | SqlLogScratch.ScratchDatabase> = Layer.effect(ConsentLogStore, make)
