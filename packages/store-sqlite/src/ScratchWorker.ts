import type { SqlLogScratch } from "@cmp/store-sql"
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { createRequire } from "node:module"
import { Worker } from "node:worker_threads"

/**
 * A consent log verify's scratch on SQLite: a private database of its own, on a temporary file
 * SQLite deletes when it is closed, opened by a worker thread that runs its statements. The
 * scratch indexes what it was handed once, in one statement per table, a sort of every change
 * the log holds (seconds for a million consent events); better-sqlite3 runs a statement on the
 * thread that calls it, so on the server's it would hold every request for that long. On a
 * thread of its own the server answers meanwhile, and every other statement of the scratch runs
 * there too. Its page cache is bounded, 4 MiB (and with it the memory a sort takes): the scratch
 * is on disk, not in memory (against 16 MiB, the bench's verify of 100,000 entries held 6 MB
 * less and took no longer).
 */

/** What the worker runs: one message a statement, answered in the order sent; `close` ends it. */
const SOURCE = `
const { parentPort, workerData } = require("node:worker_threads")
const Sqlite = require(workerData.sqlite)
const db = new Sqlite("")
db.pragma("cache_size = -4096")
const prepared = new Map()
parentPort.on("message", (message) => {
  if (message.close) {
    db.close()
    parentPort.close()
    return
  }
  const { id, sql, params, values } = message
  try {
    let statement = prepared.get(sql)
    if (statement === undefined) {
      // The scratch's statements are a few dozen texts; past a hundred, another caller's.
      if (prepared.size >= 100) prepared.clear()
      statement = db.prepare(sql)
      prepared.set(sql, statement)
    }
    let rows = []
    if (!statement.reader) statement.run(...params)
    else {
      statement.raw(values)
      rows = statement.all(...params)
    }
    parentPort.postMessage({ id, rows })
  } catch (error) {
    parentPort.postMessage({ id, error: error instanceof Error ? error.message : String(error) })
  }
})
`

/** Where better-sqlite3 is for this module, handed to the worker (whose code has no module of its own). */
const sqlitePath = () => createRequire(import.meta.url).resolve("better-sqlite3")

type Resume = (effect: Effect.Effect<ReadonlyArray<any>, SqlError>) => void

const failed = (message: string) => Effect.fail(new SqlError({ message: "Failed to execute statement", cause: new Error(message) }))

const openWorker = Effect.acquireRelease(
  Effect.sync(() => {
    const worker = new Worker(SOURCE, { eval: true, workerData: { sqlite: sqlitePath() } })
    // Not unref'd: a command that verifies (`verify-log`) has nothing else keeping it alive while
    // the worker answers. The scope closes it with the verify, interrupted or not.
    const pending = new Map<number, Resume>()
    let next = 0
    let ended: string | undefined
    let exited = false
    const failAll = (message: string) => {
      ended ??= message
      for (const resume of pending.values()) resume(failed(message))
      pending.clear()
    }
    worker.on("message", (m: { id: number; rows?: ReadonlyArray<any>; error?: string }) => {
      const resume = pending.get(m.id)
      if (resume === undefined) return
      pending.delete(m.id)
      resume(m.error === undefined ? Effect.succeed(m.rows ?? []) : failed(m.error))
    })
    worker.on("error", (error) => failAll(`the scratch's worker failed: ${error.message}`))
    worker.on("exit", () => {
      exited = true
      failAll("the scratch's worker has ended")
    })
    const run = (sql: string, params: ReadonlyArray<unknown>, values = false) =>
      Effect.async<ReadonlyArray<any>, SqlError>((resume) => {
        if (ended !== undefined) {
          resume(failed(ended))
          return
        }
        const id = next++
        pending.set(id, resume)
        worker.postMessage({ id, sql, params, values })
      })
    return { worker, run, exited: () => exited }
  }),
  ({ worker, exited }) =>
    Effect.async<void>((resume) => {
      if (exited()) return resume(Effect.void)
      // Closed by the worker itself, so its database (and the file SQLite keeps for it) goes with it.
      worker.once("exit", () => resume(Effect.void))
      worker.postMessage({ close: true })
    })
)

export const scratchDatabase: Context.Tag.Service<SqlLogScratch.ScratchDatabase> = {
  open: Effect.gen(function*() {
    const { run } = yield* openWorker
    const connection: Connection = {
      execute: (sql, params, transformRows) => Effect.map(run(sql, params), (rows) => transformRows ? transformRows(rows) : rows),
      executeRaw: (sql, params) => run(sql, params),
      executeValues: (sql, params) => run(sql, params, true) as Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError>,
      executeUnprepared: (sql, params, transformRows) =>
        Effect.map(run(sql, params ?? []), (rows) => transformRows ? transformRows(rows) : rows),
      executeStream: (sql, params, transformRows) =>
        Stream.flatMap(
          Stream.fromEffect(Effect.map(run(sql, params), (rows) => transformRows ? transformRows(rows) : rows)),
          Stream.fromIterable
        )
    }
    // The scratch runs no transaction: its statements are sent one after another, and run in that order.
    return yield* SqlClient.make({
      acquirer: Effect.succeed(connection),
      compiler: Statement.makeCompilerSqlite(),
      transactionAcquirer: Effect.succeed(connection),
      spanAttributes: [["db.system.name", "sqlite"]]
    })
  }).pipe(Effect.provide(Reactivity.layer), Effect.orDie)
}
