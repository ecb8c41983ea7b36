import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { Connection } from "@effect/sql/SqlConnection"
import type * as Statement from "@effect/sql/Statement"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"

/**
 * A store's one connection, when its driver runs statements synchronously (SQLite): a statement
 * run on it at once is atomic to every other fiber, so it needs no lease of the connection while
 * no transaction of another fiber holds it open.
 */
export interface DirectStatements {
  /** The connection the store's client leases (and its transactions hold). */
  readonly connection: Connection
  /** Whether a transaction is open on the connection (a fiber holds it between its statements). */
  readonly inTransaction: () => boolean
}

export class Direct extends Context.Tag("@cmp/store-sql/Execute/Direct")<Direct, DirectStatements>() {}

/**
 * Runs a statement. With tracing off, it goes straight to the connection where it can: run as
 * an Effect of its own, a statement opens a span, a scope and a lease of a connection, which
 * together cost several times what SQLite takes to run it (about 25 µs against a few on these
 * machines, ten times per consent event, and one keyed read). Inside a transaction the
 * connection is held already; outside one, a synchronous driver's connection that no
 * transaction holds is free between two turns of any fiber. Otherwise, and with tracing on
 * (every statement keeps its span), it runs as the client runs it.
 */
export const execute = <A>(statement: Statement.Statement<A>): Effect.Effect<ReadonlyArray<A>, SqlError> =>
  Effect.withFiberRuntime((fiber) => {
    const connection = directConnection(fiber)
    if (connection === undefined) return statement
    const [text, params] = statement.compile()
    return connection.execute(text, params, undefined) as Effect.Effect<ReadonlyArray<A>, SqlError>
  })

/**
 * `execute` of a statement's text and parameters made by the caller (in the client's dialect:
 * `?` or `$1` placeholders), for a statement whose text the caller keeps rather than compiles
 * again on every run.
 */
export const executeText = <A extends object = Record<string, unknown>>(
  sql: SqlClient.SqlClient,
  text: string,
  params: ReadonlyArray<unknown>
): Effect.Effect<ReadonlyArray<A>, SqlError> =>
  Effect.withFiberRuntime((fiber) => {
    const connection = directConnection(fiber)
    if (connection === undefined) return sql.unsafe<A>(text, params)
    return connection.execute(text, params, undefined) as Effect.Effect<ReadonlyArray<A>, SqlError>
  })

/** The connection a statement may run on straight away (see `execute`), if any. */
const directConnection = (fiber: { getFiberRef<A>(ref: FiberRef.FiberRef<A>): A; readonly currentContext: Context.Context<never> }): Connection | undefined => {
  if (fiber.getFiberRef(FiberRef.currentTracerEnabled)) return undefined
  const context = fiber.currentContext
  const transaction = context.unsafeMap.get(SqlClient.TransactionConnection.key) as
    | readonly [Connection, number]
    | undefined
  if (transaction !== undefined) return transaction[0]
  const direct = context.unsafeMap.get(Direct.key) as DirectStatements | undefined
  return direct !== undefined && !direct.inTransaction() ? direct.connection : undefined
}
