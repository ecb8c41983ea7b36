import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"

/**
 * Runs a statement. Inside a transaction, with tracing off, it goes straight to the
 * transaction's connection: run as an Effect of its own, a statement opens a span, a scope and a
 * lease of a connection, which together cost several times what SQLite takes to run it (about
 * 25 µs against a few on these machines, ten times per consent event). Inside a transaction
 * the connection is held already, and with tracing off the span goes nowhere. With tracing on,
 * every statement keeps its span.
 */
export const execute = <A>(statement: Statement.Statement<A>): Effect.Effect<ReadonlyArray<A>, SqlError> =>
  Effect.withFiberRuntime((fiber) => {
    if (fiber.getFiberRef(FiberRef.currentTracerEnabled)) return statement
    const transaction = Context.getOption(fiber.currentContext, SqlClient.TransactionConnection)
    if (transaction._tag === "None") return statement
    const [text, params] = statement.compile()
    return transaction.value[0].execute(text, params, undefined) as Effect.Effect<ReadonlyArray<A>, SqlError>
  })
