import type { LatestChange, LogScratch, NotedChange, NotedRow, ScratchMismatch } from "@cmp/core"
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
 * ends: the changes the log names, and the current rows, each appended as read (in log order,
 * and in table order). Once both are in, each is indexed by subject, and the two indexes are
 * read side by side, a page of subjects at a time. A subject's latest change is the last of its
 * changes in that index: no table keyed by subject is kept up to date as the log is read, whose
 * every change would land on a page of its own (subjects are hashes) and, past the page cache,
 * cost a read and a write of the file.
 * - SQLite: a private database of the verify's own (`ScratchDatabase`), on a temporary file
 *   SQLite deletes when it is closed (or at once, on a system that lets an open file be
 *   unlinked, so a killed process leaves nothing). Its page cache is bounded (and so is the
 *   memory an index's sort takes): the scratch is on disk, not in the process's memory. It is
 *   not the store's connection because that one keeps its temporary tables in memory
 *   (`temp_store = MEMORY`, for its statement journals), where the scratch would grow with the
 *   log; and a write to it never waits for, nor holds up, the store's writers.
 * - PostgreSQL: `UNLOGGED` tables (no WAL), since a temporary table lives on one connection and
 *   the verify's statements go to any connection of the pool. A batch travels as one array a
 *   column (`unnest`): as a thousand rows of six parameters, it took more than twice as long.
 *   Once indexed they are vacuumed and analyzed, so that the indexes are read without the table
 *   and the planner knows their size. A verify that ends without dropping them (its process
 *   killed) leaves them named in `consent_log_verify_runs` (migration 0020), which it touches
 *   as it goes; the next verify drops those left untouched for an hour.
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

/** A page's position: after a subject among the changes' (`c:`), or after a row among the rows' (`r:`). */
type Position =
  | { readonly pass: "changes"; readonly subject: string | undefined }
  | { readonly pass: "rows"; readonly after: { readonly subject: string; readonly order: number } | undefined }

const positionOf = (after: string | undefined): Position => {
  if (after === undefined) return { pass: "changes", subject: undefined }
  if (after.startsWith("c:")) return { pass: "changes", subject: after.slice(2) }
  const m = /^r:(\d+):/.exec(after)
  if (m === null) throw new Error(`not a position of a verify's scratch: ${after}`)
  return { pass: "rows", after: { subject: after.slice(m[0].length), order: Number(m[1]) } }
}

/**
 * A scratch table's column: its name, its type, whether it may be null, and its value in what
 * the verify hands over. Declared once, for the table, its index (every column, in this order)
 * and the appends.
 */
interface Column<A> {
  readonly name: string
  readonly type: "subject" | "text" | "bigint" | "integer"
  readonly nullable?: boolean
  readonly value: (a: A) => unknown
}

const changeColumns: ReadonlyArray<Column<NotedChange>> = [
  { name: "subject", type: "subject", value: (c) => c.subject },
  { name: "mention", type: "bigint", value: (c) => c.order },
  { name: "shard", type: "integer", value: (c) => c.shard },
  { name: "seq", type: "bigint", value: (c) => c.seq },
  { name: "digest", type: "text", nullable: true, value: (c) => c.digest },
  { name: "kind", type: "text", value: (c) => c.kind }
]

const rowColumns: ReadonlyArray<Column<NotedRow>> = [
  { name: "subject", type: "subject", value: (r) => r.subject },
  { name: "ord", type: "bigint", value: (r) => r.order },
  { name: "digest", type: "text", value: (r) => r.digest },
  { name: "tbl", type: "text", value: (r) => r.table },
  { name: "id", type: "text", value: (r) => r.id },
  { name: "shard", type: "integer", value: (r) => r.shard }
]

const columnNames = (columns: ReadonlyArray<Column<never>>) => columns.map((c) => c.name).join(", ")

const rowOf = (r: Record<string, unknown>): NotedRow => ({
  subject: String(r.subject),
  digest: String(r.row_digest),
  table: String(r.tbl),
  id: String(r.id),
  shard: int(r.row_shard),
  order: int(r.ord)
})

export const make = (sql: Sql, dialect: Dialect): Effect.Effect<LogScratch, never, Scope.Scope> => {
  const run = crypto.randomBytes(8).toString("hex")
  const changes = `consent_log_verify_changes_${run}`
  const rows = `consent_log_verify_rows_${run}`
  const kind = dialect === "pg" ? "UNLOGGED " : ""
  const columnType = (type: Column<never>["type"]) =>
    type === "subject" ? (dialect === "pg" ? `TEXT COLLATE "C"` : "TEXT")
    : type === "bigint" ? (dialect === "pg" ? "BIGINT" : "INTEGER")
    : type === "integer" ? "INTEGER"
    : "TEXT"
  const createTable = (table: string, columns: ReadonlyArray<Column<never>>) =>
    sql.unsafe(`CREATE ${kind}TABLE ${table} (${
      columns.map((c) => `${c.name} ${columnType(c.type)}${c.nullable === true ? "" : " NOT NULL"}`).join(", ")
    })`)

  const dropTables = (name: string) =>
    Effect.all([
      sql.unsafe(`DROP TABLE IF EXISTS consent_log_verify_changes_${name}`),
      sql.unsafe(`DROP TABLE IF EXISTS consent_log_verify_rows_${name}`),
      // The name an earlier version gave its second table, for a verify of that version that left it behind.
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
    yield* createTable(changes, changeColumns)
    yield* createTable(rows, rowColumns)
  })

  const drop = Effect.gen(function*() {
    yield* dropTables(run)
    if (dialect === "pg") yield* sql`DELETE FROM consent_log_verify_runs WHERE run = ${run}`
  }).pipe(
    Effect.catchAllCause((cause) => Effect.logWarning("A consent log verify's scratch tables were not dropped", cause))
  )

  /** Appends a batch to a table, a column from each item; PostgreSQL's as one array a column. */
  const append = <A>(table: string, columns: ReadonlyArray<Column<A>>) => (batch: ReadonlyArray<A>) =>
    Effect.suspend(() =>
      sql`INSERT INTO ${sql(table)} ${
        dialect === "pg"
          ? sql`(${sql.literal(columnNames(columns))}) SELECT * FROM unnest(${
            sql.csv(columns.map((c) => sql`${batch.map(c.value) as Array<string>}::${sql.literal(c.type === "subject" ? "text" : c.type)}[]`))
          })`
          : sql.insert(batch.map((a) => Object.fromEntries(columns.map((c) => [c.name, c.value(a)]))))
      }`
    ).pipe(Effect.zipRight(touch), Unavailable.orDie)

  const noteChanges = append(changes, changeColumns)
  const noteRows = append(rows, rowColumns)

  // Each index holds its table's every column, so a page is read from the indexes alone, in order.
  let indexed = false
  const index = Effect.suspend(() => {
    if (indexed) return Effect.void
    indexed = true
    return Effect.gen(function*() {
      yield* sql.unsafe(`CREATE INDEX ${changes}_subject ON ${changes} (${columnNames(changeColumns)})`)
      yield* sql.unsafe(`CREATE INDEX ${rows}_subject ON ${rows} (${columnNames(rowColumns)})`)
      if (dialect === "pg") yield* sql.unsafe(`VACUUM (ANALYZE) ${changes}, ${rows}`)
    })
  })

  /**
   * A page of the subjects the log names, each with its latest change (the last of its changes)
   * and its rows: those that disagree, and the page's last subject whatever it holds, to go on from.
   * The last subject is a scalar subquery, evaluated once: as a CTE joined in, PostgreSQL
   * planned its aggregate inside the loop, once per subject (117 of a page's 123 ms).
   */
  const changesPage = (after: string | undefined, limit: number) =>
    sql<Record<string, unknown>>`WITH s AS (
        SELECT DISTINCT subject FROM ${sql(changes)} WHERE ${after === undefined ? sql`1=1` : sql`subject > ${after}`}
        ORDER BY subject LIMIT ${rowLimit(sql, limit)}
      ), l AS (
        SELECT s.subject, c.shard, c.seq, c.digest, c.kind,
          (SELECT min(f.mention) FROM ${sql(changes)} f WHERE f.subject = s.subject) AS mention
        FROM s JOIN ${sql(changes)} c ON c.subject = s.subject
          AND c.mention = (SELECT max(m.mention) FROM ${sql(changes)} m WHERE m.subject = s.subject)
      )
      SELECT l.subject, l.shard, l.seq, l.digest, l.kind, l.mention, r.ord, r.digest AS row_digest, r.tbl, r.id, r.shard AS row_shard,
        CASE WHEN l.subject = (SELECT max(subject) FROM s) THEN 1 ELSE 0 END AS last
      FROM l LEFT JOIN ${sql(rows)} r ON r.subject = l.subject
      WHERE l.subject = (SELECT max(subject) FROM s) OR (r.subject IS NULL AND l.digest IS NOT NULL)
        OR (r.subject IS NOT NULL AND (l.digest IS NULL OR l.digest <> r.digest))`

  /** A page of the rows in subject order: those whose subject the log never names, and the page's last row, to go on from. */
  const rowsPage = (after: { readonly subject: string; readonly order: number } | undefined, limit: number) =>
    sql<Record<string, unknown>>`WITH p AS (
        SELECT subject, ord, digest, tbl, id, shard FROM ${sql(rows)}
        WHERE ${after === undefined ? sql`1=1` : sql`(subject, ord) > (${after.subject}, ${dialect === "pg" ? sql`${after.order}::bigint` : after.order})`}
        ORDER BY subject, ord LIMIT ${rowLimit(sql, limit)}
      ), e AS (SELECT subject, ord FROM p ORDER BY subject DESC, ord DESC LIMIT 1)
      SELECT * FROM (
        SELECT p.subject, p.ord, p.digest AS row_digest, p.tbl, p.id, p.shard AS row_shard,
          CASE WHEN p.subject = e.subject AND p.ord = e.ord THEN 1 ELSE 0 END AS last,
          CASE WHEN EXISTS (SELECT 1 FROM ${sql(changes)} c WHERE c.subject = p.subject) THEN 0 ELSE 1 END AS unnamed
        FROM p CROSS JOIN e
      ) q WHERE last = 1 OR unnamed = 1`

  const mismatches = (after: string | undefined, limit: number) =>
    Effect.gen(function*() {
      yield* index
      let position = positionOf(after)
      if (position.pass === "changes") {
        const page = yield* changesPage(position.subject, limit)
        if (page.length > 0) {
          const found: Array<ScratchMismatch> = []
          let next: string | undefined
          for (const r of page) {
            const latest: LatestChange = {
              subject: String(r.subject),
              shard: int(r.shard),
              seq: int(r.seq),
              digest: r.digest === null ? null : String(r.digest),
              kind: String(r.kind),
              first: int(r.mention)
            }
            const row = r.ord === null ? null : rowOf(r)
            if (int(r.last) === 1) next = `c:${latest.subject}`
            if (row === null ? latest.digest !== null : latest.digest !== row.digest) found.push({ latest, row })
          }
          return { found, next }
        }
        position = { pass: "rows", after: undefined }
      }
      const page = yield* rowsPage(position.after, limit)
      const found: Array<ScratchMismatch> = []
      let next: string | undefined
      for (const r of page) {
        const row = rowOf(r)
        if (int(r.last) === 1) next = `r:${row.order}:${row.subject}`
        if (int(r.unnamed) === 1) found.push({ latest: null, row })
      }
      return { found, next }
    }).pipe(Effect.zipLeft(touch), Unavailable.orDie)

  return Effect.acquireRelease(Unavailable.orDie(create).pipe(Effect.onError(() => drop)), () => drop).pipe(
    Effect.as({ noteChanges, noteRows, mismatches } satisfies LogScratch)
  )
}
