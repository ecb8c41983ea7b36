import { ConsentUsersResource, eq, gte, Storage, UnitOfWork } from "@cmp/core"
import { RowCounts } from "@cmp/store-sql"
import { createTestDatabase, type TestDatabase } from "@cmp/test-support/database"
import { rowCountSuite } from "@cmp/test-support/row-counts"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import { afterAll, beforeAll } from "vitest"
import { PgStore } from "../src/index.js"

/**
 * The row counts this store keeps are exact (the shared suite), and so they stay while its
 * writers add to rows of their own and folds move those rows into one, all at once.
 */
let db: TestDatabase

beforeAll(async () => {
  db = await createTestDatabase()
}, 60_000)
afterAll(() => db?.close())

const fresh = () =>
  Layer.unwrapEffect(
    Effect.promise(() => db.reset()).pipe(Effect.as(PgStore.layer({ url: db.url, maxConnections: db.maxConnections })))
  )

rowCountSuite(`postgres (${process.env.DATABASE_URL ? "DATABASE_URL" : "PGlite"})`, fresh)

const at = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, 0, n)).toISOString()
const user = (organizationId: string, id: string, n: number) => ({
  id,
  organization_id: organizationId,
  organization_user_id: null,
  metadata: null,
  country: null,
  consent_states: {},
  created_at: at(n),
  updated_at: at(n),
  version: 1
})

describe("row counts folded on PostgreSQL", () => {
  it.effect("writers, removals and folds at once: every count equals its rows at every instant, and after", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const uow = yield* UnitOfWork
      const users = (yield* Storage).repository(ConsentUsersResource.tableDef)
      const orgs = ["o1", "o2"]
      // One statement reads the count and the rows at one instant: they agree whatever runs.
      const agree = Effect.flatMap(
        sql<{ same: boolean }>`SELECT o.id, (SELECT COALESCE(SUM(row_count), 0) FROM consent_users_counts c WHERE c.organization_id = o.id)
            = (SELECT COUNT(*) FROM consent_users u WHERE u.organization_id = o.id) AS same
          FROM (VALUES ('o1'), ('o2')) AS o (id)`,
        (rows) => Effect.sync(() => assert.isTrue(rows.every((r) => r.same)))
      )
      const writer = (w: number) =>
        Effect.forEach(Array.from({ length: 15 }, (_, i) => i), (i) =>
          uow.transaction(Effect.gen(function*() {
            const org = orgs[(w + i) % 2]!
            yield* users.create(user(org, `w${w}-${i}`, i))
            yield* users.create(user(org, `w${w}-${i}-b`, i))
            // Every third transaction takes one of its rows back before committing.
            if (i % 3 === 0) yield* users.remove({ organization_id: org, id: `w${w}-${i}-b` })
          })), { discard: true })
      const folds = Effect.forever(Effect.zipRight(RowCounts.fold, agree))
      const folding = yield* Effect.fork(folds)
      yield* Effect.all(Array.from({ length: 4 }, (_, w) => writer(w)), { concurrency: "unbounded", discard: true })
      yield* Fiber.interrupt(folding)
      yield* agree

      const expected = 4 * 15 * 2 - 4 * 5
      const kept = yield* Effect.forEach(orgs, (o) => users.count([eq("organization_id", o)]))
      const read = yield* Effect.forEach(orgs, (o) => users.count([eq("organization_id", o), gte("created_at", at(0))]))
      assert.deepStrictEqual(kept, read)
      assert.strictEqual(kept[0]! + kept[1]!, expected)

      // Folded, each count is one row; a count that reaches zero leaves none.
      assert.isTrue(yield* RowCounts.fold)
      const rows = yield* sql<{ organization_id: string; slot: unknown }>`SELECT organization_id, slot FROM consent_users_counts ORDER BY organization_id`
      assert.deepStrictEqual(rows.map((r) => [r.organization_id, Number(r.slot)]), [["o1", 0], ["o2", 0]])
      yield* agree
      for (const o of orgs) {
        yield* Effect.forEach(
          (yield* users.find({ where: [eq("organization_id", o)], sort: [], limit: 1000, skip: 0 })).data,
          (u) => users.remove({ organization_id: o, id: u.id })
        )
      }
      assert.isTrue(yield* RowCounts.fold)
      assert.deepStrictEqual(yield* sql`SELECT * FROM consent_users_counts`, [])
      assert.deepStrictEqual(yield* Effect.forEach(orgs, (o) => users.count([eq("organization_id", o)])), [0, 0])
    }).pipe(Effect.provide(fresh())), { timeout: 120_000 })

  it.live("the rows folds remove are vacuumed away: a count reads past none of them, autovacuum or not", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const uow = yield* UnitOfWork
      const users = (yield* Storage).repository(ConsentUsersResource.tableDef)
      // Index entries a count of o1 reads: every row of the table it has ever held, dead or
      // alive, until a vacuum (a bitmap scan reads them all before it looks at the rows).
      const entries = sql.withTransaction(Effect.gen(function*() {
        yield* sql.unsafe("SET LOCAL enable_seqscan = off")
        yield* sql.unsafe("SET LOCAL enable_indexscan = off")
        const [plan] = yield* sql.unsafe<{ "QUERY PLAN": unknown }>(
          "EXPLAIN (ANALYZE, FORMAT JSON) SELECT SUM(row_count) FROM consent_users_counts WHERE organization_id = 'o1'"
        )
        const found: Array<number> = []
        const visit = (node: Record<string, unknown>) => {
          if (node["Node Type"] === "Bitmap Index Scan") found.push(Number(node["Actual Rows"]))
          for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? []) visit(child)
        }
        const root = plan!["QUERY PLAN"]
        visit(((typeof root === "string" ? JSON.parse(root) : root) as Array<{ Plan: Record<string, unknown> }>)[0]!.Plan)
        assert.lengthOf(found, 1)
        return found[0]!
      }))
      // Each transaction leaves a count row of its own, which the store's fold (every second)
      // deletes: 40 of them, then the fold's turn.
      for (let i = 0; i < 40; i++) yield* uow.transaction(users.create(user("o1", `v${i}`, i)))
      const waited = yield* Effect.gen(function*() {
        for (let tries = 0; tries < 40; tries++) {
          yield* Effect.sleep(Duration.millis(250))
          if ((yield* entries) <= 2) return true
        }
        return false
      })
      assert.isTrue(waited, `a count still reads ${yield* entries} entries of removed rows`)
      assert.strictEqual(yield* users.count([eq("organization_id", "o1")]), 40)
    }).pipe(Effect.provide(fresh())), { timeout: 60_000 })
})
