import { ChangeFeed, UnitOfWork } from "@cmp/core"
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import { twoServers } from "./TwoServers.js"

/**
 * The change feed between two stores on one database, as two servers have them: news announced
 * in a transaction reaches the other once it commits and never when it rolls back, a ring after a
 * commit reaches it too, neither comes back to its sender, and a listening connection that the
 * database ends is opened again. PGlite's socket serves one connection, so no `LISTEN`: the
 * machine's server only.
 */
const { store } = twoServers()

/** What a feed hears on a topic, in order. */
const listening = (feed: ChangeFeed["Type"], topic: string) =>
  Effect.gen(function*() {
    const heard: Array<string> = []
    yield* feed.listen(topic, (news) => Effect.sync(() => heard.push(news)))
    return heard
  })

/** Announces numbered news outside a transaction until `heard` holds one of them (a listener is live once it does). */
const untilHeard = (feed: ChangeFeed["Type"], topic: string, prefix: string, heard: Array<string>, limitMs = 30_000) =>
  Effect.gen(function*() {
    const started = Date.now()
    for (let n = 0; !heard.some((h) => h.startsWith(prefix)); n++) {
      if (Date.now() - started > limitMs) return yield* Effect.dieMessage(`nothing of ${prefix} heard within ${limitMs} ms`)
      yield* feed.announce(topic, `${prefix}-${n}`)
      yield* Effect.sleep(100)
    }
  })

const waitFor = (condition: () => boolean, limitMs = 10_000) =>
  Effect.gen(function*() {
    const started = Date.now()
    while (!condition()) {
      if (Date.now() - started > limitMs) return yield* Effect.dieMessage(`not so within ${limitMs} ms`)
      yield* Effect.sleep(20)
    }
  })

describe.skipIf(!process.env.DATABASE_URL)("PgStore: the change feed between two servers", () => {
  it.scopedLive("news of a committed transaction is heard by the other, never that of one rolled back, never by its sender", () =>
    Effect.gen(function*() {
      const a = yield* store()
      const b = yield* store()
      const feedA = Context.get(a, ChangeFeed)
      const feedB = Context.get(b, ChangeFeed)
      const heardByA = yield* listening(feedA, "things")
      const heardByB = yield* listening(feedB, "things")
      yield* untilHeard(feedA, "things", "ready", heardByB)

      // Sent as SQL text with the COMMIT: quotes and backslashes must arrive as they were.
      const committed = `committed: it's a \\ back'slash, "quoted"`
      const uow = Context.get(a, UnitOfWork)
      const sql = Context.get(a, SqlClient.SqlClient)
      const rolledBack = yield* Effect.exit(uow.transaction(Effect.gen(function*() {
        yield* feedA.announce("things", "rolled back")
        return yield* Effect.fail("refused")
      })))
      assert.strictEqual(rolledBack._tag, "Failure")
      yield* uow.transaction(Effect.gen(function*() {
        yield* feedA.announce("things", committed)
        // Sent with the COMMIT: the other hears nothing while the transaction is open.
        yield* sql`SELECT 1`
      }))
      yield* feedA.announce("things", "after")
      yield* feedB.announce("things", "from b")
      yield* waitFor(() => heardByB.includes("after") && heardByA.includes("from b"))

      assert.deepStrictEqual(heardByB.filter((h) => !h.startsWith("ready")), [committed, "after"])
      assert.deepStrictEqual(heardByA, ["from b"])
    }), { timeout: 60_000 })

  it.scopedLive("a ring after a commit is heard by the other, with empty news", () =>
    Effect.gen(function*() {
      const a = yield* store()
      const b = yield* store()
      const feedA = Context.get(a, ChangeFeed)
      const feedB = Context.get(b, ChangeFeed)
      const heardByA = yield* listening(feedA, "rung")
      const heardByB = yield* listening(feedB, "rung")
      yield* untilHeard(feedA, "rung", "ready", heardByB)
      yield* Effect.forEach(Array.from({ length: 20 }), () => feedA.ring("rung"), { discard: true })
      yield* waitFor(() => heardByB.includes(""))
      assert.deepStrictEqual(heardByA, [])
    }), { timeout: 60_000 })

  it.scopedLive("a listening connection ended by the database is opened again, and hears again", () =>
    Effect.gen(function*() {
      const a = yield* store()
      const b = yield* store()
      const feedA = Context.get(a, ChangeFeed)
      const heardByB = yield* listening(Context.get(b, ChangeFeed), "things")
      yield* untilHeard(feedA, "things", "before", heardByB)
      const sql = Context.get(a, SqlClient.SqlClient)
      const ended = yield* sql<{ pid: number }>`
        SELECT pg_terminate_backend(pid) AS pid FROM pg_stat_activity
        WHERE datname = current_database() AND query LIKE 'LISTEN %'`
      assert.isAbove(ended.length, 0)
      yield* untilHeard(feedA, "things", "again", heardByB, 45_000)
    }), { timeout: 60_000 })
})
