import { ChangeFeed, type CommitWork, UnitOfWork } from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { CommitTail, literal } from "./CommitTail.js"
import { execute } from "./Execute.js"
import * as Unavailable from "./Unavailable.js"
import { dialectOf } from "./SqlValues.js"

/**
 * The change feed over `SqlClient`. On PostgreSQL it is `NOTIFY` on one channel, each payload
 * `<feed> <topic> <news>` (the feed: a random id per process's store, so a process skips its own),
 * and, where the store is given a way to `LISTEN` (`Listen`), one connection that hears it:
 * - `announce` hands the `pg_notify` to the transaction's pre-commit work, sent with its COMMIT
 *   (no round trip of its own): PostgreSQL delivers it when, and only if, the transaction commits.
 *   A transaction that notifies holds a lock on the database's notification queue through its
 *   commit, which serialises such commits: fine for a webhook's change, not for every consent event.
 * - `ring` notifies after the commit, outside any transaction, at most once per `RING_GAP_MS` for
 *   all the rings in between: the first at once, the others' after it.
 * - Listening, the process notifies itself every `HEARTBEAT_MS`: a notification of its own that
 *   does not come back means the listening connection is gone (the driver drops its errors), and
 *   it connects again. Until it does, the other processes' news is lost, and what listens falls
 *   back on its own bounds (a ttl, a poll).
 * SQLite: nothing crosses processes (a process tells itself directly).
 */

/** The channel every process of a store listens on. */
export const CHANNEL = "cmp_changes"

/** How the dialect hears a channel: PostgreSQL's `LISTEN` (`@effect/sql-pg`'s `listen`), a payload per notification. */
export class Listen extends Context.Tag("@cmp/store-sql/SqlChangeFeed/Listen")<
  Listen,
  (channel: string) => Stream.Stream<string, SqlError>
>() {}

/** The shortest time between two notifications of one topic's rings. */
export const RING_GAP_MS = 25
/** How often a listening process checks its connection with a notification to itself. */
export const HEARTBEAT_MS = 5_000
/** How long a new listening connection may take to hear its first notification of its own. */
const CONNECT_MS = 10_000
/** How often a new listening connection notifies itself until it hears one. */
const FIRST_PING_MS = 250
/** The wait before connecting again after a listening connection is lost or refused. */
const RETRY_MS = 1_000
/** The topic of a process's notifications to itself. */
const PING = "~ping"

class Deaf extends Data.TaggedError("Deaf")<{ readonly message: string }> {}

const none = ChangeFeed.of({ announce: () => Effect.void, ring: () => Effect.void, listen: () => Effect.void })

export const make = (hear: Option.Option<Listen["Type"]>) =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    if (dialectOf(sql) !== "pg") return none
    const uow = yield* UnitOfWork
    const scope = yield* Effect.scope
    const self = globalThis.crypto.randomUUID()
    const payload = (topic: string, news: string) => `${self} ${topic} ${news}`
    const send = (text: string) => execute(sql`SELECT pg_notify(${CHANNEL}, ${text})`)

    const notified: CommitWork<string> = {
      run: (values) =>
        Effect.flatMap(Effect.serviceOption(CommitTail), (tail) => {
          const distinct = [...new Set(values)]
          if (Option.isSome(tail)) {
            for (const text of distinct) tail.value.push(`SELECT pg_notify('${CHANNEL}', ${literal(text)})`)
            return Effect.void
          }
          const all = Effect.forEach(distinct, send, { discard: true })
          return Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (inside) =>
            // A failed statement aborts the transaction, whose COMMIT would then quietly roll it
            // back: it must fail the write. Outside one, the change is made; only its news is lost.
            Option.isSome(inside)
              ? Unavailable.orDie(all)
              : Effect.catchAll(all, (error) => Effect.logWarning("a change's notification to the other servers failed", error)))
        })
    }

    const rings = new Map<string, { running: boolean; again: boolean }>()
    const ring = (topic: string) =>
      Effect.suspend(() => {
        let state = rings.get(topic)
        if (state === undefined) rings.set(topic, state = { running: false, again: false })
        if (state.running) {
          state.again = true
          return Effect.void
        }
        state.running = true
        return Effect.asVoid(Effect.forkIn(ringUntilQuiet(topic, state), scope))
      })
    const ringUntilQuiet = (topic: string, state: { running: boolean; again: boolean }) =>
      Effect.gen(function*() {
        for (;;) {
          yield* send(payload(topic, "")).pipe(Effect.catchAll((error) => Effect.logDebug("a ring to the other servers failed", error)))
          yield* Effect.sleep(RING_GAP_MS)
          // Between two yields, so no ring can fall between the look and the end of the loop.
          const again = state.again
          state.again = false
          if (!again) {
            state.running = false
            return
          }
        }
      })

    const listeners = new Map<string, Set<(news: string) => Effect.Effect<void>>>()
    const dispatch = (text: string, heardPing: (n: number) => void): Effect.Effect<void> => {
      const first = text.indexOf(" ")
      const second = first < 0 ? -1 : text.indexOf(" ", first + 1)
      if (second < 0) return Effect.void
      const topic = text.slice(first + 1, second)
      const news = text.slice(second + 1)
      if (text.slice(0, first) === self) {
        if (topic === PING) heardPing(Number(news))
        return Effect.void
      }
      const heard = listeners.get(topic)
      return heard === undefined || heard.size === 0 ? Effect.void : Effect.forEach([...heard], (h) => h(news), { discard: true })
    }

    /** One listening connection, until it is found gone: a failure, never a success. */
    const session = (listen: Listen["Type"], onLive: Effect.Effect<void>) =>
      Effect.gen(function*() {
        let heard = 0
        let sent = 0
        const ping = Effect.suspend(() => send(payload(PING, String(++sent)))).pipe(Effect.ignore)
        const check = Effect.gen(function*() {
          // The monotonic clock: a clock a host sets (or moves) must not stretch or cut the wait.
          const started = performance.now()
          // LISTEN runs as the stream starts: the first notifications may go before it.
          while (heard === 0) {
            if (performance.now() - started > CONNECT_MS) return yield* Effect.fail(new Deaf({ message: "no notification of its own came back" }))
            yield* ping
            yield* Effect.sleep(FIRST_PING_MS)
          }
          yield* onLive
          for (;;) {
            yield* ping
            yield* Effect.sleep(HEARTBEAT_MS)
            if (heard < sent) return yield* Effect.fail(new Deaf({ message: "its own notification did not come back" }))
          }
        })
        const hearing = Stream.runForEach(listen(CHANNEL), (text) => dispatch(text, (n) => (heard = Math.max(heard, n))))
        return yield* Effect.raceFirst(hearing, check)
      })

    let started = false
    const keepListening = (listen: Listen["Type"]) => {
      let live = false
      const onLive = Effect.suspend(() => {
        const was = live
        live = true
        return was ? Effect.void : Effect.logDebug("listening to the other servers' changes")
      })
      return session(listen, onLive).pipe(
        Effect.catchAllCause((cause) => {
          if (!live) return Effect.logDebug("not listening to the other servers' changes", cause)
          live = false
          return Effect.logWarning(
            "the connection listening to the other servers' changes is lost: connecting again; meanwhile their changes are seen within the caches' ttl and the dispatchers' poll",
            cause
          )
        }),
        Effect.zipRight(Effect.sleep(RETRY_MS)),
        Effect.forever
      )
    }

    return ChangeFeed.of({
      announce: (topic, news) => uow.beforeCommit(notified, payload(topic, news)),
      ring,
      listen: (topic, heard) =>
        Effect.gen(function*() {
          if (Option.isNone(hear)) return
          let set = listeners.get(topic)
          if (set === undefined) listeners.set(topic, set = new Set())
          set.add(heard)
          yield* Effect.addFinalizer(() => Effect.sync(() => set.delete(heard)))
          if (started) return
          started = true
          yield* Effect.forkIn(keepListening(hear.value), scope)
        })
    })
  })

/** The feed that tells the other processes but hears nothing (no `LISTEN` connection). */
export const layer: Layer.Layer<ChangeFeed, never, SqlClient.SqlClient | UnitOfWork> = Layer.scoped(ChangeFeed, make(Option.none()))

/** The feed that also hears the other processes, through `Listen`, once something listens. */
export const layerListening: Layer.Layer<ChangeFeed, never, SqlClient.SqlClient | UnitOfWork | Listen> = Layer.scoped(
  ChangeFeed,
  Effect.flatMap(Listen, (listen) => make(Option.some(listen)))
)
