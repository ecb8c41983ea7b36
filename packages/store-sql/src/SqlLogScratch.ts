import type { LatestChange, LogScratch, NotedChange } from "@cmp/core"
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as crypto from "node:crypto"
import * as Unavailable from "./Unavailable.js"
import { type Dialect, rowLimit } from "./SqlValues.js"

/**
 * A consent log verify's scratch: tables of its own, made when it starts and dropped when it
 * ends: one row per subject the log names (its latest change), keyed by subject, and the
 * subjects that have a current row, when the verify needs them.
 * - SQLite: a private database of the verify's own (`ScratchDatabase`), on a temporary file
 *   SQLite deletes when it is closed (or at once, on a system that lets an open file be
 *   unlinked, so a killed process leaves nothing). Its page cache is bounded: the scratch is on
 *   disk, not in the process's memory. It is not the store's connection because that one keeps
 *   its temporary tables in memory (`temp_store = MEMORY`, for its statement journals), where
 *   the scratch grew with the log (about 900 bytes per entry); and a write to it never waits
 *   for, nor holds up, the store's writers.
 * - PostgreSQL: `UNLOGGED` tables (no WAL), since a temporary table lives on one connection and
 *   the verify's statements go to any connection of the pool. A batch travels as one array a
 *   column (`unnest`): as a thousand rows of six parameters, it took more than twice as long.
 *   A verify that ends without dropping them (its process killed) leaves them named in
 *   `consent_log_verify_runs` (migration 0020), which it touches as it goes; the next verify
 *   drops those left untouched for an hour.
 */

/**
 * Where a verify keeps its scratch: a client opened for the verify's length and closed with its
 * scope (SQLite), or the store's own (PostgreSQL). Each store's client layer provides it.
 */
export class ScratchDatabase extends Context.Tag("@cmp/store-sql/SqlLogScratch/ScratchDatabase")<ScratchDatabase, {
  readonly open: Effect.Effect<SqlClient.SqlClient, never, Scope.Scope>
}>() {}

/** PostgreSQL's: the store's own client (its scratch tables are the verify's for its length). */
export const sharedScratch = (sql: SqlClient.SqlClient): Context.Tag.Service<ScratchDatabase> => ({ open: Effect.succeed(sql) })

/** How long a verify's tables may go untouched before another verify takes them for left behind. */
const ABANDONED = "1 hour"
/** How often a running verify says it is alive, at most. */
const TOUCH_EVERY_MS = 60_000

type Sql = SqlClient.SqlClient

const int = (v: unknown) => Number(v)

const latestOfRow = (r: Record<string, unknown>): LatestChange => ({
  subject: String(r.subject),
  shard: int(r.shard),
  seq: int(r.seq),
  digest: r.digest === null ? null : String(r.digest),
  kind: String(r.kind),
  first: int(r.mention)
})

export const make = (sql: Sql, dialect: Dialect): Effect.Effect<LogScratch, never, Scope.Scope> => {
  const run = crypto.randomBytes(8).toString("hex")
  const changes = `consent_log_verify_changes_${run}`
  const present = `consent_log_verify_present_${run}`
  const text = dialect === "pg" ? `TEXT COLLATE "C"` : "TEXT"
  const bigint = dialect === "pg" ? "BIGINT" : "INTEGER"
  const kind = dialect === "pg" ? "UNLOGGED " : ""
  const suffix = dialect === "pg" ? "" : " WITHOUT ROWID"

  const dropTables = (name: string) =>
    Effect.all([
      sql.unsafe(`DROP TABLE IF EXISTS consent_log_verify_changes_${name}`),
      sql.unsafe(`DROP TABLE IF EXISTS consent_log_verify_present_${name}`)
    ], { discard: true })

  /** PostgreSQL: the tables of verifies that stopped saying they were alive long ago. */
  const dropAbandoned = Effect.gen(function*() {
    const gone = yield* sql<{ run: string }>`SELECT run FROM consent_log_verify_runs WHERE alive_at < now() - ${ABANDONED}::interval`
    for (const { run: name } of gone) {
      if (!/^[0-9a-f]+$/.test(name)) continue
      yield* dropTables(name)
      yield* sql`DELETE FROM consent_log_verify_runs WHERE run = ${name}`
    }
  })

  let touched = 0
  const touch = dialect !== "pg" ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (now) => {
    if (now - touched < TOUCH_EVERY_MS) return Effect.void
    touched = now
    return Effect.asVoid(sql`UPDATE consent_log_verify_runs SET alive_at = now() WHERE run = ${run}`)
  })

  const create = Effect.gen(function*() {
    if (dialect === "pg") {
      yield* dropAbandoned
      // Named before made: a process killed in between leaves a name to drop, never an unnamed table.
      yield* sql`INSERT INTO consent_log_verify_runs (run, alive_at) VALUES (${run}, now())`
      touched = yield* Clock.currentTimeMillis
    } else {
      // A journal file made and removed at every write of a batch would take half its time; in
      // memory it holds what one batch changed.
      yield* sql.unsafe("PRAGMA journal_mode = MEMORY")
    }
    yield* sql.unsafe(`CREATE ${kind}TABLE ${changes} (subject ${text} PRIMARY KEY, shard INTEGER NOT NULL, seq ${bigint} NOT NULL,
      digest TEXT, kind TEXT NOT NULL, mention ${bigint} NOT NULL)${suffix}`)
    yield* sql.unsafe(`CREATE ${kind}TABLE ${present} (subject ${text} PRIMARY KEY)${suffix}`)
  })

  const drop = Effect.gen(function*() {
    yield* dropTables(run)
    if (dialect === "pg") yield* sql`DELETE FROM consent_log_verify_runs WHERE run = ${run}`
  }).pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("A consent log verify's scratch tables were not dropped", cause))
  )

  const noteChanges = (batch: ReadonlyArray<NotedChange>) =>
    Effect.suspend(() => {
      // One row per subject in a statement (PostgreSQL refuses to upsert a row twice in one): its last change, its first order.
      const bySubject = new Map<string, { change: NotedChange; mention: number }>()
      for (const c of batch) bySubject.set(c.subject, { change: c, mention: bySubject.get(c.subject)?.mention ?? c.order })
      const values = [...bySubject.values()].map(({ change: c, mention }) => ({
        subject: c.subject,
        shard: c.shard,
        seq: c.seq,
        digest: c.digest,
        kind: c.kind,
        mention
      }))
      const rows = dialect === "pg"
        ? sql`(subject, shard, seq, digest, kind, mention) SELECT * FROM unnest(${values.map((v) => v.subject)}::text[],
            ${values.map((v) => v.shard)}::integer[], ${values.map((v) => v.seq)}::bigint[], ${values.map((v) => v.digest)}::text[],
            ${values.map((v) => v.kind)}::text[], ${values.map((v) => v.mention)}::bigint[])`
        : sql.insert(values)
      return sql`INSERT INTO ${sql(changes)} ${rows}
        ON CONFLICT (subject) DO UPDATE SET shard = excluded.shard, seq = excluded.seq, digest = excluded.digest, kind = excluded.kind`
    }).pipe(Effect.zipRight(touch), Unavailable.orDie)

  const latestOf = (subjects: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<LatestChange>> =>
    (subjects.length === 0 ? Effect.succeed([]) : Effect.suspend(() =>
      sql<Record<string, unknown>>`SELECT subject, shard, seq, digest, kind, mention FROM ${sql(changes)} WHERE ${
        dialect === "pg" ? sql`subject = ANY(${subjects}::text[])` : sql`subject IN ${sql.in(subjects)}`
      }`
    ).pipe(Effect.map((found) => found.map(latestOfRow)), Effect.zipLeft(touch), Unavailable.orDie))

  const notePresent = (subjects: ReadonlyArray<string>) =>
    Effect.suspend(() =>
      sql`INSERT INTO ${sql(present)} ${
        dialect === "pg" ? sql`(subject) SELECT * FROM unnest(${subjects}::text[])` : sql.insert(subjects.map((subject) => ({ subject })))
      } ON CONFLICT DO NOTHING`
    ).pipe(
      Effect.zipRight(touch),
      Unavailable.orDie
    )

  const latest = (after: string | undefined, limit: number): Effect.Effect<ReadonlyArray<LatestChange & { readonly present: boolean }>> =>
    Effect.suspend(() =>
      sql<Record<string, unknown>>`SELECT c.subject, c.shard, c.seq, c.digest, c.kind, c.mention,
          CASE WHEN EXISTS (SELECT 1 FROM ${sql(present)} p WHERE p.subject = c.subject) THEN 1 ELSE 0 END AS present
        FROM ${sql(changes)} c
        WHERE ${after === undefined ? sql`1=1` : sql`c.subject > ${after}`} ORDER BY c.subject LIMIT ${rowLimit(sql, limit)}`
    ).pipe(
      Effect.map((found) => found.map((r) => ({ ...latestOfRow(r), present: int(r.present) === 1 }))),
      Effect.zipLeft(touch),
      Unavailable.orDie
    )

  return Effect.acquireRelease(Unavailable.orDie(create).pipe(Effect.onError(() => drop)), () => drop).pipe(
    Effect.as({ noteChanges, latestOf, notePresent, latest } satisfies LogScratch)
  )
}
