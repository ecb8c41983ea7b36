import { UnitOfWork } from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import { drainInBatches } from "./Batches.js"
import * as Unavailable from "./Unavailable.js"
import { dialectOf } from "./SqlValues.js"

/** The unit-of-work port over `SqlClient`: transactions (grouped under one COMMIT on SQLite) and locks. */
export const make = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const dialect = dialectOf(sql)

  const plainTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Unavailable.classifyTransaction(sql.withTransaction(effect)) as Effect.Effect<A, E, R>

  /**
   * Group commit (SQLite): SQLite runs one write transaction at a time, and most of a small
   * transaction's cost is its COMMIT writing the same index pages again. Transactions that queue
   * up while one runs are run together, each in its own savepoint (a failing one rolls back
   * alone), under one COMMIT. Each caller hears its own outcome only after that COMMIT, so
   * nothing is acknowledged before it is durable. Each body runs with its caller's fiber refs
   * (clock, log annotations) and context, plus the batch's connection.
   */
  interface Waiting {
    readonly effect: Effect.Effect<unknown, unknown, never>
    readonly refs: FiberRefs.FiberRefs
    readonly done: Deferred.Deferred<unknown, unknown>
  }
  const waiting = dialect === "sqlite" ? yield* Queue.unbounded<Waiting>() : undefined

  const runBatch = (batch: ReadonlyArray<Waiting>) =>
    Effect.gen(function*() {
      const exits: Array<Exit.Exit<unknown, unknown>> = []
      const outcome = yield* Effect.exit(plainTransaction(Effect.gen(function*() {
        const tx = Option.getOrThrow(yield* Effect.serviceOption(SqlClient.TransactionConnection))
        const own = yield* Effect.getFiberRefs
        for (const item of batch) {
          yield* Effect.setFiberRefs(item.refs)
          const context = Context.add(FiberRefs.getOrDefault(item.refs, FiberRef.currentContext), SqlClient.TransactionConnection, tx)
          const exit = yield* Effect.exit(Effect.locally(plainTransaction(item.effect), FiberRef.currentContext, context))
          yield* Effect.setFiberRefs(own)
          exits.push(exit)
          // A database error (disk full, I/O) may have ended the whole transaction in SQLite:
          // the rest of the batch must not run outside it. They wait for the next batch.
          if (exit._tag === "Failure" && Cause.isDie(exit.cause)) break
        }
      })))
      for (let i = 0; i < exits.length; i++) {
        const exit = exits[i]!
        // A failed COMMIT loses every write of the batch: each caller hears that failure.
        yield* Deferred.done(batch[i]!.done, outcome._tag === "Failure" && exit._tag === "Success" ? outcome : exit)
      }
      const rest = batch.slice(exits.length)
      // Nothing ran (BEGIN failed): each caller hears why. Otherwise the rest runs next time.
      if (exits.length === 0 && outcome._tag === "Failure") {
        for (const item of rest) yield* Deferred.done(item.done, outcome)
      } else if (rest.length > 0) yield* Queue.offerAll(waiting!, rest)
    })

  if (waiting) {
    yield* drainInBatches(waiting, 64, runBatch)
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Queue.takeAll(waiting), (left) => Effect.forEach(left, (item) => Deferred.interrupt(item.done), { discard: true }))
    )
  }

  const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
    if (!waiting) return plainTransaction(effect)
    return Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (inside) =>
      // Already inside a transaction: a savepoint, as before.
      Option.isSome(inside) ? plainTransaction(effect) : Effect.withFiberRuntime<A, E, R>((fiber) => {
        const done = Deferred.unsafeMake<unknown, unknown>(fiber.id())
        const item: Waiting = { effect: effect as Effect.Effect<unknown, unknown, never>, refs: fiber.getFiberRefs(), done }
        return Effect.zipRight(Queue.offer(waiting, item), Deferred.await(done)) as Effect.Effect<A, E, R>
      }))
  }

  // SQLite runs one transaction at a time already; PostgreSQL needs a transaction-scoped lock.
  const lock = (key: string): Effect.Effect<void> =>
    sql.onDialectOrElse({
      pg: () => sql`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0))`.pipe(Effect.asVoid, Unavailable.orDie),
      orElse: () => Effect.void
    })

  return UnitOfWork.of({ transaction, lock })
})

export const layer: Layer.Layer<UnitOfWork, never, SqlClient.SqlClient> = Layer.scoped(UnitOfWork, make)
