import { Execute, SqlLogScratch } from "@cmp/store-sql"
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import Sqlite from "better-sqlite3"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { scratchDatabase } from "./ScratchWorker.js"

/**
 * The SQLite client: `@effect/sql-sqlite-node`'s, but for how it runs a statement. Its prepared
 * statements are kept in a plain map (that client looks each one up through an Effect cache
 * with a time to live, a dozen Effect steps and a hash of the SQL text per statement), and its
 * one connection is also handed to `Execute` as `Direct`, which runs the statements of this
 * store at once where no other fiber's transaction holds it (better-sqlite3 is synchronous:
 * a statement run between two turns of the event loop is atomic to every fiber).
 */

/** Distinct statements kept prepared: the store's own are a few hundred at most; a filter's `$in` of any length is one more each. */
const PREPARED = 500

const makeConnection = (filename: string) =>
  Effect.gen(function*() {
    const db = new Sqlite(filename)
    yield* Effect.addFinalizer(() => Effect.sync(() => db.close()))
    db.pragma("journal_mode = WAL")
    // A second chance rather than strict LRU order: a hit only marks its entry, where moving it
    // to the end of the map cost two map writes on every statement run.
    const prepared = new Map<string, { readonly statement: Sqlite.Statement; used: boolean }>()
    const prepare = (sql: string): Sqlite.Statement => {
      const found = prepared.get(sql)
      if (found !== undefined) {
        found.used = true
        return found.statement
      }
      const statement = db.prepare(sql)
      // The oldest entry not used since it was last passed over goes; a used one moves to the end.
      while (prepared.size >= PREPARED) {
        const [oldest, entry] = prepared.entries().next().value!
        prepared.delete(oldest)
        if (entry.used) {
          entry.used = false
          prepared.set(oldest, entry)
        }
      }
      prepared.set(sql, { statement, used: false })
      return statement
    }
    const runSync = (sql: string, params: ReadonlyArray<unknown>, raw = false): ReadonlyArray<any> => {
      const statement = prepare(sql)
      if (statement.reader) return statement.all(...params)
      const result = statement.run(...params)
      return raw ? result as unknown as ReadonlyArray<any> : []
    }
    const attempt = <A>(run: () => A): Effect.Effect<A, SqlError> => {
      try {
        return Effect.succeed(run())
      } catch (cause) {
        return Effect.fail(new SqlError({ cause, message: "Failed to execute statement" }))
      }
    }
    const connection: Connection = {
      execute: (sql, params, transformRows) =>
        Effect.suspend(() => attempt(() => transformRows ? transformRows(runSync(sql, params)) : runSync(sql, params))),
      executeRaw: (sql, params) => Effect.suspend(() => attempt(() => runSync(sql, params, true))),
      executeValues: (sql, params) =>
        Effect.suspend(() =>
          attempt(() => {
            const statement = prepare(sql)
            if (!statement.reader) {
              statement.run(...params)
              return []
            }
            statement.raw(true)
            try {
              return statement.all(...params) as ReadonlyArray<ReadonlyArray<unknown>>
            } finally {
              statement.raw(false)
            }
          })
        ),
      executeUnprepared: (sql, params, transformRows) =>
        Effect.suspend(() =>
          attempt(() => {
            const statement = db.prepare(sql)
            const rows: Array<any> = statement.reader ? statement.all(...(params ?? [])) : (statement.run(...(params ?? [])), [])
            return transformRows ? transformRows(rows) : rows
          })
        ),
      // better-sqlite3 cannot run another statement on the connection while one is iterated, and
      // a stream is pulled across turns of other fibers: the rows are read at once, then streamed.
      executeStream: (sql, params, transformRows) =>
        Stream.flatMap(
          Stream.fromEffect(Effect.suspend(() => attempt(() => transformRows ? transformRows(runSync(sql, params)) : runSync(sql, params)))),
          Stream.fromIterable
        )
    }
    const direct: Execute.DirectStatements = { connection, inTransaction: () => db.inTransaction }
    return { connection, direct }
  })

/** The client over one connection, its statements one at a time (a transaction holds it until it ends). */
const make = (filename: string) =>
  Effect.gen(function*() {
    const { connection, direct } = yield* makeConnection(filename)
    const semaphore = yield* Effect.makeSemaphore(1)
    const acquirer = semaphore.withPermits(1)(Effect.succeed(connection))
    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.as(
        Effect.zipRight(
          restore(semaphore.take(1)),
          Effect.tap(Effect.scope, (scope) => Scope.addFinalizer(scope, semaphore.release(1)))
        ),
        connection
      )
    )
    const client = yield* SqlClient.make({
      acquirer,
      compiler: Statement.makeCompilerSqlite(),
      transactionAcquirer,
      spanAttributes: [["db.system.name", "sqlite"]]
    })
    return { client, direct }
  })

/**
 * `SqlClient` (and `SqliteClient`, for code written against that client) with `Direct`, on a file
 * or `:memory:`, and where a consent log verify keeps its scratch.
 */
export const layer = (
  filename: string
): Layer.Layer<SqlClient.SqlClient | SqliteClient.SqliteClient | Execute.Direct | SqlLogScratch.ScratchDatabase> =>
  Layer.scopedContext(
    Effect.map(make(filename), ({ client, direct }) =>
      Context.make(SqlClient.SqlClient, client).pipe(
        Context.add(SqliteClient.SqliteClient, client as unknown as SqliteClient.SqliteClient),
        Context.add(Execute.Direct, direct),
        Context.add(SqlLogScratch.ScratchDatabase, scratchDatabase)
      ))
  ).pipe(Layer.provide(Reactivity.layer))
