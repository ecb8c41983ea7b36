import { type CommitWork, type Conflict, UnitOfWork } from "@cmp/core"
import type { SqlError } from "@effect/sql/SqlError"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import { drainInBatches } from "./Batches.js"
import { CommitTail } from "./CommitTail.js"
import * as Unavailable from "./Unavailable.js"
import { PipelinedConnection, sqlState } from "./Pipeline.js"
import { conflictOf, dialectOf } from "./SqlValues.js"

/** The values handed to each work, in the order they came. */
type Handed = Map<CommitWork<unknown>, Array<unknown>>

/** What the transaction (or group) has been handed: work to run before its COMMIT, and after it. */
class Pending {
  readonly before: Handed = new Map()
  readonly after: Handed = new Map()
}

/** Where each work's values stand, to cut them back to; undefined when none were handed over. */
const marksOf = (handed: Handed) => handed.size === 0 ? undefined : new Map([...handed].map(([work, values]) => [work, values.length]))
const cutBack = (handed: Handed, marks: Map<CommitWork<unknown>, number> | undefined) => {
  if (marks === undefined) handed.clear()
  else for (const [work, values] of handed) values.length = marks.get(work) ?? 0
}

/** The pending work of the transaction (or group of transactions) a fiber is inside. */
class PendingWork extends Context.Tag("@cmp/store-sql/UnitOfWork/PendingWork")<PendingWork, Pending>() {}

/** Runs a savepoint so that what it handed over goes if it rolls back. */
const droppedOnFailure = <A, E, R>(pending: Pending, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    // Most savepoints begin with nothing handed over yet: then all goes.
    const before = marksOf(pending.before)
    const after = marksOf(pending.after)
    return Effect.onError(effect, () =>
      Effect.sync(() => {
        cutBack(pending.before, before)
        cutBack(pending.after, after)
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

/**
 * Items of a group run with their caller's fiber refs, plus what the group's transaction adds to
 * the context. The merged context is kept for the next item whose caller's context is the same
 * one, as most are (the host's services, unchanged between requests): each merge copies every
 * service of the host.
 */
const refsFor = (fiber: Fiber.RuntimeFiber<unknown, unknown>, added: Context.Context<SqlClient.TransactionConnection | PendingWork>) => {
  let from: Context.Context<never> | undefined
  let merged: Context.Context<never> | undefined
  return (refs: FiberRefs.FiberRefs) => {
    const context = FiberRefs.getOrDefault(refs, FiberRef.currentContext)
    if (context !== from || merged === undefined) {
      from = context
      merged = Context.merge(context, added)
    }
    return FiberRefs.updateAs(refs, { fiberId: fiber.id(), fiberRef: FiberRef.currentContext, value: merged })
  }
}

/** `refsFor` for one body. */
const refsOf = (
  fiber: Fiber.RuntimeFiber<unknown, unknown>,
  refs: FiberRefs.FiberRefs,
  added: Context.Context<SqlClient.TransactionConnection | PendingWork>
) => refsFor(fiber, added)(refs)

/** Transactions run together on PostgreSQL: at most this many at once, each group of at most `GROUP_SIZE`. */
const GROUP_RUNNERS = 2
const GROUP_SIZE = 32

/**
 * A failed COMMIT that certainly did not commit: its message carried a write that broke a
 * constraint, or a check that failed, or PostgreSQL refused it (a serialization failure, a
 * deadlock). Anything else (a lost connection) may have committed.
 */
const refused = (conn: PipelinedConnection, cause: Cause.Cause<unknown>): boolean =>
  conn.failure !== undefined || /^(23|22|40)/.test(stateOf(cause))

/** The SQLSTATE of the failure or defect a transaction ended with; empty for any other. */
const stateOf = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.squash(cause)
  return error === null || typeof error !== "object" ? "" : String(sqlState(error as SqlError) ?? "")
}

/** How many times a transaction PostgreSQL refused for another's sake runs again before its caller hears it. */
const LOST_RETRIES = 3

/** A transaction PostgreSQL rolled back to let another go on: a serialization failure (40001) or a deadlock (40P01). */
const lostToAnother = (cause: Cause.Cause<unknown>): boolean => {
  const state = stateOf(cause)
  return state === "40001" || state === "40P01"
}

/** What a body inside a transaction finds in its context: the connection at its level, and the pending work. */
const opened = (connection: readonly [Connection, number], pending: Pending) =>
  Context.make(SqlClient.TransactionConnection, connection).pipe(Context.add(PendingWork, pending))

/** Runs each work once with its values. */
const runHanded = (handed: Handed) =>
  Effect.suspend(() => {
    const works = [...handed].filter(([, values]) => values.length > 0)
    handed.clear()
    return Effect.forEach(works, ([work, values]) => work.run(values), { discard: true })
  })

/** Runs each work handed over to run before the COMMIT, inside the transaction. */
const runPending = (pending: Pending) => runHanded(pending.before)

/**
 * Runs each work handed over to run after the COMMIT, once it succeeded. The COMMIT is done
 * whatever the work does: a work that fails is logged, and the callers hear their commit.
 */
const runCommitted = (pending: Pending): Effect.Effect<void> =>
  pending.after.size === 0
    ? Effect.void
    : Effect.catchAllCause(runHanded(pending.after), (cause) => Effect.logError("work after a COMMIT failed", cause))

const keep = <T>(handed: Handed, work: CommitWork<T>, value: T) => {
  const values = handed.get(work as CommitWork<unknown>)
  if (values) values.push(value)
  else handed.set(work as CommitWork<unknown>, [value])
}

/** The unit-of-work port over `SqlClient`: transactions (grouped under one COMMIT) and locks. */
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
          const pending = new Pending()
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
                return Effect.zipRight(Scope.close(scope, outcome), outcome._tag === "Success" ? Effect.zipRight(runCommitted(pending), reported) : reported)
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
  const waiting = yield* Queue.unbounded<Waiting>()

  /**
   * One item of a batch in a savepoint of its own, named as `withTransaction` names its first
   * level, so that a transaction the item opens inside nests below it (its context says level 1).
   * Written out rather than through `withTransaction`, whose span, scope and unprepared statement
   * cost several times the SAVEPOINT itself, on every item. Unlike `withTransaction`'s, a
   * savepoint that succeeds is released at once: SQLite keeps every open savepoint's journal, so
   * a batch of thirty items left open until its COMMIT made each item's statements write the
   * pages they touch into one more journal, nearly doubling their cost.
   */
  const inSavepoint = <A, E>(conn: Connection, effect: Effect.Effect<A, E>) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.zipRight(
        conn.execute("SAVEPOINT effect_sql_1", [], undefined),
        Effect.onError(
          Effect.tap(restore(effect), () => conn.execute("RELEASE SAVEPOINT effect_sql_1", [], undefined)),
          // A rollback to a savepoint leaves it open: it is released too, for the same reason.
          () =>
            Effect.orDie(Effect.zipRight(
              conn.execute("ROLLBACK TO SAVEPOINT effect_sql_1", [], undefined),
              conn.execute("RELEASE SAVEPOINT effect_sql_1", [], undefined)
            ))
        )
      )
    )

  const runBatch = (batch: ReadonlyArray<Waiting>) =>
    Effect.gen(function*() {
      const exits: Array<Exit.Exit<unknown, unknown>> = []
      const pending = new Pending()
      const outcome = yield* Effect.exit(plainTransaction(Effect.withFiberRuntime((fiber) => {
        const [conn, level] = Context.unsafeGet(fiber.currentContext, SqlClient.TransactionConnection)
        const own = fiber.getFiberRefs()
        // Each item runs with its caller's fiber refs and context, plus the batch's connection,
        // merged in one copy of the caller's context (it holds every service of the host).
        const itemRefs = refsFor(fiber, opened([conn, level + 1], pending))
        let last: FiberRefs.FiberRefs | undefined
        return Effect.gen(function*() {
          for (const item of batch) {
            const exit = yield* Effect.exit(
              withRefs(itemRefs(item.refs), droppedOnFailure(pending, Unavailable.classifyTransaction(inSavepoint(conn, item.effect))), own)
            )
            exits.push(exit)
            if (exit._tag === "Success") last = item.refs
            // A database error (disk full, I/O) may have ended the whole transaction in SQLite:
            // the rest of the batch must not run outside it. They wait for the next batch.
            if (exit._tag === "Failure" && Cause.isDie(exit.cause)) break
          }
          if (last !== undefined && pending.before.size > 0) yield* withRefs(refsOf(fiber, last, opened([conn, level], pending)), runPending(pending), own)
        })
      })))
      if (outcome._tag === "Success") yield* runCommitted(pending)
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

  /**
   * Runs one item alone, in an outermost transaction of its own, with its caller's fiber refs.
   * One that PostgreSQL refused for another's sake (a deadlock it broke, a serialization
   * failure) committed nothing and is run again, a few times: two servers' groups take the same
   * rows (an organization's count, a user's row, a log chain's head) in orders of their own, so
   * a deadlock is the cost of running them at once, not a fault of the write.
   */
  const alone = (item: Waiting, own: FiberRefs.FiberRefs) => {
    const attempt = (left: number): Effect.Effect<void> =>
      Effect.flatMap(Effect.exit(withRefs(item.refs, ownTransaction(item.effect), own)), (exit) =>
        left > 0 && exit._tag === "Failure" && lostToAnother(exit.cause) ? attempt(left - 1) : Effect.sync(() => item.done(exit)))
    return attempt(LOST_RETRIES)
  }

  /**
   * Group commit (PostgreSQL): transactions that queue up while the runners are busy run one
   * after another in one transaction on one pipelined connection, each at its outermost level,
   * so that its writes are held back and go with the next item's first statement: a consent
   * event then costs one round trip instead of two, and the BEGIN, the COMMIT, the consent log's
   * append and taking a connection from the pool are paid once per group. No savepoint per item
   * (each would be a subtransaction): an item that fails before any of its writes reached the
   * database has what it held back dropped, and the group goes on. Anything else that would
   * leave the transaction holding what must not commit (a statement that failed, which aborts
   * the transaction in PostgreSQL without saying whose it was; an item that failed after its
   * writes were sent; a COMMIT refused for a write it carried) rolls the group back, and every
   * item whose outcome is not known yet runs again, alone, as it would have without the group.
   * Each caller hears its outcome only after the COMMIT: nothing is acknowledged before it is
   * durable. A COMMIT that fails otherwise (a connection lost) may or may not have committed:
   * its items hear that failure and are not run again.
   */
  const runGroup = (batch: ReadonlyArray<Waiting>): Effect.Effect<void> =>
    Effect.withFiberRuntime((fiber) => {
      const own = fiber.getFiberRefs()
      if (batch.length === 1) return alone(batch[0]!, own)
      return Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(Scope.make(), (scope) =>
          Effect.flatMap(Effect.exit(Scope.extend(sql.reserve, scope)), (reserved): Effect.Effect<void> => {
            if (reserved._tag === "Failure") return Effect.zipRight(Scope.close(scope, Exit.void), Effect.forEach(batch, (item) => alone(item, own), { discard: true }))
            // Any failed statement sends every item back to run alone, where its checks are
            // told apart: here they may share a message.
            const conn = new PipelinedConnection(reserved.value, conflictOf, true)
            const pending = new Pending()
            const tail: Array<string> = []
            const itemRefs = refsFor(fiber, opened([conn, 0], pending))
            /**
             * The outcome of each item run and not to run again: a failure stands whatever the
             * group's (it wrote nothing, or what it wrote goes with the group's rollback).
             */
            const exits: Array<Exit.Exit<unknown, unknown>> = []
            let last: FiberRefs.FiberRefs | undefined
            let broken = false
            const body = Effect.gen(function*() {
              for (const item of batch) {
                const mark = conn.mark()
                const exit = yield* Effect.exit(
                  restore(withRefs(itemRefs(item.refs), droppedOnFailure(pending, Unavailable.classifyTransaction(item.effect)), own))
                )
                // A statement failed: whose, PostgreSQL does not say. Every item runs again alone.
                if (conn.aborted) return
                exits.push(exit)
                if (exit._tag === "Success") {
                  last = item.refs
                  continue
                }
                // Its writes are in the transaction: the others run again alone.
                if (conn.writesSentSince(mark) > 0) {
                  broken = true
                  return
                }
                conn.dropSince(mark)
              }
              if (last !== undefined && pending.before.size > 0) {
                yield* withRefs(refsOf(fiber, last, opened([conn, 0], pending)), Effect.provideService(runPending(pending), CommitTail, tail), own)
              }
            })
            return Effect.flatMap(Effect.exit(body), (ran): Effect.Effect<void> => {
              // A statement failed, even one whose error an item caught and went on: PostgreSQL
              // would answer the COMMIT with a ROLLBACK, and every item would lose its writes.
              if (conn.aborted) broken = true
              const commit: Effect.Effect<Exit.Exit<void, unknown>> = broken || ran._tag === "Failure" || last === undefined
                ? Effect.as(Effect.ignore(conn.rollback()), ran)
                : Effect.exit(Effect.tapError(conn.commit(tail), () => Effect.ignore(conn.rollback())))
              return Effect.flatMap(commit, (ended) => {
                // A COMMIT refused for a write or a check its message carried did not commit.
                if (!broken && last !== undefined && ended._tag === "Failure" && refused(conn, ended.cause)) broken = true
                // Only a group that committed hands over what its items kept for after it: one
                // that rolled back runs them again alone, and each run hands over its own.
                const committed = !broken && last !== undefined && ran._tag === "Success" && ended._tag === "Success"
                return Effect.zipRight(
                  Effect.zipRight(Scope.close(scope, Exit.void), committed ? runCommitted(pending) : Effect.void),
                  Effect.forEach(batch, (item, i) => {
                    const exit = exits[i]
                    if (exit?._tag === "Failure") return Effect.sync(() => item.done(exit))
                    if (broken || exit === undefined) return alone(item, own)
                    // A failed COMMIT (or the work before it) loses every write of the group.
                    if (ended._tag === "Failure") return Effect.flatMap(Effect.exit(Unavailable.classifyTransaction(ended)), (failed) => Effect.sync(() => item.done(failed)))
                    return Effect.sync(() => item.done(exit))
                  }, { discard: true })
                )
              })
            })
          })
        )
      )
    })

  if (dialect === "sqlite") yield* drainInBatches(waiting, 64, runBatch)
  else for (let i = 0; i < GROUP_RUNNERS; i++) yield* drainInBatches(waiting, GROUP_SIZE, runGroup)
  yield* Effect.addFinalizer(() =>
    Effect.flatMap(Queue.takeAll(waiting), (left) => Effect.fiberIdWith((id) => Effect.sync(() => { for (const item of left) item.done(Exit.interrupt(id)) })))
  )

  /** Read off the fiber's context in one step: every write of the consent path begins here. */
  const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiberRuntime<A, E, R>((fiber) => {
      const context = fiber.currentContext
      // Inside a transaction: a savepoint.
      const open = Context.getOption(context, PendingWork)
      if (Option.isSome(open)) return droppedOnFailure(open.value, plainTransaction(effect))
      // Inside one begun on the client directly: a savepoint, whose work runs at once.
      if (Option.isSome(Context.getOption(context, SqlClient.TransactionConnection))) return plainTransaction(effect)
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
      keep(open.value.before, work, value)
      return Effect.void
    })

  const afterCommit = <T>(work: CommitWork<T>, value: T): Effect.Effect<boolean> =>
    Effect.map(Effect.serviceOption(PendingWork), (open) => {
      if (Option.isNone(open)) return false
      keep(open.value.after, work, value)
      return true
    })

  // SQLite runs one transaction at a time already; PostgreSQL needs a transaction-scoped lock.
  const lock = (key: string): Effect.Effect<void> =>
    sql.onDialectOrElse({
      pg: () => sql`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0))`.pipe(Effect.asVoid, Unavailable.orDie),
      orElse: () => Effect.void
    })

  const inTransaction: Effect.Effect<boolean> = Effect.withFiberRuntime((fiber) => {
    const context = fiber.currentContext
    return Effect.succeed(
      Option.isSome(Context.getOption(context, PendingWork)) || Option.isSome(Context.getOption(context, SqlClient.TransactionConnection))
    )
  })

  return UnitOfWork.of({ transaction, beforeCommit, afterCommit, lock, inTransaction })
})

export const layer: Layer.Layer<UnitOfWork, never, SqlClient.SqlClient> = Layer.scoped(UnitOfWork, make)
