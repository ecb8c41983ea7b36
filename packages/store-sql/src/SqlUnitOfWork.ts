import { type CommitWork, type Conflict, UnitOfWork } from "@cmp/core"
import type { SqlError } from "@effect/sql/SqlError"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import { drainInBatches } from "./Batches.js"
import { CommitTail } from "./CommitTail.js"
import * as Unavailable from "./Unavailable.js"
import { PipelinedConnection } from "./Pipeline.js"
import { conflictOf, dialectOf } from "./SqlValues.js"

/** The values handed to each work to run before a COMMIT, in the order they came. */
type Pending = Map<CommitWork<unknown>, Array<unknown>>

/** The pending work of the transaction (or group of transactions) a fiber is inside. */
class PendingWork extends Context.Tag("@cmp/store-sql/UnitOfWork/PendingWork")<PendingWork, Pending>() {}

/** Runs a savepoint so that what it handed over goes if it rolls back. */
const droppedOnFailure = <A, E, R>(pending: Pending, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    // Most savepoints begin with nothing handed over yet: then all goes.
    const marks = pending.size === 0 ? undefined : new Map([...pending].map(([work, values]) => [work, values.length]))
    return Effect.onError(effect, () =>
      Effect.sync(() => {
        if (marks === undefined) pending.clear()
        else for (const [work, values] of pending) values.length = marks.get(work) ?? 0
      }))
  })

/**
 * Runs `effect` with `refs` as its fiber's refs, then puts `restored` back. `Effect.setFiberRefs`
 * sets them one at a time, each copying the whole map: on a batch of consent events that cost
 * more than running their SQL.
 */
const withRefs = <A, E, R>(refs: FiberRefs.FiberRefs, effect: Effect.Effect<A, E, R>, restored: FiberRefs.FiberRefs) => {
  const set = (to: FiberRefs.FiberRefs) =>
    Effect.withFiberRuntime<void>((fiber) => {
      // The runtime's own setter (the public interface only reads them).
      ;(fiber as unknown as { setFiberRefs(refs: FiberRefs.FiberRefs): void }).setFiberRefs(to)
      return Effect.void
    })
  return Effect.ensuring(Effect.zipRight(set(refs), effect), set(restored))
}

/** What a body inside a transaction finds in its context: the connection at its level, and the pending work. */
const opened = (connection: readonly [Connection, number], pending: Pending) =>
  Context.make(SqlClient.TransactionConnection, connection).pipe(Context.add(PendingWork, pending))

/** Runs each work once with its values, inside the transaction, before it commits. */
const runPending = (pending: Pending) =>
  Effect.suspend(() => {
    const works = [...pending].filter(([, values]) => values.length > 0)
    pending.clear()
    return Effect.forEach(works, ([work, values]) => work.run(values), { discard: true })
  })

/** The unit-of-work port over `SqlClient`: transactions (grouped under one COMMIT on SQLite) and locks. */
export const make = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const dialect = dialectOf(sql)

  const plainTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Unavailable.classifyTransaction(sql.withTransaction(effect)) as Effect.Effect<A, E, R>

  /**
   * An outermost transaction of its own (PostgreSQL), on a connection that sends what needs no
   * answer yet with the next statement that does (`PipelinedConnection`): its BEGIN with its
   * first statement, its deferred inserts with the next statement or the COMMIT. Its work runs
   * before it commits; what that work adds to its `CommitTail` goes in the COMMIT's message too:
   * on every consent write, the consent log's append costs no round trip of its own. A COMMIT
   * whose message fails leaves the transaction aborted: it is rolled back before the failure is
   * reported, so the connection goes back to the pool clean. A transaction whose deferred write
   * failed fails with that write's Conflict; one whose deferred check failed, with its failure.
   *
   * Written out rather than through `withTransaction`, whose span, scope and context copies cost
   * as much as the statements of a consent event: the connection is taken from the pool, the
   * body runs with it as its transaction's (level 0, as `withTransaction` names it, so that a
   * transaction inside is a savepoint), and it goes back when the transaction ends, whatever
   * ended it (an interruption rolls it back).
   */
  const ownTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(Scope.make(), (scope) =>
        Effect.flatMap(Effect.exit(Scope.extend(sql.reserve, scope)), (reserved): Effect.Effect<A, E | Conflict | SqlError, R> => {
          if (reserved._tag === "Failure") return Effect.zipRight(Scope.close(scope, reserved), reserved as Exit.Exit<never, SqlError>)
          const conn = new PipelinedConnection(reserved.value, conflictOf)
          const pending: Pending = new Map()
          const tail: Array<string> = []
          const body = Effect.tap(effect, () => Effect.provideService(runPending(pending), CommitTail, tail))
          const added = opened([conn, 0], pending)
          const inside = Effect.mapInputContext(body, (context: Context.Context<R>) => Context.merge(context, added))
          return Effect.flatMap(Effect.exit(restore(inside)), (exit) => {
            const end: Effect.Effect<void> = Exit.isSuccess(exit)
              ? Effect.orDie(conn.commit(tail).pipe(Effect.tapError(() => Effect.ignore(conn.rollback()))))
              : Effect.orDie(conn.rollback())
            return Effect.exit(end).pipe(
              Effect.flatMap((ended): Effect.Effect<A, E | Conflict> => {
                const outcome: Exit.Exit<A, E> = ended._tag === "Failure" ? ended as Exit.Exit<never> : exit
                // A deferred write's Conflict, or a deferred check's own failure (of type E).
                const reported: Exit.Exit<A, E | Conflict> = outcome._tag === "Failure" && conn.failure !== undefined ? Exit.fail(conn.failure as E | Conflict) : outcome
                return Effect.zipRight(Scope.close(scope, outcome), reported)
              })
            )
          })
        })
      )
    ).pipe(Unavailable.classifyTransaction) as Effect.Effect<A, E, R>

  /**
   * Group commit (SQLite): SQLite runs one write transaction at a time, and most of a small
   * transaction's cost is its COMMIT writing the same index pages again. Transactions that queue
   * up while one runs are run together, each in its own savepoint (a failing one rolls back
   * alone), under one COMMIT. Each caller hears its own outcome only after that COMMIT, so
   * nothing is acknowledged before it is durable. Each body runs with its caller's fiber refs
   * (clock, log annotations) and context, plus the batch's connection. The work the bodies hand
   * over runs once for all of them, before the COMMIT, with the last one's fiber refs.
   */
  interface Waiting {
    readonly effect: Effect.Effect<unknown, unknown, never>
    readonly refs: FiberRefs.FiberRefs
    /** Tells the caller its outcome (once). A callback, not a Deferred: one is made per write. */
    readonly done: (exit: Exit.Exit<unknown, unknown>) => void
  }
  const waiting = dialect === "sqlite" ? yield* Queue.unbounded<Waiting>() : undefined

  /**
   * One item of a batch in a savepoint of its own, named as `withTransaction` names its first
   * level, so that a transaction the item opens inside nests below it (its context says level 1).
   * Written out rather than through `withTransaction`, whose span, scope and unprepared statement
   * cost several times the SAVEPOINT itself, on every item. Like `withTransaction`'s, a savepoint
   * that succeeds is not released: the batch's COMMIT ends them all.
   */
  const inSavepoint = <A, E>(conn: Connection, effect: Effect.Effect<A, E>) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.zipRight(
        conn.execute("SAVEPOINT effect_sql_1", [], undefined),
        Effect.onError(restore(effect), () => Effect.orDie(conn.execute("ROLLBACK TO SAVEPOINT effect_sql_1", [], undefined)))
      )
    )

  const runBatch = (batch: ReadonlyArray<Waiting>) =>
    Effect.gen(function*() {
      const exits: Array<Exit.Exit<unknown, unknown>> = []
      const outcome = yield* Effect.exit(plainTransaction(Effect.withFiberRuntime((fiber) => {
        const [conn, level] = Context.unsafeGet(fiber.currentContext, SqlClient.TransactionConnection)
        const own = fiber.getFiberRefs()
        const pending: Pending = new Map()
        // Each item runs with its caller's fiber refs and context, plus the batch's connection,
        // merged in one copy of the caller's context (it holds every service of the host).
        const items = opened([conn, level + 1], pending)
        const refsOf = (refs: FiberRefs.FiberRefs, added: Context.Context<SqlClient.TransactionConnection | PendingWork>) =>
          FiberRefs.updateAs(refs, {
            fiberId: fiber.id(),
            fiberRef: FiberRef.currentContext,
            value: Context.merge(FiberRefs.getOrDefault(refs, FiberRef.currentContext), added)
          })
        let last: FiberRefs.FiberRefs | undefined
        return Effect.gen(function*() {
          for (const item of batch) {
            const exit = yield* Effect.exit(
              withRefs(refsOf(item.refs, items), droppedOnFailure(pending, Unavailable.classifyTransaction(inSavepoint(conn, item.effect))), own)
            )
            exits.push(exit)
            if (exit._tag === "Success") last = item.refs
            // A database error (disk full, I/O) may have ended the whole transaction in SQLite:
            // the rest of the batch must not run outside it. They wait for the next batch.
            if (exit._tag === "Failure" && Cause.isDie(exit.cause)) break
          }
          if (last !== undefined && pending.size > 0) yield* withRefs(refsOf(last, opened([conn, level], pending)), runPending(pending), own)
        })
      })))
      for (let i = 0; i < exits.length; i++) {
        const exit = exits[i]!
        // A failed COMMIT loses every write of the batch: each caller hears that failure.
        batch[i]!.done(outcome._tag === "Failure" && exit._tag === "Success" ? outcome : exit)
      }
      const rest = batch.slice(exits.length)
      // Nothing ran (BEGIN failed): each caller hears why. Otherwise the rest runs next time.
      if (exits.length === 0 && outcome._tag === "Failure") {
        for (const item of rest) item.done(outcome)
      } else if (rest.length > 0) yield* Queue.offerAll(waiting!, rest)
    })

  if (waiting) {
    yield* drainInBatches(waiting, 64, runBatch)
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Queue.takeAll(waiting), (left) => Effect.fiberIdWith((id) => Effect.sync(() => { for (const item of left) item.done(Exit.interrupt(id)) })))
    )
  }

  /** Read off the fiber's context in one step: every write of the consent path begins here. */
  const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiberRuntime<A, E, R>((fiber) => {
      const context = fiber.currentContext
      // Inside a transaction: a savepoint.
      const open = Context.getOption(context, PendingWork)
      if (Option.isSome(open)) return droppedOnFailure(open.value, plainTransaction(effect))
      // Inside one begun on the client directly: a savepoint, whose work runs at once.
      if (Option.isSome(Context.getOption(context, SqlClient.TransactionConnection))) return plainTransaction(effect)
      if (!waiting) return ownTransaction(effect)
      const refs = fiber.getFiberRefs()
      return Effect.async<unknown, unknown>((resume) => {
        // A queue shut down (the store closing) takes nothing: the caller is interrupted, as
        // `Queue.offer` would.
        if (!waiting.unsafeOffer({ effect: effect as Effect.Effect<unknown, unknown, never>, refs, done: resume })) resume(Effect.interrupt)
      }) as Effect.Effect<A, E, R>
    })

  const beforeCommit = <T>(work: CommitWork<T>, value: T): Effect.Effect<void> =>
    Effect.flatMap(Effect.serviceOption(PendingWork), (open) => {
      if (Option.isNone(open)) return work.run([value])
      const values = open.value.get(work as CommitWork<unknown>)
      if (values) values.push(value)
      else open.value.set(work as CommitWork<unknown>, [value])
      return Effect.void
    })

  // SQLite runs one transaction at a time already; PostgreSQL needs a transaction-scoped lock.
  const lock = (key: string): Effect.Effect<void> =>
    sql.onDialectOrElse({
      pg: () => sql`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0))`.pipe(Effect.asVoid, Unavailable.orDie),
      orElse: () => Effect.void
    })

  return UnitOfWork.of({ transaction, beforeCommit, lock })
})

export const layer: Layer.Layer<UnitOfWork, never, SqlClient.SqlClient> = Layer.scoped(UnitOfWork, make)
