import { UnitOfWork } from "@cmp/core"
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import { twoServers } from "./TwoServers.js"

/**
 * Two servers' transactions that take the same two locks in opposite orders, at once: PostgreSQL
 * breaks the deadlock by rolling one back, and that one runs again instead of failing its
 * caller, so both commit. PGlite's socket serves one connection (no two transactions at once):
 * the machine's server only.
 */
const { store } = twoServers()

describe.skipIf(!process.env.DATABASE_URL)("PgStore: transactions of two servers that deadlock", () => {
  it.scopedLive("the one PostgreSQL rolls back runs again, and both commit their writes", () =>
    Effect.gen(function*() {
      const a = yield* store()
      const b = yield* store()
      const sql = Context.get(a, SqlClient.SqlClient)
      yield* sql`CREATE TABLE deadlock_writes (id text PRIMARY KEY)`
      const aHolds = yield* Deferred.make<void>()
      const bHolds = yield* Deferred.make<void>()
      const runs = { a: 0, b: 0 }
      /** Takes `first`, waits until the other holds its own, then takes `second`: one of the two must wait for the other. */
      const write = (context: Context.Context<never>, name: "a" | "b", first: string, second: string) => {
        const uow = Context.get(context as Context.Context<UnitOfWork>, UnitOfWork)
        const client = Context.get(context as Context.Context<SqlClient.SqlClient>, SqlClient.SqlClient)
        const mine = name === "a" ? aHolds : bHolds
        const theirs = name === "a" ? bHolds : aHolds
        return uow.transaction(Effect.gen(function*() {
          runs[name]++
          yield* client`INSERT INTO deadlock_writes (id) VALUES (${name})`
          yield* uow.lock(first)
          yield* Deferred.succeed(mine, undefined)
          yield* Deferred.await(theirs)
          yield* uow.lock(second)
          return name
        }))
      }
      const done = yield* Effect.all([write(a, "a", "x", "y"), write(b, "b", "y", "x")], { concurrency: 2 })
      assert.deepStrictEqual(done, ["a", "b"])
      // One of them was rolled back to break the deadlock, and ran again.
      assert.strictEqual(runs.a + runs.b, 3)
      const rows = yield* sql<{ id: string }>`SELECT id FROM deadlock_writes ORDER BY id`
      assert.deepStrictEqual(rows.map((r) => r.id), ["a", "b"])
    }), { timeout: 60_000 })
})
