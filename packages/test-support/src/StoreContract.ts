/**
 * The contract every store of the core ports must honour, run by each store package against
 * its own layer (modelled on `@effect/sql`'s `SqlPersistedQueueTest`): `suite(name, makeLayer)`
 * registers the tests, each of which builds a FRESH store from `makeLayer()` (so no test sees
 * another's rows; `it.layer` would share one instance).
 *
 * Tables: the suite creates its own table `contract_items` with portable SQL (the column types
 * differ per dialect only where they must), and also uses the real, migrated core tables.
 */
import * as crypto from "node:crypto"
import {
  AttemptsTable,
  ChangeFeed,
  type CommitWork,
  ConsentLogStore,
  ProofFiles,
  type Condition,
  DeliveriesTable,
  DeliveryQueue,
  type DeliveryRow,
  DeliveryStats,
  Conflict,
  ExpiryAnnouncements,
  defineTable,
  emptyQuery,
  eq,
  field,
  type FieldInfo,
  isStoreUnavailable,
  type FindQuery,
  MailOutboxTable,
  MailQueue,
  type MailRecord,
  NotFound,
  type Row,
  type SortKey,
  Storage,
  type StorePorts,
  type StoreUnavailable,
  SubscriberRegistrations,
  SubscribersTable,
  Tables,
  UnitOfWork,
  UsageStore,
  UserStatesTable,
  WebhooksResource
} from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, expect, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Deferred from "effect/Deferred"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"

export type StoreServices = StorePorts | SqlClient.SqlClient

// ---------------------------------------------------------------- the suite's own table

const optionalNumber: FieldInfo = { kind: "number", nullable: true }

export const Items = defineTable("contract_items", {
  id: field.string,
  organization_id: field.string,
  name: field.string,
  score: optionalNumber,
  active: field.boolean,
  tags: field.json,
  seen_at: field.optionalTimestamp,
  created_at: field.timestamp,
  updated_at: field.timestamp,
  version: field.number
}, { unique: [["organization_id", "name"]] })

/** Creates `contract_items`; the column types are the only thing that differs per dialect. */
export const createItemsTable = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const type = sql.onDialectOrElse({
    pg: () => ({ bool: "BOOLEAN", json: "JSONB", time: "TIMESTAMPTZ" }),
    orElse: () => ({ bool: "INTEGER", json: "TEXT", time: "TEXT" })
  })
  yield* sql.unsafe(`CREATE TABLE contract_items (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  name TEXT NOT NULL,
  score INTEGER,
  active ${type.bool} NOT NULL,
  tags ${type.json},
  seen_at ${type.time},
  created_at ${type.time} NOT NULL,
  updated_at ${type.time} NOT NULL,
  version INTEGER NOT NULL,
  UNIQUE (organization_id, name)
)`)
}).pipe(Effect.orDie)

/** A table keyed by `(organization_id, id)`, as consent events and users are (keyset paging). */
export const KeyedItems = defineTable("contract_keyed_items", {
  organization_id: field.string,
  id: field.string,
  name: field.string,
  note: field.optionalString,
  created_at: field.timestamp,
  updated_at: field.timestamp,
  version: field.number
}, { key: ["organization_id", "id"] })

const createKeyedItemsTable = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const time = sql.onDialectOrElse({ pg: () => "TIMESTAMPTZ", orElse: () => "TEXT" })
  yield* sql.unsafe(`CREATE TABLE contract_keyed_items (
  organization_id TEXT NOT NULL,
  id TEXT NOT NULL,
  name TEXT NOT NULL,
  note TEXT,
  created_at ${time} NOT NULL,
  updated_at ${time} NOT NULL,
  version INTEGER NOT NULL,
  PRIMARY KEY (organization_id, id)
)`)
}).pipe(Effect.orDie)

// ---------------------------------------------------------------- helpers

/** `2024-01-01T00:00:<n>.000Z`: distinct, ordered creation times. */
const at = (n: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, n)).toISOString()

const item = (id: string, over: Row = {}): Row => ({
  id,
  organization_id: "o1",
  name: id,
  score: null,
  active: false,
  tags: null,
  seen_at: null,
  created_at: at(0),
  updated_at: at(0),
  version: 1,
  ...over
})

// Untyped on purpose: the suite also writes rows a typed caller could not (unknown columns).
const items = Effect.map(Storage, (s) => s.repository<Row>(Items))

const cmp = (f: string, op: "eq" | "ne" | "lt" | "lte" | "gt" | "gte", value: string | number | boolean | null) =>
  ({ _tag: "Compare", field: f, op, value }) satisfies Condition
const isIn = (f: string, values: ReadonlyArray<string | number | boolean | null>) =>
  ({ _tag: "In", field: f, negate: false, values }) satisfies Condition
const notIn = (f: string, values: ReadonlyArray<string | number | boolean | null>) =>
  ({ _tag: "In", field: f, negate: true, values }) satisfies Condition
const or = (...branches: ReadonlyArray<ReadonlyArray<Condition>>) => ({ _tag: "Or", branches }) satisfies Condition

const asc = (f: string): SortKey => ({ field: f, direction: 1 })
const desc = (f: string): SortKey => ({ field: f, direction: -1 })

const query = (q: Partial<FindQuery>): FindQuery => ({ ...emptyQuery, ...q })

/** The ids a query returns, in the store's order. */
const idsOf = (q: Partial<FindQuery>) =>
  Effect.flatMap(items, (repo) => repo.find(query(q))).pipe(Effect.map((page) => page.data.map((r) => r.id)))

/** The ids matching `where`, sorted by id so only the set matters; also checks `count` agrees. */
const matching = (...where: ReadonlyArray<Condition>) =>
  Effect.gen(function*() {
    const repo = yield* items
    const page = yield* repo.find(query({ where, sort: [asc("id")] }))
    const count = yield* repo.count(where)
    assert.strictEqual(page.total, page.data.length, "total of an unpaged find")
    assert.strictEqual(count, page.total, "count agrees with find's total")
    return page.data.map((r) => r.id)
  })

/**
 * The query fixture. Creation order (b, d, a, e, c) differs from id order (a..e) so the
 * default sort is observable.
 */
const seed = Effect.gen(function*() {
  const repo = yield* items
  const rows = [
    item("a", { name: "alpha", score: 10, active: true, seen_at: "2024-01-01T00:00:00.000Z", created_at: at(3) }),
    item("b", { name: "bravo", score: 20, active: false, seen_at: "2024-02-01T00:00:00.000Z", created_at: at(1) }),
    item("c", { name: "charlie", score: null, active: true, seen_at: null, created_at: at(5) }),
    item("d", { name: "delta", score: 30, active: false, seen_at: "2024-03-01T00:00:00.500Z", created_at: at(2) }),
    item("e", { organization_id: "o2", name: "alpha", score: 20, active: true, seen_at: null, created_at: at(4) })
  ]
  yield* Effect.forEach(rows, (r) => repo.create(r), { discard: true })
  return rows
}).pipe(Effect.orDie)

const snapshot = Effect.flatMap(items, (repo) => repo.find(query({ sort: [asc("id")], limit: 1000 })))

// ---------------------------------------------------------------- the suite

export const suite = (name: string, makeLayer: () => Layer.Layer<StoreServices>) =>
  describe(`store contract: ${name}`, () => {
    /**
     * Runs a test against a fresh store with `contract_items` created, with tracing off as a
     * server runs by default: statements then take the store's direct paths (`Execute`).
     */
    const run = <A, E>(effect: Effect.Effect<A, E, StoreServices>) =>
      Effect.provide(Effect.zipRight(createItemsTable, effect), makeLayer()).pipe(Effect.withTracerEnabled(false))

    describe("repository", () => {
      it.effect("create returns the stored row; get finds it; get of a missing id is none", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const row = item("x1", { score: 7, active: true, tags: ["t"], seen_at: at(9) })
          const created = yield* repo.create(row)
          assert.deepStrictEqual(created, row)
          assert.deepStrictEqual(yield* repo.get("x1"), Option.some(row))
          assert.deepStrictEqual(yield* repo.get("nope"), Option.none())
        })))

      it.effect("create fills columns it was not given with null", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const { score: _s, tags: _t, seen_at: _a, ...partial } = item("x1")
          const created = yield* repo.create(partial)
          assert.deepStrictEqual(created, item("x1"))
        })))

      it.effect("create ignores keys that are not columns", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const created = yield* repo.create({ ...item("x1"), secret: "not a column" })
          assert.deepStrictEqual(created, item("x1"))
        })))

      it.effect("find and count with no conditions see every row", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const empty = yield* repo.find(emptyQuery)
          assert.deepStrictEqual(empty, { total: 0, limit: emptyQuery.limit, skip: 0, data: [] })
          assert.strictEqual(yield* repo.count([]), 0)
          const rows = yield* seed
          const page = yield* repo.find(query({ sort: [asc("id")] }))
          assert.strictEqual(page.total, 5)
          assert.deepStrictEqual(page.data, [...rows].sort((x, y) => String(x.id).localeCompare(String(y.id))))
          assert.strictEqual(yield* repo.count([]), 5)
        })))

      it.effect("update replaces every column but id and created_at, and bumps version by 1", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          yield* repo.create(item("x1", { score: 1, active: true, tags: { a: 1 }, seen_at: at(1) }))
          const updated = yield* repo.update("x1", {
            id: "ignored",
            organization_id: "o9",
            name: "renamed",
            active: false,
            created_at: at(50),
            updated_at: at(60),
            version: 99
          }, 1)
          const expected = item("x1", {
            organization_id: "o9",
            name: "renamed",
            score: null,
            active: false,
            tags: null,
            seen_at: null,
            created_at: at(0),
            updated_at: at(60),
            version: 2
          })
          assert.deepStrictEqual(updated, expected)
          assert.deepStrictEqual(yield* repo.get("x1"), Option.some(expected))
          assert.deepStrictEqual(yield* repo.get("ignored"), Option.none())
        })))

      it.effect("patch writes only the given columns and bumps version by 1", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const row = item("x1", { score: 1, active: true, tags: { a: 1 }, seen_at: at(1) })
          yield* repo.create(row)
          const patched = yield* repo.patch("x1", { score: 2, updated_at: at(7) }, 1)
          const expected = { ...row, score: 2, updated_at: at(7), version: 2 }
          assert.deepStrictEqual(patched, expected)
          assert.deepStrictEqual(yield* repo.get("x1"), Option.some(expected))
          const again = yield* repo.patch("x1", { seen_at: null, tags: null, active: false }, 2)
          assert.deepStrictEqual(again, { ...expected, seen_at: null, tags: null, active: false, version: 3 })
        })))

      it.effect("patch ignores id and version in the changes", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          yield* repo.create(item("x1"))
          const patched = yield* repo.patch("x1", { id: "other", version: 42, name: "n" }, 1)
          assert.deepStrictEqual(patched, item("x1", { name: "n", version: 2 }))
          assert.deepStrictEqual(yield* repo.get("other"), Option.none())
        })))

      it.effect("remove returns the removed row, with or without an expected version", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          yield* repo.create(item("x1"))
          yield* repo.create(item("x2"))
          assert.deepStrictEqual(yield* repo.remove("x1"), Option.some(item("x1")))
          assert.deepStrictEqual(yield* repo.remove("x2", 1), Option.some(item("x2")))
          assert.deepStrictEqual(yield* repo.get("x1"), Option.none())
          assert.deepStrictEqual(yield* repo.get("x2"), Option.none())
          assert.strictEqual(yield* repo.count([]), 0)
        })))

      it.effect("a database that refuses writes is core's StoreUnavailable (read-only), not the driver's error", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const sql = yield* SqlClient.SqlClient
          // SQLite: the connection stops writing; PostgreSQL: a read-only transaction, as on a standby.
          const refused = yield* sql.onDialectOrElse({
            pg: () => Effect.exit(sql.withTransaction(sql`SET TRANSACTION READ ONLY`.pipe(Effect.zipRight(repo.create(item("ro")))))),
            orElse: () =>
              Effect.acquireUseRelease(
                sql.unsafe("PRAGMA query_only = 1"),
                () => Effect.exit(repo.create(item("ro"))),
                () => Effect.orDie(sql.unsafe("PRAGMA query_only = 0"))
              )
          })
          const defect = Exit.isFailure(refused) ? Option.getOrUndefined(Cause.dieOption(refused.cause)) : undefined
          assert.isTrue(isStoreUnavailable(defect), String(defect))
          assert.strictEqual((defect as StoreUnavailable).reason, "read-only")
          // Writes work again once the database does, and nothing was half-written.
          assert.deepStrictEqual(yield* repo.get("ro"), Option.none())
          yield* repo.create(item("ro"))
          assert.isTrue(Option.isSome(yield* repo.get("ro")))
        })))

      it.effect("remove of a missing id is none, with or without an expected version", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          assert.deepStrictEqual(yield* repo.remove("nope"), Option.none())
          assert.deepStrictEqual(yield* repo.remove("nope", 1), Option.none())
        })))
    })

    describe("query operators", () => {
      it.effect("eq on strings, numbers, booleans and timestamps", () =>
        run(Effect.gen(function*() {
          yield* seed
          assert.deepStrictEqual(yield* matching(cmp("name", "eq", "alpha")), ["a", "e"])
          assert.deepStrictEqual(yield* matching(cmp("score", "eq", 20)), ["b", "e"])
          assert.deepStrictEqual(yield* matching(cmp("active", "eq", true)), ["a", "c", "e"])
          assert.deepStrictEqual(yield* matching(cmp("active", "eq", false)), ["b", "d"])
          assert.deepStrictEqual(yield* matching(cmp("seen_at", "eq", "2024-02-01T00:00:00.000Z")), ["b"])
          assert.deepStrictEqual(yield* matching(cmp("name", "eq", "zulu")), [])
        })))

      it.effect("eq null matches exactly the NULL rows", () =>
        run(Effect.gen(function*() {
          yield* seed
          assert.deepStrictEqual(yield* matching(cmp("score", "eq", null)), ["c"])
          assert.deepStrictEqual(yield* matching(cmp("seen_at", "eq", null)), ["c", "e"])
        })))

      it.effect("ne matches NULL rows too; ne null matches the non-NULL rows", () =>
        run(Effect.gen(function*() {
          yield* seed
          assert.deepStrictEqual(yield* matching(cmp("score", "ne", 20)), ["a", "c", "d"])
          assert.deepStrictEqual(yield* matching(cmp("seen_at", "ne", "2024-02-01T00:00:00.000Z")), ["a", "c", "d", "e"])
          assert.deepStrictEqual(yield* matching(cmp("active", "ne", true)), ["b", "d"])
          assert.deepStrictEqual(yield* matching(cmp("name", "ne", "alpha")), ["b", "c", "d"])
          assert.deepStrictEqual(yield* matching(cmp("score", "ne", null)), ["a", "b", "d", "e"])
          assert.deepStrictEqual(yield* matching(cmp("seen_at", "ne", null)), ["a", "b", "d"])
        })))

      it.effect("lt/lte/gt/gte on numbers never match NULL", () =>
        run(Effect.gen(function*() {
          yield* seed
          assert.deepStrictEqual(yield* matching(cmp("score", "lt", 20)), ["a"])
          assert.deepStrictEqual(yield* matching(cmp("score", "lte", 20)), ["a", "b", "e"])
          assert.deepStrictEqual(yield* matching(cmp("score", "gt", 20)), ["d"])
          assert.deepStrictEqual(yield* matching(cmp("score", "gte", 20)), ["b", "d", "e"])
          assert.deepStrictEqual(yield* matching(cmp("score", "gte", 10), cmp("score", "lt", 30)), ["a", "b", "e"])
          assert.deepStrictEqual(yield* matching(cmp("score", "gt", 1000)), [])
        })))

      it.effect("lt/lte/gt/gte on timestamps compare instants to the millisecond", () =>
        run(Effect.gen(function*() {
          yield* seed
          const feb = "2024-02-01T00:00:00.000Z"
          assert.deepStrictEqual(yield* matching(cmp("seen_at", "lt", feb)), ["a"])
          assert.deepStrictEqual(yield* matching(cmp("seen_at", "lte", feb)), ["a", "b"])
          assert.deepStrictEqual(yield* matching(cmp("seen_at", "gt", feb)), ["d"])
          assert.deepStrictEqual(yield* matching(cmp("seen_at", "gte", feb)), ["b", "d"])
          // d is at .500: milliseconds count.
          assert.deepStrictEqual(yield* matching(cmp("seen_at", "gt", "2024-03-01T00:00:00.000Z")), ["d"])
          assert.deepStrictEqual(yield* matching(cmp("seen_at", "lt", "2024-03-01T00:00:00.500Z")), ["a", "b"])
          assert.deepStrictEqual(yield* matching(cmp("seen_at", "lte", "2024-03-01T00:00:00.500Z")), ["a", "b", "d"])
          assert.deepStrictEqual(yield* matching(cmp("seen_at", "gt", "2024-03-01T00:00:00.501Z")), [])
          // Non-null timestamp columns too.
          assert.deepStrictEqual(yield* matching(cmp("created_at", "gte", at(4))), ["c", "e"])
        })))

      it.effect("$in, with a null member, and an empty list matching nothing", () =>
        run(Effect.gen(function*() {
          yield* seed
          assert.deepStrictEqual(yield* matching(isIn("name", ["alpha", "delta"])), ["a", "d", "e"])
          assert.deepStrictEqual(yield* matching(isIn("score", [10, 30])), ["a", "d"])
          assert.deepStrictEqual(yield* matching(isIn("active", [false])), ["b", "d"])
          assert.deepStrictEqual(yield* matching(isIn("score", [10, null])), ["a", "c"])
          assert.deepStrictEqual(yield* matching(isIn("score", [null])), ["c"])
          assert.deepStrictEqual(yield* matching(isIn("score", [])), [])
          assert.deepStrictEqual(yield* matching(isIn("seen_at", ["2024-01-01T00:00:00.000Z", null])), ["a", "c", "e"])
        })))

      it.effect("$nin includes NULL rows unless null is in the list; an empty list matches all", () =>
        run(Effect.gen(function*() {
          yield* seed
          assert.deepStrictEqual(yield* matching(notIn("score", [10, 20])), ["c", "d"])
          assert.deepStrictEqual(yield* matching(notIn("score", [10, null])), ["b", "d", "e"])
          assert.deepStrictEqual(yield* matching(notIn("score", [null])), ["a", "b", "d", "e"])
          assert.deepStrictEqual(yield* matching(notIn("score", [])), ["a", "b", "c", "d", "e"])
          assert.deepStrictEqual(yield* matching(notIn("name", ["alpha"])), ["b", "c", "d"])
          assert.deepStrictEqual(yield* matching(notIn("active", [true])), ["b", "d"])
        })))

      it.effect("a prefix compares exactly: case, and no wildcard; negated, the rest", () =>
        run(Effect.gen(function*() {
          yield* seed
          const prefix = (value: string, negate = false) => ({ _tag: "Prefix", field: "name", negate, value }) satisfies Condition
          assert.deepStrictEqual(yield* matching(prefix("al")), ["a", "e"])
          assert.deepStrictEqual(yield* matching(prefix("alpha")), ["a", "e"])
          assert.deepStrictEqual(yield* matching(prefix("AL")), [])
          assert.deepStrictEqual(yield* matching(prefix("a_")), [])
          assert.deepStrictEqual(yield* matching(prefix("a%")), [])
          assert.deepStrictEqual(yield* matching(prefix("al", true)), ["b", "c", "d"])
          assert.deepStrictEqual(yield* matching(prefix("AL", true)), ["a", "b", "c", "d", "e"])
        })))

      it.effect("a semi-join: rows with (or without) a linked row of another table meeting its own conditions", () =>
        run(Effect.gen(function*() {
          yield* seed
          yield* createKeyedItemsTable
          const keyed = yield* Effect.map(Storage, (s) => s.repository<Row>(KeyedItems))
          const linked = (organization_id: string, id: string, name: string, n: number) =>
            keyed.create({ organization_id, id, name, note: null, created_at: at(n), updated_at: at(n), version: 1 })
          yield* Effect.orDie(Effect.all([linked("o1", "a", "one", 1), linked("o1", "c", "two", 5), linked("o2", "e", "one", 9), linked("o2", "b", "one", 1)]))
          const link = [["organization_id", "organization_id"], ["id", "id"]] as const
          const exists = (where: ReadonlyArray<Condition>, negate = false) => ({ _tag: "Exists", table: KeyedItems, link, where, negate }) satisfies Condition
          // Item b's linked row is of another organization: the link is on both columns.
          assert.deepStrictEqual(yield* matching(exists([])), ["a", "c", "e"])
          assert.deepStrictEqual(yield* matching(exists([], true)), ["b", "d"])
          assert.deepStrictEqual(yield* matching(exists([cmp("name", "eq", "one")])), ["a", "e"])
          assert.deepStrictEqual(yield* matching(exists([cmp("name", "eq", "one")], true)), ["b", "c", "d"])
          // The inner conditions compare the inner table's columns, timestamps as instants.
          assert.deepStrictEqual(yield* matching(exists([cmp("created_at", "gte", "2024-01-01T00:00:05Z")])), ["c", "e"])
          assert.deepStrictEqual(yield* matching(cmp("active", "eq", true), exists([or([cmp("name", "eq", "two")], [cmp("note", "eq", null)])])), ["a", "c", "e"])
        })))

      it.effect("a JSON array holding only listed values; negated, some other value; never NULL", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          yield* Effect.orDie(Effect.all([
            repo.create(item("a", { tags: ["x"] })),
            repo.create(item("b", { name: "b", tags: [] })),
            repo.create(item("c", { name: "c", tags: null })),
            repo.create(item("d", { name: "d", tags: ["x", "y"] })),
            repo.create(item("e", { name: "e", tags: ["y", "z"] }))
          ]))
          const allIn = (values: ReadonlyArray<string>, negate = false) => ({ _tag: "AllIn", field: "tags", values, negate }) satisfies Condition
          assert.deepStrictEqual(yield* matching(allIn(["x"])), ["a", "b"])
          assert.deepStrictEqual(yield* matching(allIn(["x", "y"])), ["a", "b", "d"])
          assert.deepStrictEqual(yield* matching(allIn([])), ["b"])
          assert.deepStrictEqual(yield* matching(allIn(["x"], true)), ["c", "d", "e"])
          assert.deepStrictEqual(yield* matching(allIn([], true)), ["a", "c", "d", "e"])
        })))

      it.effect("$or of conjunctions", () =>
        run(Effect.gen(function*() {
          yield* seed
          assert.deepStrictEqual(
            yield* matching(or([cmp("name", "eq", "alpha"), cmp("organization_id", "eq", "o2")], [cmp("score", "gte", 30)])),
            ["d", "e"]
          )
          assert.deepStrictEqual(yield* matching(or([cmp("score", "eq", null)], [cmp("name", "eq", "bravo")])), ["b", "c"])
          // A branch with no conditions is true.
          assert.deepStrictEqual(yield* matching(or([cmp("name", "eq", "bravo")], [])), ["a", "b", "c", "d", "e"])
        })))

      it.effect("nested combinations: conditions AND an $or whose branches hold $or, $in and $nin", () =>
        run(Effect.gen(function*() {
          yield* seed
          assert.deepStrictEqual(
            yield* matching(cmp("active", "eq", true), or([cmp("score", "lt", 15)], [cmp("score", "eq", null)])),
            ["a", "c"]
          )
          assert.deepStrictEqual(
            yield* matching(
              or(
                [or([cmp("name", "eq", "bravo")], [cmp("name", "eq", "delta")]), cmp("active", "eq", false)],
                [cmp("organization_id", "eq", "o2")]
              )
            ),
            ["b", "d", "e"]
          )
          assert.deepStrictEqual(
            yield* matching(
              cmp("organization_id", "eq", "o1"),
              or([isIn("score", [10, null])], [notIn("name", ["alpha", "charlie", "bravo"]), cmp("score", "ne", null)])
            ),
            ["a", "c", "d"]
          )
        })))
    })

    describe("paging", () => {
      it.effect("limit and skip page the sorted rows; total ignores them", () =>
        run(Effect.gen(function*() {
          yield* seed
          const repo = yield* items
          const page = yield* repo.find(query({ sort: [asc("id")], limit: 2, skip: 1 }))
          assert.strictEqual(page.total, 5)
          assert.strictEqual(page.limit, 2)
          assert.strictEqual(page.skip, 1)
          assert.deepStrictEqual(page.data.map((r) => r.id), ["b", "c"])
          assert.deepStrictEqual(yield* idsOf({ sort: [asc("id")], limit: 2, skip: 4 }), ["e"])
          const past = yield* repo.find(query({ sort: [asc("id")], limit: 2, skip: 10 }))
          assert.strictEqual(past.total, 5)
          assert.deepStrictEqual(past.data, [])
          // Every page together is every row, once.
          const pages = yield* Effect.forEach([0, 2, 4], (skip) => idsOf({ limit: 2, skip }))
          assert.deepStrictEqual(pages.flat(), ["b", "d", "a", "e", "c"])
        })))

      it.effect("total counts the matching rows, not the page", () =>
        run(Effect.gen(function*() {
          yield* seed
          const repo = yield* items
          const page = yield* repo.find(query({ where: [cmp("active", "eq", true)], limit: 1 }))
          assert.strictEqual(page.total, 3)
          assert.strictEqual(page.data.length, 1)
        })))

      it.effect("limit 0 gives the total with no data", () =>
        run(Effect.gen(function*() {
          yield* seed
          const repo = yield* items
          const page = yield* repo.find(query({ where: [cmp("organization_id", "eq", "o1")], limit: 0 }))
          assert.deepStrictEqual(page, { total: 4, limit: 0, skip: 0, data: [] })
        })))
    })

    describe("ordering", () => {
      it.effect("default sort is created_at ascending", () =>
        run(Effect.gen(function*() {
          yield* seed
          assert.deepStrictEqual(yield* idsOf({}), ["b", "d", "a", "e", "c"])
        })))

      it.effect("sort ascending and descending; the default sort breaks ties", () =>
        run(Effect.gen(function*() {
          yield* seed
          const where = [cmp("score", "ne", null)]
          assert.deepStrictEqual(yield* idsOf({ where, sort: [asc("score")] }), ["a", "b", "e", "d"])
          // b and e tie on 20: created_at (b before e) decides, in either direction.
          assert.deepStrictEqual(yield* idsOf({ where, sort: [desc("score")] }), ["d", "b", "e", "a"])
          assert.deepStrictEqual(yield* idsOf({ sort: [asc("name")] }), ["a", "e", "b", "c", "d"])
          assert.deepStrictEqual(yield* idsOf({ sort: [desc("created_at")] }), ["c", "e", "a", "d", "b"])
          assert.deepStrictEqual(yield* idsOf({ where: [cmp("seen_at", "ne", null)], sort: [desc("seen_at")] }), [
            "d",
            "b",
            "a"
          ])
        })))

      it.effect("sort on several keys", () =>
        run(Effect.gen(function*() {
          yield* seed
          const where = [cmp("score", "ne", null)]
          assert.deepStrictEqual(yield* idsOf({ where, sort: [desc("active"), asc("score")] }), ["a", "e", "b", "d"])
          assert.deepStrictEqual(yield* idsOf({ where, sort: [desc("score"), asc("name")] }), ["d", "e", "b", "a"])
          assert.deepStrictEqual(yield* idsOf({ sort: [asc("organization_id"), desc("name")] }), [
            "d",
            "c",
            "b",
            "a",
            "e"
          ])
        })))

      it.effect("sort on id, in either direction", () =>
        run(Effect.gen(function*() {
          yield* seed
          assert.deepStrictEqual(yield* idsOf({ sort: [asc("id")] }), ["a", "b", "c", "d", "e"])
          assert.deepStrictEqual(yield* idsOf({ sort: [desc("id")] }), ["e", "d", "c", "b", "a"])
          assert.deepStrictEqual(yield* idsOf({ sort: [desc("active"), desc("id")] }), ["e", "c", "a", "d", "b"])
        })))

      it.effect("NULL sorts as the smallest value: first ascending, last descending", () =>
        run(Effect.gen(function*() {
          yield* seed
          assert.deepStrictEqual(yield* idsOf({ sort: [asc("score")] }), ["c", "a", "b", "e", "d"])
          assert.deepStrictEqual(yield* idsOf({ sort: [desc("score")] }), ["d", "b", "e", "a", "c"])
          assert.deepStrictEqual(yield* idsOf({ sort: [asc("seen_at")] }), ["e", "c", "a", "b", "d"])
          assert.deepStrictEqual(yield* idsOf({ sort: [desc("seen_at")] }), ["d", "b", "a", "e", "c"])
        })))

      it.effect("rows equal on every sort key come in id order, so paging is stable", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          // Same created_at and score; inserted out of id order.
          for (const id of ["r3", "r1", "r5", "r2", "r4"]) yield* repo.create(item(id, { score: 1 }))
          assert.deepStrictEqual(yield* idsOf({}), ["r1", "r2", "r3", "r4", "r5"])
          assert.deepStrictEqual(yield* idsOf({ sort: [desc("score")] }), ["r1", "r2", "r3", "r4", "r5"])
          const pages = yield* Effect.forEach([0, 2, 4], (skip) => idsOf({ sort: [asc("score")], limit: 2, skip }))
          assert.deepStrictEqual(pages, [["r1", "r2"], ["r3", "r4"], ["r5"]])
        })))
    })

    describe("keyset paging", () => {
      const fields = ["created_at", "organization_id", "id"]
      const keyed = Effect.map(Storage, (s) => s.repository<Row>(KeyedItems))
      const T = "2024-01-01T00:00:00"
      const row = (organization_id: string, id: string, created_at: string): Row => ({
        organization_id,
        id,
        name: `${organization_id}/${id}`,
        note: null,
        created_at,
        updated_at: created_at,
        version: 1
      })
      /**
       * Inserted out of order. Three rows share one instant (ties go to organization, then id),
       * an id is used by two organizations, and instants a millisecond apart must not compare
       * by spelling.
       */
      const rows = [
        row("o2", "a", `${T}.000Z`),
        row("o1", "d", `${T}.100Z`),
        row("o1", "b", `${T}.000Z`),
        row("o3", "a", `${T}.010Z`),
        row("o1", "a", `${T}.000Z`),
        row("o1", "c", `${T}.001Z`),
        row("o2", "b", `${T}.010Z`),
        row("o1", "e", "2023-12-31T23:59:59.999Z")
      ]
      const inOrder = ["o1/e", "o1/a", "o1/b", "o2/a", "o1/c", "o2/b", "o3/a", "o1/d"]
      const setUp = Effect.gen(function*() {
        yield* createKeyedItemsTable
        const repo = yield* keyed
        yield* Effect.forEach(rows, (r) => repo.create(r), { discard: true })
        return repo
      })
      const positionOf = (r: Row) => fields.map((f) => r[f] as string)
      /**
       * Every page of `limit` rows, each continuing after the last row of the one before;
       * `between(n)` runs after the n-th page (1-based), before the next is read.
       */
      const walk = (
        q: Partial<FindQuery>,
        limit: number,
        between: (n: number) => Effect.Effect<void, unknown, StoreServices> = () => Effect.void
      ) =>
        Effect.gen(function*() {
          const repo = yield* keyed
          const seen: Array<string> = []
          let after: ReadonlyArray<string> | undefined
          for (let n = 1; n <= 100; n++) {
            const page = yield* repo.find(query({ ...q, limit, count: false, keyset: { fields, after } }))
            assert.isAtMost(page.data.length, limit)
            seen.push(...page.data.map((r) => r.name as string))
            if (page.data.length < limit) return seen
            after = positionOf(page.data[page.data.length - 1]!)
            yield* between(n)
          }
          return assert.fail("the walk did not end")
        })

      it.effect("pages follow created_at, then organization and id; every row comes once, whatever the page size", () =>
        run(Effect.gen(function*() {
          yield* setUp
          for (const limit of [1, 2, 3, 7, 8, 100]) {
            assert.deepStrictEqual(yield* walk({}, limit), inOrder, `pages of ${limit}`)
          }
          // The keyset is the order and the start: a sort or an offset given with it does nothing.
          assert.deepStrictEqual(yield* walk({ sort: [desc("id")], skip: 3 }, 3), inOrder)
        })))

      it.effect("the position is a bound, not an offset: rows added behind it never come, rows ahead of it do", () =>
        run(Effect.gen(function*() {
          const repo = yield* setUp
          const added = yield* walk({}, 2, (n) =>
            n === 1
              // The first page ended at o1/a (the first of the three ties).
              ? Effect.forEach([
                row("o0", "z", `${T}.000Z`), // the same instant, but ordered before the position
                row("o1", "0", `${T}.000Z`), // the same instant and organization, an id before it
                row("o0", "y", "2023-06-01T00:00:00.000Z"), // earlier
                row("o1", "aa", `${T}.000Z`), // the same instant and organization, an id after it
                row("o0", "x", `${T}.050Z`), // later, in the middle of what is left
                row("o9", "z", "2025-01-01T00:00:00.000Z") // after everything
              ], (r) => repo.create(r), { discard: true })
              : Effect.void)
          assert.deepStrictEqual(added, ["o1/e", "o1/a", "o1/aa", "o1/b", "o2/a", "o1/c", "o2/b", "o3/a", "o0/x", "o1/d", "o9/z"])
        })))

      it.effect("conditions hold on every page, and a count counts only the rows after the position", () =>
        run(Effect.gen(function*() {
          const repo = yield* setUp
          const where = [isIn("organization_id", ["o1", "o3"])]
          assert.deepStrictEqual(yield* walk({ where }, 2), ["o1/e", "o1/a", "o1/b", "o1/c", "o3/a", "o1/d"])
          const after = positionOf(rows.find((r) => r.name === "o1/b")!)
          const page = yield* repo.find(query({ where, limit: 1, keyset: { fields, after } }))
          assert.deepStrictEqual(page.data.map((r) => r.name), ["o1/c"])
          assert.strictEqual(page.total, 3)
        })))

      it.effect("on a table keyed by id alone the keyset is created_at, then id", () =>
        run(Effect.gen(function*() {
          yield* seed
          const repo = yield* items
          const ids: Array<string> = []
          let after: ReadonlyArray<string> | undefined
          for (;;) {
            const page = yield* repo.find(query({ limit: 2, count: false, keyset: { fields: ["created_at", "id"], after } }))
            ids.push(...page.data.map((r) => r.id as string))
            if (page.data.length < 2) break
            const last = page.data[page.data.length - 1]!
            after = [last.created_at as string, last.id as string]
          }
          assert.deepStrictEqual(ids, ["b", "d", "a", "e", "c"])
        })))

      it.effect("a keyset over a nullable column is refused: a NULL would drop its row from the walk", () =>
        run(Effect.gen(function*() {
          const repo = yield* setUp
          for (const after of [undefined, ["x", "a"]]) {
            const exit = yield* Effect.exit(repo.find(query({ keyset: { fields: ["note", "id"], after } })))
            assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause))
          }
        })))
    })

    describe("values round-trip unchanged", () => {
      it.effect("booleans come back as true and false", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const t = yield* repo.create(item("t", { active: true }))
          const f = yield* repo.create(item("f", { active: false }))
          assert.strictEqual(t.active, true)
          assert.strictEqual(f.active, false)
          const got = yield* snapshot
          assert.deepStrictEqual(got.data.map((r) => [r.id, r.active]), [["f", false], ["t", true]])
          const flipped = yield* repo.patch("t", { active: false }, 1)
          assert.strictEqual(flipped.active, false)
        })))

      it.effect("JSON objects, arrays and scalars keep their shape and keys", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const values: ReadonlyArray<unknown> = [
            {
              camelCase: { nestedKey: [1, "two", { deepKey: true, nothing: null }] },
              snake_case: 1.5,
              "with space": "x",
              unicode: "ünïcødé ✓",
              emptyObject: {},
              emptyArray: []
            },
            [{ aB: 1 }, [2, 3], "s", null, false],
            [],
            {},
            "a plain string",
            "[1,2]",
            42,
            true
          ]
          for (const [i, tags] of values.entries()) {
            const created = yield* repo.create(item(`j${i}`, { tags }))
            assert.deepStrictEqual(created.tags, tags, `create of ${JSON.stringify(tags)}`)
            const got = yield* repo.get(`j${i}`)
            assert.deepStrictEqual(Option.map(got, (r) => r.tags), Option.some(tags), `get of ${JSON.stringify(tags)}`)
          }
          const page = yield* snapshot
          assert.deepStrictEqual(page.data.map((r) => r.tags), values)
          const patched = yield* repo.patch("j0", { tags: { replacedKey: { innerKey: [] } } }, 1)
          assert.deepStrictEqual(patched.tags, { replacedKey: { innerKey: [] } })
        })))

      it.effect("timestamps come back as ISO 8601 UTC with milliseconds", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const row = item("x1", {
            seen_at: "2024-02-29T23:59:59.999Z",
            created_at: "2024-01-02T03:04:05.006Z",
            updated_at: "2024-01-02T03:04:05.000Z"
          })
          assert.deepStrictEqual(yield* repo.create(row), row)
          assert.deepStrictEqual(yield* repo.get("x1"), Option.some(row))
          assert.deepStrictEqual((yield* snapshot).data, [row])
        })))

      it.effect("a timestamp written in another ISO form is stored as its instant", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const created = yield* repo.create(item("x1", { seen_at: "2024-06-01T12:00:00+02:00" }))
          yield* repo.create(item("x2", { seen_at: "2024-06-01T10:30:00Z" }))
          assert.strictEqual(created.seen_at, "2024-06-01T10:00:00.000Z")
          assert.deepStrictEqual(yield* matching(cmp("seen_at", "eq", "2024-06-01T10:00:00.000Z")), ["x1"])
          assert.deepStrictEqual(yield* matching(cmp("seen_at", "eq", "2024-06-01T10:30:00.000Z")), ["x2"])
          assert.deepStrictEqual(yield* matching(cmp("seen_at", "lt", "2024-06-01T10:15:00.000Z")), ["x1"])
          assert.deepStrictEqual(yield* idsOf({ sort: [desc("seen_at")] }), ["x2", "x1"])
        })))

      it.effect("a timestamp spelled canonically is stored as the instant it parses to", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          // Days and hours past their range roll over when parsed: stored as the day they name.
          const feb30 = yield* repo.create(item("x1", { seen_at: "2023-02-30T10:00:00.000Z" }))
          const midnight = yield* repo.create(item("x2", { seen_at: "2024-02-28T24:00:00.000Z" }))
          const kept = yield* repo.create(item("x3", { seen_at: "2024-02-29T23:59:59.999Z" }))
          assert.strictEqual(feb30.seen_at, "2023-03-02T10:00:00.000Z")
          assert.strictEqual(midnight.seen_at, "2024-02-29T00:00:00.000Z")
          assert.strictEqual(kept.seen_at, "2024-02-29T23:59:59.999Z")
          assert.deepStrictEqual(yield* matching(cmp("seen_at", "eq", "2023-03-02T10:00:00.000Z")), ["x1"])
          assert.deepStrictEqual(yield* idsOf({ sort: [desc("seen_at")] }), ["x3", "x2", "x1"])
          // The days past the 28th: kept where the month has them, rolled over where it does not.
          const days: ReadonlyArray<readonly [string, string]> = [
            ["2026-04-31T08:00:00.000Z", "2026-05-01T08:00:00.000Z"],
            ["2026-04-30T08:00:00.000Z", "2026-04-30T08:00:00.000Z"],
            ["2026-12-31T23:59:59.999Z", "2026-12-31T23:59:59.999Z"],
            ["2026-02-29T08:00:00.000Z", "2026-03-01T08:00:00.000Z"],
            ["2100-02-29T08:00:00.000Z", "2100-03-01T08:00:00.000Z"],
            ["2000-02-29T08:00:00.000Z", "2000-02-29T08:00:00.000Z"],
            ["2024-06-31T08:00:00.000Z", "2024-07-01T08:00:00.000Z"]
          ]
          for (const [i, [sent, stored]] of days.entries()) {
            assert.strictEqual((yield* repo.create(item(`d${i}`, { seen_at: sent }))).seen_at, stored, sent)
          }
        })))

      it.effect("numbers and nullable strings", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const row = item("x1", { score: -2147483648, name: "" })
          assert.deepStrictEqual(yield* repo.create(row), row)
          // The INTEGER column's range is 32 bits on every dialect.
          const big = item("x2", { score: 2147483647 })
          assert.deepStrictEqual(yield* repo.create(big), big)
          assert.deepStrictEqual(yield* matching(cmp("score", "lt", 0)), ["x1"])
        })))
    })

    describe("unique conflicts", () => {
      it.effect("create of a duplicate unique key fails with Conflict naming the field", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          yield* repo.create(item("x1", { name: "same" }))
          const error = yield* Effect.flip(repo.create(item("x2", { name: "same", score: 5 })))
          assert.instanceOf(error, Conflict)
          assert.deepStrictEqual(Object.keys(error.errors ?? {}), ["name"])
          assert.deepStrictEqual(yield* repo.get("x2"), Option.none())
          // Another organization may use the name.
          yield* repo.create(item("x3", { name: "same", organization_id: "o2" }))
          assert.strictEqual(yield* repo.count([]), 2)
        })))

      it.effect("create of a duplicate id fails with Conflict naming id", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          yield* repo.create(item("x1", { name: "one" }))
          const error = yield* Effect.flip(repo.create(item("x1", { name: "two" })))
          assert.instanceOf(error, Conflict)
          assert.deepStrictEqual(Object.keys(error.errors ?? {}), ["id"])
          assert.deepStrictEqual(yield* repo.get("x1"), Option.some(item("x1", { name: "one" })))
        })))

      it.effect("patch and update onto a taken unique key fail with Conflict naming the field and change nothing", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          yield* repo.create(item("x1", { name: "one" }))
          const two = yield* repo.create(item("x2", { name: "two" }))
          const patchError = yield* Effect.flip(repo.patch("x2", { name: "one", score: 3 }, 1))
          assert.instanceOf(patchError, Conflict)
          assert.deepStrictEqual(Object.keys(patchError.errors ?? {}), ["name"])
          const updateError = yield* Effect.flip(repo.update("x2", { ...two, name: "one" }, 1))
          assert.instanceOf(updateError, Conflict)
          assert.deepStrictEqual(Object.keys(updateError.errors ?? {}), ["name"])
          assert.deepStrictEqual(yield* repo.get("x2"), Option.some(two))
        })))
    })

    describe("optimistic versions", () => {
      it.effect("patch and update with a stale version fail with Conflict and change nothing", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const row = yield* repo.create(item("x1", { score: 1 }))
          const v2 = yield* repo.patch("x1", { score: 2 }, 1)
          assert.strictEqual(v2.version, 2)
          const stalePatch = yield* Effect.flip(repo.patch("x1", { score: 3 }, 1))
          assert.instanceOf(stalePatch, Conflict)
          const staleUpdate = yield* Effect.flip(repo.update("x1", { ...row, score: 4 }, 1))
          assert.instanceOf(staleUpdate, Conflict)
          const future = yield* Effect.flip(repo.patch("x1", { score: 5 }, 3))
          assert.instanceOf(future, Conflict)
          assert.deepStrictEqual(yield* repo.get("x1"), Option.some(v2))
          const v3 = yield* repo.update("x1", { ...row, score: 6 }, 2)
          assert.deepStrictEqual(v3, { ...row, score: 6, version: 3 })
        })))

      it.effect("patch and update of a missing id fail with NotFound", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const patchError = yield* Effect.flip(repo.patch("nope", { score: 1 }, 1))
          assert.instanceOf(patchError, NotFound)
          const updateError = yield* Effect.flip(repo.update("nope", item("nope"), 1))
          assert.instanceOf(updateError, NotFound)
          assert.strictEqual(yield* repo.count([]), 0)
        })))

      it.effect("remove with a stale version fails with Conflict and keeps the row", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          yield* repo.create(item("x1"))
          const v2 = yield* repo.patch("x1", { score: 2 }, 1)
          const error = yield* Effect.flip(repo.remove("x1", 1))
          assert.instanceOf(error, Conflict)
          assert.deepStrictEqual(yield* repo.get("x1"), Option.some(v2))
          assert.deepStrictEqual(yield* repo.remove("x1", 2), Option.some(v2))
        })))

      it.effect("of two concurrent writers with the same version exactly one wins", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          yield* repo.create(item("x1", { score: 0 }))
          const results = yield* Effect.all(
            [repo.patch("x1", { score: 1 }, 1), repo.patch("x1", { score: 2 }, 1)],
            { concurrency: "unbounded", mode: "either" }
          )
          const wins = results.filter((r) => r._tag === "Right")
          const losses = results.filter((r) => r._tag === "Left")
          assert.strictEqual(wins.length, 1)
          assert.strictEqual(losses.length, 1)
          assert.instanceOf(losses[0]!.left, Conflict)
          const winner = wins[0]!.right
          assert.strictEqual(winner.version, 2)
          assert.deepStrictEqual(yield* repo.get("x1"), Option.some(winner))
        })))

      it.effect("of two concurrent read-modify-write transactions exactly one wins", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          yield* repo.create(item("x1", { score: 0 }))
          const increment = (by: number) =>
            uow.transaction(Effect.gen(function*() {
              const current = Option.getOrThrow(yield* repo.get("x1"))
              yield* Effect.yieldNow()
              return yield* repo.patch("x1", { score: Number(current.score) + by }, 1)
            }))
          const results = yield* Effect.all([increment(1), increment(2)], { concurrency: "unbounded", mode: "either" })
          assert.strictEqual(results.filter((r) => r._tag === "Right").length, 1)
          const losses = results.filter((r) => r._tag === "Left")
          assert.strictEqual(losses.length, 1)
          assert.instanceOf(losses[0]!.left, Conflict)
          const final = Option.getOrThrow(yield* repo.get("x1"))
          assert.strictEqual(final.version, 2)
          assert.include([1, 2], final.score)
        })))
    })

    describe("transactions", () => {
      it.effect("lock serialises count-then-create on one key: a limit of 2 is never exceeded", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          // Eight concurrent creators each check the count under the same lock, like a quota.
          const createIfRoom = (i: number) =>
            uow.transaction(Effect.gen(function*() {
              yield* uow.lock("quota:items:org-a")
              const used = yield* repo.count([eq("organization_id", "org-a")])
              yield* Effect.yieldNow()
              if (used >= 2) return "full" as const
              yield* repo.create(item(`q${i}`, { organization_id: "org-a" }))
              return "created" as const
            }))
          const results = yield* Effect.all(Array.from({ length: 8 }, (_, i) => createIfRoom(i)), {
            concurrency: "unbounded"
          })
          assert.strictEqual(results.filter((r) => r === "created").length, 2)
          assert.strictEqual(yield* repo.count([eq("organization_id", "org-a")]), 2)
        })))

      it.effect("a read outside a transaction never sees the writes of one still open: rolled back, they were never there", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          const written = yield* Deferred.make<void>()
          const release = yield* Deferred.make<void>()
          const writer = yield* Effect.fork(Effect.exit(uow.transaction(Effect.gen(function*() {
            yield* repo.create(item("open1"))
            yield* Deferred.succeed(written, undefined)
            yield* Deferred.await(release)
            return yield* Effect.fail("rolled back" as const)
          }))))
          yield* Deferred.await(written)
          // Read while the transaction is open: it waits for the connection (SQLite's one) or reads what was committed (PostgreSQL's pool).
          const reader = yield* Effect.fork(Effect.all([repo.get("open1"), repo.count([eq("id", "open1")])]))
          for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
          yield* Deferred.succeed(release, undefined)
          assert.isTrue(Exit.isFailure(yield* Fiber.join(writer)))
          const [row, count] = yield* Fiber.join(reader)
          assert.isTrue(Option.isNone(row))
          assert.strictEqual(count, 0)
          assert.isTrue(Option.isNone(yield* repo.get("open1")))
        })))

      it.effect("requireRow passes where a row matches, and fails with its own failure where none does", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          yield* repo.create(item("r1"))
          yield* repo.requireRow([eq("id", "r1")], () => "missing" as const)
          assert.strictEqual(yield* Effect.flip(repo.requireRow([eq("id", "r2")], () => "missing" as const)), "missing")
        })))

      it.effect("requireRow inside a transaction: a missing row fails it with the check's failure, and nothing of it commits", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          yield* repo.create(item("r1"))
          // The check last but for writes (a store may send it with the COMMIT) ...
          const alone = yield* Effect.flip(uow.transaction(Effect.gen(function*() {
            yield* repo.create(item("n1"))
            yield* repo.requireRow([eq("id", "gone")], () => "missing" as const)
            yield* repo.create(item("n2"))
            yield* repo.patch("r1", { score: 9 }, 1)
          })))
          assert.strictEqual(alone, "missing")
          // ... or followed by a read (a store may send it with the read).
          const read = yield* Effect.flip(uow.transaction(Effect.gen(function*() {
            yield* repo.requireRow([eq("id", "gone")], () => "missing" as const)
            yield* repo.get("r1")
            yield* repo.create(item("n3"))
          })))
          assert.strictEqual(read, "missing")
          assert.deepStrictEqual((yield* snapshot).data.map((r) => [r.id, r.score, r.version]), [["r1", null, 1]])
          // A row that exists lets the transaction commit.
          yield* uow.transaction(Effect.gen(function*() {
            yield* repo.requireRow([eq("id", "r1")], () => "missing" as const)
            yield* repo.create(item("n4"))
          }))
          assert.deepStrictEqual((yield* snapshot).data.map((r) => r.id), ["n4", "r1"])
        })))

      it.effect("patch given the row as read: answers the row as stored; a row changed since fails the transaction with a Conflict, and nothing of it commits", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          yield* repo.create(item("p1", { tags: ["a"] }))
          // A store may hold the write back and answer the row it will store: it is the row a read finds after the commit.
          const patched = yield* uow.transaction(Effect.gen(function*() {
            const current = Option.getOrThrow(yield* repo.get("p1"))
            const after = yield* repo.patch("p1", { score: 7, active: true, tags: { b: [1, "two"] }, seen_at: at(5), updated_at: at(5) }, 1, current)
            yield* repo.create(item("p2"))
            return after
          }))
          assert.deepStrictEqual(patched, Option.getOrThrow(yield* repo.get("p1")))
          assert.deepStrictEqual([patched.score, patched.active, patched.tags, patched.version], [7, true, { b: [1, "two"] }, 2])
          // Another writer moves the row between this transaction's read and its write.
          const read = Option.getOrThrow(yield* repo.get("p1"))
          const version = read.version as number
          yield* repo.patch("p1", { score: 8 }, version)
          const stale = yield* Effect.flip(uow.transaction(Effect.gen(function*() {
            yield* repo.create(item("p3"))
            yield* repo.patch("p1", { score: 9 }, version, read)
            yield* repo.create(item("p4"))
          })))
          assert.strictEqual(stale._tag, "Conflict")
          assert.deepStrictEqual((yield* snapshot).data.map((r) => [r.id, r.score, r.version]), [["p1", 8, 3], ["p2", null, 1]])
        })))

      it.effect("a successful transaction commits every write", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          yield* repo.create(item("x1"))
          yield* repo.create(item("x2"))
          const result = yield* uow.transaction(Effect.gen(function*() {
            yield* repo.create(item("n1"))
            yield* repo.patch("x1", { score: 5 }, 1)
            yield* repo.remove("x2")
            // Reads inside see the transaction's own writes.
            assert.isTrue(Option.isSome(yield* repo.get("n1")))
            return "done"
          }))
          assert.strictEqual(result, "done")
          assert.deepStrictEqual((yield* snapshot).data.map((r) => [r.id, r.score, r.version]), [
            ["n1", null, 1],
            ["x1", 5, 2]
          ])
        })))

      it.effect("a failure inside a transaction rolls back every write in it", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          const usage = yield* UsageStore
          yield* repo.create(item("x1"))
          yield* repo.create(item("x2"))
          yield* usage.add("o1", "2024-01", 1)
          const before = yield* snapshot
          const error = yield* Effect.flip(uow.transaction(Effect.gen(function*() {
            yield* repo.create(item("n1"))
            yield* repo.patch("x1", { score: 5 }, 1)
            yield* repo.update("x2", item("x2", { name: "renamed" }), 1)
            yield* repo.remove("x1", 2)
            yield* usage.add("o1", "2024-01", 10)
            return yield* Effect.fail("boom" as const)
          })))
          assert.strictEqual(error, "boom")
          assert.deepStrictEqual(yield* snapshot, before)
          assert.strictEqual(yield* usage.get("o1", "2024-01"), 1)
        })))

      /** With x1's name taken, a transaction running `body` fails with a Conflict and leaves every row as it was. */
      const failsWithConflict = (body: (repo: Effect.Effect.Success<typeof items>) => Effect.Effect<unknown, unknown, StoreServices>) =>
        Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          yield* repo.create(item("x1", { name: "taken" }))
          const before = yield* snapshot
          const error = yield* Effect.flip(uow.transaction(body(repo)))
          assert.instanceOf(error, Conflict)
          assert.deepStrictEqual(yield* snapshot, before)
          return { repo, uow }
        })

      it.effect("a Conflict inside a transaction fails it and rolls back the writes before it", () =>
        run(failsWithConflict((repo) =>
          Effect.gen(function*() {
            yield* repo.create(item("n1"))
            yield* repo.patch("x1", { score: 1 }, 1)
            yield* repo.create(item("n2", { name: "taken" }))
          })
        )))

      it.effect("a Conflict followed by reads and writes in its transaction fails it with that Conflict", () =>
        run(Effect.gen(function*() {
          const { repo, uow } = yield* failsWithConflict((repo) =>
            Effect.gen(function*() {
              yield* repo.create(item("n1"))
              yield* repo.create(item("n2", { name: "taken" }))
              yield* repo.count([])
              yield* repo.create(item("n3"))
            })
          )
          // The store serves the next transaction.
          yield* uow.transaction(repo.create(item("n4")))
          assert.strictEqual((yield* repo.get("n4")).pipe(Option.map((r) => r.id), Option.getOrNull), "n4")
        })))

      it.effect("what a transaction creates reads back within it and after it as written, whatever its text holds", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          const odd = `it's a \\ back'slash, $1, $$ and E'x' -- /* "quoted" */`
          const row = item("odd", { name: odd, score: -7, active: true, tags: { a: [1, "b'\\$2"], "k'": null }, seen_at: "2024-02-03T04:05:06.789Z" })
          const [created, inside] = yield* uow.transaction(Effect.gen(function*() {
            const created = yield* repo.create(row)
            const found = yield* repo.find(query({ where: [cmp("name", "eq", odd)], sort: [asc("id")] }))
            return [created, found.data] as const
          }))
          assert.deepStrictEqual(created, row)
          assert.deepStrictEqual(inside, [row])
          assert.deepStrictEqual(Option.getOrNull(yield* repo.get("odd")), row)
        })))

      it.effect("a defect inside a transaction rolls it back", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          const exit = yield* Effect.exit(uow.transaction(Effect.gen(function*() {
            yield* repo.create(item("n1"))
            return yield* Effect.dieMessage("crash")
          })))
          assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause))
          assert.strictEqual(yield* Effect.flatMap(items, (r) => r.count([])), 0)
        })))

      it.effect("a nested transaction that fails rolls back only its own writes", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          yield* uow.transaction(Effect.gen(function*() {
            yield* repo.create(item("outer1"))
            const inner = yield* Effect.either(uow.transaction(Effect.gen(function*() {
              yield* repo.create(item("inner"))
              return yield* Effect.fail("inner failed" as const)
            })))
            assert.isTrue(inner._tag === "Left")
            yield* repo.create(item("outer2"))
          }))
          assert.deepStrictEqual((yield* snapshot).data.map((r) => r.id), ["outer1", "outer2"])
        })))

      it.effect("concurrent transactions: each failing one rolls back alone, the others commit, each caller hears its own outcome", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          const marker = FiberRef.unsafeMake("none")
          // Twenty transactions at once (run as group commits): every third fails after its first
          // write, every fifth dies; each must see its own fiber refs. Every other one reads after
          // that write, which sends it to the database (PostgreSQL holds an insert back until a
          // statement needs an answer): a failure then leaves a write that must not commit.
          const one = (i: number) =>
            uow.transaction(Effect.gen(function*() {
              yield* repo.create(item(`c${i}`, { name: `c${i}` }))
              if (i % 2 === 1) yield* repo.count([cmp("name", "eq", `c${i}`)])
              assert.strictEqual(yield* FiberRef.get(marker), `caller-${i}`)
              if (i % 5 === 4) return yield* Effect.dieMessage(`crash ${i}`)
              if (i % 3 === 2) return yield* Effect.fail(`failed ${i}` as const)
              yield* repo.create(item(`d${i}`, { name: `d${i}` }))
              return i
            })).pipe(Effect.locally(marker, `caller-${i}`), Effect.exit)
          const exits = yield* Effect.all(Array.from({ length: 20 }, (_, i) => one(i)), { concurrency: "unbounded" })
          const committed: Array<string> = []
          exits.forEach((exit, i) => {
            if (i % 5 === 4) assert.isTrue(Exit.isFailure(exit) && Cause.isDie(exit.cause), `transaction ${i} died`)
            else if (i % 3 === 2) assert.deepStrictEqual(exit, Exit.fail(`failed ${i}`) as typeof exit)
            else {
              assert.deepStrictEqual(exit, Exit.succeed(i))
              committed.push(`c${i}`, `d${i}`)
            }
          })
          assert.deepStrictEqual((yield* snapshot).data.map((r) => r.id).sort(), committed.sort())
        })))

      it.effect("concurrent transactions whose writes meet on a unique key: each caller hears its own Conflict or success, and exactly what succeeded commits", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          // Twenty at once (run together on both stores): each pair writes the same unique name,
          // so one of each pair commits and the other hears a Conflict, whichever runs first.
          // Each begins with a read, which carries the writes held back before it (PostgreSQL).
          const one = (i: number) =>
            uow.transaction(Effect.gen(function*() {
              yield* repo.count([cmp("name", "eq", `own-${i}`)])
              yield* repo.create(item(`k${i}`, { name: `own-${i}` }))
              yield* repo.create(item(`s${i}`, { name: `shared-${Math.floor(i / 2)}` }))
              return i
            })).pipe(Effect.exit)
          const exits = yield* Effect.all(Array.from({ length: 20 }, (_, i) => one(i)), { concurrency: "unbounded" })
          const committed: Array<string> = []
          for (let pair = 0; pair < 10; pair++) {
            const both = [exits[2 * pair]!, exits[2 * pair + 1]!]
            const won = both.filter(Exit.isSuccess)
            assert.strictEqual(won.length, 1, `one of pair ${pair} commits`)
            const lost = both.find(Exit.isFailure)!
            assert.isTrue(Exit.isFailure(lost) && Option.isSome(Cause.failureOption(lost.cause)) && Option.getOrThrow(Cause.failureOption(lost.cause)) instanceof Conflict, `the other of pair ${pair} hears a Conflict`)
            const i = (won[0] as Exit.Success<number, unknown>).value
            assert.oneOf(i, [2 * pair, 2 * pair + 1])
            committed.push(`k${i}`, `s${i}`)
          }
          assert.deepStrictEqual((yield* snapshot).data.map((r) => r.id).sort(), committed.sort())
        })))

      it.effect("a transaction that goes on after a statement of its own failed (the error caught) does not cost the others theirs", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          const sql = yield* SqlClient.SqlClient
          // Twenty at once (run together on both stores). The last one runs a statement that
          // fails on PostgreSQL (which then aborts the transaction it is in) and catches the
          // error, writing nothing: the others' writes must commit all the same.
          const one = (i: number) =>
            uow.transaction(i === 19
              ? Effect.as(Effect.ignore(sql`SELECT CAST('not a number' AS integer) AS n`), i)
              : Effect.as(repo.create(item(`f${i}`, { name: `f${i}` })), i)).pipe(Effect.exit)
          const exits = yield* Effect.all(Array.from({ length: 20 }, (_, i) => one(i)), { concurrency: "unbounded" })
          exits.forEach((exit, i) => assert.deepStrictEqual(exit, Exit.succeed(i)))
          assert.deepStrictEqual((yield* snapshot).data.map((r) => r.id).sort(), Array.from({ length: 19 }, (_, i) => `f${i}`).sort())
        })))

      it.effect("a transaction alone that goes on after a statement of its own failed (the error caught) is told it committed only if its writes did", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          const sql = yield* SqlClient.SqlClient
          // A statement that fails on both stores: SQLite goes on with the transaction, PostgreSQL
          // aborts it and would answer its COMMIT with a ROLLBACK. Either the caller hears a
          // failure, or what it wrote is there; each write before and after the failed statement.
          const caught = Effect.ignore(sql`SELECT no_such_column FROM no_such_table`)
          const before = yield* Effect.exit(uow.transaction(Effect.as(Effect.zipRight(repo.create(item("written-before")), caught), "done")))
          const after = yield* Effect.exit(uow.transaction(Effect.as(Effect.zipRight(caught, repo.create(item("written-after"))), "done")))
          for (const [exit, id] of [[before, "written-before"], [after, "written-after"]] as const) {
            const stored = Option.isSome(yield* repo.get(id))
            if (Exit.isSuccess(exit)) assert.isTrue(stored, `${id}: told it committed, so it is stored`)
            else assert.isFalse(stored, `${id}: told it failed, so nothing of it is stored`)
          }
        })))

      it.effect("work handed over before commit runs once per COMMIT, inside it, with the values of the transactions that commit", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          const runs: Array<ReadonlyArray<string>> = []
          // The work writes a row: it is inside the transaction, so it commits or not with it.
          const work: CommitWork<string> = {
            run: (values) =>
              Effect.suspend(() => {
                runs.push(values)
                return Effect.orDie(repo.create(item(`w-${values.join("-")}`)))
              })
          }
          // Twelve at once (SQLite commits them together): every fourth fails after handing a
          // value over, and each hands one over in a savepoint that rolls back.
          const one = (i: number) =>
            uow.transaction(Effect.gen(function*() {
              yield* uow.beforeCommit(work, `a${i}`)
              yield* Effect.either(uow.transaction(Effect.zipRight(uow.beforeCommit(work, `lost${i}`), Effect.fail("no"))))
              if (i % 4 === 3) return yield* Effect.fail("failed")
              yield* uow.beforeCommit(work, `b${i}`)
            })).pipe(Effect.exit)
          yield* Effect.all(Array.from({ length: 12 }, (_, i) => one(i)), { concurrency: "unbounded" })
          const handed = runs.flat()
          const expected = Array.from({ length: 12 }, (_, i) => i).filter((i) => i % 4 !== 3).flatMap((i) => [`a${i}`, `b${i}`])
          assert.deepStrictEqual([...handed].sort(), [...expected].sort())
          // A transaction's own values stay in the order it handed them over.
          for (const i of [0, 1, 2]) assert.isBelow(handed.indexOf(`a${i}`), handed.indexOf(`b${i}`))
          assert.deepStrictEqual((yield* snapshot).data.map((r) => r.id).sort(), runs.map((values) => `w-${values.join("-")}`).sort())
          // A work that fails fails the COMMIT: nothing of the transaction stays.
          const failing: CommitWork<string> = { run: () => Effect.dieMessage("cannot") }
          const exit = yield* Effect.exit(uow.transaction(Effect.zipRight(repo.create(item("gone")), uow.beforeCommit(failing, "x"))))
          assert.isTrue(Exit.isFailure(exit))
          assert.isTrue(Option.isNone(yield* repo.get("gone")))
          // Outside a transaction, it runs at once.
          yield* uow.beforeCommit(work, "alone")
          assert.deepStrictEqual(runs[runs.length - 1], ["alone"])
        })))

      it.effect("work handed over for after the commit runs once the COMMIT succeeded, with the values of exactly the transactions that committed", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          const sql = yield* SqlClient.SqlClient
          const runs: Array<ReadonlyArray<string>> = []
          // What the work sees of the store: whether the rows of its values are committed.
          const seen: Array<boolean> = []
          const work: CommitWork<string> = {
            run: (values) =>
              Effect.suspend(() => {
                runs.push(values)
                return Effect.forEach(values, (v) => Effect.map(Effect.orDie(repo.get(`r-${v}`)), (found) => void seen.push(Option.isSome(found))), { discard: true })
              })
          }
          // Sixteen at once (committed together on both stores): every fourth fails after handing
          // a value over, each hands one over in a savepoint that rolls back, and one catches a
          // failed statement of its own, which rolls a PostgreSQL group back and runs the others
          // again alone: they must hand over once, from the run that committed.
          const caught = Effect.ignore(sql`SELECT no_such_column FROM no_such_table`)
          const one = (i: number) =>
            uow.transaction(Effect.gen(function*() {
              yield* repo.create(item(`r-a${i}`))
              assert.isTrue(yield* uow.afterCommit(work, `a${i}`))
              yield* Effect.either(uow.transaction(Effect.zipRight(uow.afterCommit(work, `lost${i}`), Effect.fail("no"))))
              if (i % 4 === 3) return yield* Effect.fail("failed")
              if (i === 6) yield* caught
              yield* repo.create(item(`r-b${i}`))
              yield* uow.afterCommit(work, `b${i}`)
            })).pipe(Effect.exit)
          const exits = yield* Effect.all(Array.from({ length: 16 }, (_, i) => one(i)), { concurrency: "unbounded" })
          const committed = exits.flatMap((exit, i) => Exit.isSuccess(exit) ? [i] : [])
          const handed = runs.flat()
          assert.deepStrictEqual([...handed].sort(), committed.flatMap((i) => [`a${i}`, `b${i}`]).sort())
          assert.isTrue(committed.length >= 11, `${committed.length} committed`)
          // Each after its COMMIT: what it wrote is there.
          assert.isTrue(seen.every((s) => s))
          for (const i of committed) assert.isBelow(handed.indexOf(`a${i}`), handed.indexOf(`b${i}`))
          // A work that fails does not undo the COMMIT, nor fail it for its caller.
          const failing: CommitWork<string> = { run: () => Effect.dieMessage("cannot") }
          yield* uow.transaction(Effect.zipRight(repo.create(item("kept")), uow.afterCommit(failing, "x")))
          assert.isTrue(Option.isSome(yield* repo.get("kept")))
          // Outside a transaction, nothing is kept, and the caller is told so.
          const before = runs.length
          assert.isFalse(yield* uow.afterCommit(work, "alone"))
          assert.strictEqual(runs.length, before)
        })))

      it.effect("news announced in a transaction commits with it, whatever it holds; a transaction that fails keeps nothing; outside one, at once", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          const feed = yield* ChangeFeed
          const odd = `it's a \\ back'slash; -- and "quotes" ${"x".repeat(200)}`
          yield* uow.transaction(Effect.gen(function*() {
            yield* repo.create(item("told"))
            yield* feed.announce("contract", odd)
            yield* feed.announce("contract", odd)
            yield* feed.announce("other", "plain")
          }))
          assert.isTrue(Option.isSome(yield* repo.get("told")))
          const failed = yield* Effect.exit(uow.transaction(Effect.gen(function*() {
            yield* repo.create(item("untold"))
            yield* feed.announce("contract", odd)
            return yield* Effect.fail("refused")
          })))
          assert.deepStrictEqual(failed, Exit.fail("refused"))
          assert.isTrue(Option.isNone(yield* repo.get("untold")))
          yield* feed.announce("contract", odd)
          yield* Effect.forEach(Array.from({ length: 5 }), () => feed.ring("contract"), { discard: true })
          assert.strictEqual(yield* repo.count([]), 1)
        })))

      it.effect("a transaction started inside another one joins it", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          const uow = yield* UnitOfWork
          const exit = yield* Effect.exit(uow.transaction(Effect.gen(function*() {
            yield* uow.transaction(repo.create(item("inner")))
            return yield* Effect.fail("outer failed" as const)
          })))
          assert.deepStrictEqual(exit, Exit.fail("outer failed"))
          assert.strictEqual(yield* repo.count([]), 0)
        })))
    })

    describe("bulk insert and unordered look-ups", () => {
      it.effect("insert writes every row in one go, and a duplicate fails the whole insert as a Conflict", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          yield* repo.insert([item("b1", { name: "one", tags: ["x"] }), item("b2", { name: "two", active: true })])
          assert.deepStrictEqual((yield* snapshot).data.map((r) => [r.id, r.name, r.tags, r.active]), [
            ["b1", "one", ["x"], false],
            ["b2", "two", null, true]
          ])
          const error = yield* Effect.flip(repo.insert([item("b3", { name: "three" }), item("b4", { name: "one" })]))
          assert.instanceOf(error, Conflict)
          assert.strictEqual(yield* repo.count([]), 2)
          yield* repo.insert([])
        })))

      it.effect("an unordered find answers the same rows as an ordered one", () =>
        run(Effect.gen(function*() {
          const repo = yield* items
          for (const i of [3, 1, 2]) yield* repo.create(item(`u${i}`, { name: `u${i}`, organization_id: "org-u" }))
          const ordered = yield* repo.find({ ...emptyQuery, where: [eq("organization_id", "org-u")], limit: 10, count: false })
          const unordered = yield* repo.find({ ...emptyQuery, where: [eq("organization_id", "org-u")], limit: 10, count: false, ordered: false })
          assert.deepStrictEqual(unordered.data.map((r) => r.id).sort(), ordered.data.map((r) => r.id).sort())
          const one = yield* repo.find({ ...emptyQuery, where: [eq("name", "u2")], limit: 1, count: false, ordered: false })
          assert.deepStrictEqual(one.data.map((r) => r.id), ["u2"])
        })))
    })

    describe("usage", () => {
      it.effect("add accumulates per organization and period; get of an unknown pair is 0", () =>
        run(Effect.gen(function*() {
          const usage = yield* UsageStore
          assert.strictEqual(yield* usage.get("o1", "2024-01"), 0)
          assert.strictEqual(yield* usage.add("o1", "2024-01", 5), 5)
          assert.strictEqual(yield* usage.add("o1", "2024-01", 3), 8)
          assert.strictEqual(yield* usage.add("o1", "2024-02", 1), 1)
          assert.strictEqual(yield* usage.add("o2", "2024-01", 7), 7)
          assert.strictEqual(yield* usage.get("o1", "2024-01"), 8)
          assert.strictEqual(yield* usage.get("o1", "2024-02"), 1)
          assert.strictEqual(yield* usage.get("o2", "2024-01"), 7)
          assert.strictEqual(yield* usage.get("o2", "2024-02"), 0)
        })))

      it.effect("concurrent adds lose no increment", () =>
        run(Effect.gen(function*() {
          const usage = yield* UsageStore
          const totals = yield* Effect.all(Array.from({ length: 20 }, () => usage.add("o1", "p", 1)), {
            concurrency: "unbounded"
          })
          assert.strictEqual(yield* usage.get("o1", "p"), 20)
          assert.deepStrictEqual([...totals].sort((x, y) => x - y), Array.from({ length: 20 }, (_, i) => i + 1))
        })))
    })

    describe("core tables on the migrated schema", () => {
      it.effect("an API key row round-trips, booleans included", () =>
        run(Effect.gen(function*() {
          const keys = (yield* Storage).repository(Tables.keys)
          const internal = {
            id: "key-1",
            name: "operator",
            description: null,
            organization_id: "org-1",
            enabled: true,
            is_internal: true,
            secret_hash: "hash-1",
            previous_secret_hash: null,
            previous_secret_expires_at: null,
            created_at: "2024-05-06T07:08:09.010Z",
            updated_at: "2024-05-06T07:08:09.010Z",
            version: 1
          }
          const external = { ...internal, id: "key-2", name: "client", enabled: false, is_internal: false }
          assert.deepStrictEqual(Object.keys(Tables.keys.fields).sort(), Object.keys(internal).sort())
          assert.deepStrictEqual(yield* keys.create(internal), internal)
          assert.deepStrictEqual(yield* keys.create(external), external)
          assert.deepStrictEqual(yield* keys.get("key-1"), Option.some(internal))
          assert.deepStrictEqual(yield* keys.get("key-2"), Option.some(external))
          const found = yield* keys.find(query({ where: [cmp("is_internal", "eq", true)] }))
          assert.deepStrictEqual(found.data, [internal])
          const patched = yield* keys.patch("key-1", { is_internal: false, enabled: false }, 1)
          assert.deepStrictEqual(patched, { ...internal, is_internal: false, enabled: false, version: 2 })
          const dup = yield* Effect.flip(keys.create({ ...external, id: "key-3" }))
          assert.instanceOf(dup, Conflict)
          assert.deepStrictEqual(Object.keys(dup.errors ?? {}), ["name"])
          // A rotation keeps the replaced secret's hash and its date; a later one clears them.
          const rotated = yield* keys.patch("key-2", { secret_hash: "hash-3", previous_secret_hash: "hash-1", previous_secret_expires_at: "2024-05-07T07:08:09.010Z" }, 1)
          assert.deepStrictEqual(rotated, { ...external, secret_hash: "hash-3", previous_secret_hash: "hash-1", previous_secret_expires_at: "2024-05-07T07:08:09.010Z", version: 2 })
          assert.deepStrictEqual(yield* keys.get("key-2"), Option.some(rotated))
          const ended = yield* keys.patch("key-2", { previous_secret_hash: null, previous_secret_expires_at: null }, 2)
          assert.deepStrictEqual(ended, { ...rotated, previous_secret_hash: null, previous_secret_expires_at: null, version: 3 })
        })))

      it.effect("every core table is queryable with its default sort", () =>
        run(Effect.gen(function*() {
          const storage = yield* Storage
          const tables = [
            Tables.organizations,
            Tables.quotas,
            Tables.premiumFeatures,
            Tables.keys,
            Tables.secrets,
            Tables.members,
            Tables.persons,
            Tables.settings
          ]
          for (const table of tables) {
            const repo = storage.repository<Row>(table)
            const page = yield* repo.find(query({ where: [cmp("id", "eq", "none")] }))
            expect(page, table.table).toEqual({ total: 0, limit: emptyQuery.limit, skip: 0, data: [] })
          }
        })))
    })

    describe("delivery queue", () => {
      const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString()
      const message = (id: string, over: Partial<DeliveryRow> = {}): DeliveryRow => ({
        id,
        organization_id: "o1",
        webhook_id: "w1",
        event_type: "event.created",
        regulation: "gdpr",
        status: "pending",
        attempts_count: 0,
        next_attempt_at: at(0),
        last_status_code: null,
        payload: { type: "event.created", parameters: { entity: { id, camelCase: [1, { x: null }] } }, regulation: "gdpr" },
        lease_until: null,
        leased_by: null,
        trace_context: null,
        created_at: at(0),
        updated_at: at(0),
        version: 1,
        ...over
      })
      const seed = (rows: ReadonlyArray<DeliveryRow>) =>
        Effect.flatMap(Storage, (s) =>
          Effect.forEach(rows, (r) => Effect.orDie(s.repository(DeliveriesTable).create(r)), { discard: true }))
      const attempt = (deliveryId: string, id: string) => ({
        id,
        delivery_id: deliveryId,
        organization_id: "o1",
        webhook_id: "w1",
        attempted_at: at(10),
        status_code: 500,
        succeeded: false,
        duration_ms: 12,
        error: null,
        response_excerpt: "oops"
      })
      const byId = (rows: ReadonlyArray<{ id: string }>) => rows.map((r) => r.id).sort()

      it.effect("claims only due messages, leases them, and a second claim gets none of them", () =>
        run(Effect.gen(function*() {
          const queue = yield* DeliveryQueue
          yield* seed([message("m1"), message("m2", { next_attempt_at: at(5) }), message("m3", { status: "delivered" })])
          const first = yield* queue.claim({ now: at(1), leaseUntil: at(61), workerId: "w-a", limit: 10 })
          assert.deepStrictEqual(byId(first), ["m1"])
          assert.strictEqual(first[0]!.status, "delivering")
          assert.deepStrictEqual(first[0]!.payload, message("m1").payload)
          assert.deepStrictEqual(yield* queue.claim({ now: at(2), leaseUntil: at(62), workerId: "w-b", limit: 10 }), [])
          const later = yield* queue.claim({ now: at(5), leaseUntil: at(65), workerId: "w-b", limit: 10 })
          assert.deepStrictEqual(byId(later), ["m2"])
          assert.deepStrictEqual(yield* queue.nextDueAt(), Option.some(at(61)))
        })))

      it.effect("an expired lease is claimed again; the late worker's completion only adds to the log", () =>
        run(Effect.gen(function*() {
          const queue = yield* DeliveryQueue
          yield* seed([message("m1")])
          yield* queue.claim({ now: at(1), leaseUntil: at(30), workerId: "dead", limit: 10 })
          const again = yield* queue.claim({ now: at(31), leaseUntil: at(60), workerId: "alive", limit: 10 })
          assert.deepStrictEqual(byId(again), ["m1"])
          const late = yield* queue.complete({
            id: "m1",
            workerId: "dead",
            attempt: attempt("m1", "a1"),
            outcome: { status: "delivered", attempts_count: 1, next_attempt_at: null, last_status_code: 200 },
            now: at(32)
          })
          assert.isFalse(late)
          const done = yield* queue.complete({
            id: "m1",
            workerId: "alive",
            attempt: attempt("m1", "a2"),
            outcome: { status: "pending", attempts_count: 1, next_attempt_at: at(400), last_status_code: 500 },
            now: at(33)
          })
          assert.isTrue(done)
          const row = Option.getOrThrow(yield* (yield* Storage).repository(DeliveriesTable).get("m1"))
          assert.deepStrictEqual(
            [row.status, row.attempts_count, row.next_attempt_at, row.last_status_code, row.lease_until, row.leased_by],
            ["pending", 1, at(400), 500, null, null]
          )
          const log = yield* (yield* Storage).repository(AttemptsTable).find(query({ sort: [asc("id")] }))
          assert.deepStrictEqual(log.data.map((a) => [a.id, a.status_code, a.response_excerpt]), [["a1", 500, "oops"], ["a2", 500, "oops"]])
          assert.deepStrictEqual(yield* queue.nextDueAt(), Option.some(at(400)))
          assert.deepStrictEqual(yield* queue.claim({ now: at(399), leaseUntil: at(500), workerId: "x", limit: 10 }), [])
        })))

      it.effect("a release gives back as pending, due at once, only the messages still leased to the releasing worker", () =>
        run(Effect.gen(function*() {
          const queue = yield* DeliveryQueue
          const deliveries = (yield* Storage).repository(DeliveriesTable)
          yield* seed([
            message("m1"),
            message("m2", { next_attempt_at: at(1) }),
            message("m3", { next_attempt_at: at(3) }),
            // Written already leased, as a process that delivers writes its own messages.
            message("m4", { status: "delivering", lease_until: at(50), leased_by: "w-a" })
          ])
          assert.deepStrictEqual(byId(yield* queue.claim({ now: at(2), leaseUntil: at(60), workerId: "w-a", limit: 10 })), ["m1", "m2"])
          assert.deepStrictEqual(byId(yield* queue.claim({ now: at(3), leaseUntil: at(60), workerId: "w-b", limit: 10 })), ["m3"])
          assert.isTrue(yield* queue.complete({
            id: "m2",
            workerId: "w-a",
            attempt: attempt("m2", "a1"),
            outcome: { status: "delivered", attempts_count: 1, next_attempt_at: null, last_status_code: 200 },
            now: at(4)
          }))
          assert.strictEqual(yield* queue.release({ ids: [], workerId: "w-a", now: at(5) }), 0)
          assert.strictEqual(yield* queue.release({ ids: ["m1", "m2", "m3", "m4", "missing"], workerId: "w-a", now: at(5) }), 2)
          const rows = new Map((yield* deliveries.find(query({ sort: [asc("id")] }))).data.map((r) => [r.id, r]))
          const state = (id: string) => {
            const r = rows.get(id)!
            return [r.status, r.next_attempt_at, r.lease_until, r.leased_by, r.attempts_count]
          }
          assert.deepStrictEqual(state("m1"), ["pending", at(5), null, null, 0])
          assert.deepStrictEqual(state("m4"), ["pending", at(5), null, null, 0])
          assert.deepStrictEqual(state("m2"), ["delivered", null, null, null, 1])
          assert.deepStrictEqual(state("m3"), ["delivering", at(3), at(60), "w-b", 0])
          // Another worker claims them at once, not when their lease would have ended.
          assert.deepStrictEqual(byId(yield* queue.claim({ now: at(5), leaseUntil: at(65), workerId: "w-c", limit: 10 })), ["m1", "m4"])
        })))

      it.effect("completions sent at once are each answered for their own message, and every attempt is logged", () =>
        run(Effect.gen(function*() {
          const queue = yield* DeliveryQueue
          const ids = Array.from({ length: 12 }, (_, i) => `m${String(i).padStart(2, "0")}`)
          yield* seed(ids.map((id) => message(id)))
          yield* queue.claim({ now: at(1), leaseUntil: at(60), workerId: "owner", limit: 100 })
          // Even ones by the lease holder (moved), odd ones by a worker whose lease it is not.
          const answers = yield* Effect.all(
            ids.map((id, i) =>
              queue.complete({
                id,
                workerId: i % 2 === 0 ? "owner" : "stranger",
                attempt: attempt(id, `a-${id}`),
                outcome: { status: "delivered", attempts_count: 1, next_attempt_at: null, last_status_code: 204 },
                now: at(2)
              })
            ),
            { concurrency: "unbounded" }
          )
          assert.deepStrictEqual(answers, ids.map((_, i) => i % 2 === 0))
          const rows = yield* (yield* Storage).repository(DeliveriesTable).find(query({ sort: [asc("id")], limit: 100 }))
          assert.deepStrictEqual(rows.data.map((r) => r.status), ids.map((_, i) => (i % 2 === 0 ? "delivered" : "delivering")))
          const log = yield* (yield* Storage).repository(AttemptsTable).find(query({ sort: [asc("id")], limit: 100 }))
          assert.deepStrictEqual(log.data.map((a) => a.delivery_id), ids)
        })))

      it.effect("claims an in-process subscriber's messages only for a claimer that names it, and so does nextDueAt", () =>
        run(Effect.gen(function*() {
          const queue = yield* DeliveryQueue
          yield* seed([
            message("m1", { next_attempt_at: at(3) }),
            message("m2", { webhook_id: "subscriber:audit", next_attempt_at: at(1) }),
            message("m3", { webhook_id: "subscriber:other", next_attempt_at: at(2) })
          ])
          assert.deepStrictEqual(yield* queue.nextDueAt(), Option.some(at(3)))
          assert.deepStrictEqual(yield* queue.nextDueAt({ subscribers: ["audit"] }), Option.some(at(1)))
          const plain = yield* queue.claim({ now: at(10), leaseUntil: at(60), workerId: "w-a", limit: 10 })
          assert.deepStrictEqual(byId(plain), ["m1"])
          const audit = yield* queue.claim({ now: at(10), leaseUntil: at(60), workerId: "w-b", limit: 10, subscribers: ["audit", "x"] })
          assert.deepStrictEqual(byId(audit), ["m2"])
          assert.deepStrictEqual(yield* queue.nextDueAt({ subscribers: ["audit"] }), Option.some(at(60)))
          assert.deepStrictEqual(yield* queue.nextDueAt({ subscribers: ["other"] }), Option.some(at(2)))
        })))

      it.effect("concurrent claimers never get the same message", () =>
        run(Effect.gen(function*() {
          const queue = yield* DeliveryQueue
          yield* seed(Array.from({ length: 30 }, (_, i) => message(`m${String(i).padStart(2, "0")}`)))
          const batches = yield* Effect.all(
            Array.from({ length: 6 }, (_, w) => queue.claim({ now: at(1), leaseUntil: at(60), workerId: `w${w}`, limit: 4 })),
            { concurrency: "unbounded" }
          )
          const claimed = batches.flat().map((m) => m.id)
          assert.strictEqual(new Set(claimed).size, claimed.length)
          assert.strictEqual(claimed.length, 24)
          const rest = yield* queue.claim({ now: at(1), leaseUntil: at(60), workerId: "last", limit: 100 })
          assert.strictEqual(rest.length, 6)
          assert.deepStrictEqual(yield* queue.nextDueAt(), Option.some(at(60)))
        })))
    })

    describe("mail queue", () => {
      const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString()
      const mail = (id: string, over: Partial<MailRecord> = {}): MailRecord => ({
        id,
        organization_id: "o1",
        invitation_id: `inv-${id}`,
        status: "pending",
        attempts_count: 0,
        next_attempt_at: at(0),
        mail_sealed: `sealed-${id}`,
        last_error: null,
        lease_until: null,
        leased_by: null,
        created_at: at(0),
        updated_at: at(0),
        version: 1,
        ...over
      })
      const seed = (rows: ReadonlyArray<MailRecord>) =>
        Effect.flatMap(Storage, (s) => Effect.forEach(rows, (r) => Effect.orDie(s.repository(MailOutboxTable).create(r)), { discard: true }))
      const stored = (id: string) => Effect.map(Effect.flatMap(Storage, (s) => s.repository(MailOutboxTable).get(id)), Option.getOrThrow)
      const byId = (rows: ReadonlyArray<{ id: string }>) => rows.map((r) => r.id).sort()

      it.effect("claims only due mails, leases them, and a second claim gets none of them", () =>
        run(Effect.gen(function*() {
          const queue = yield* MailQueue
          yield* seed([mail("m1"), mail("m2", { next_attempt_at: at(5) }), mail("m3", { status: "sent", next_attempt_at: null, mail_sealed: null })])
          assert.deepStrictEqual(yield* queue.nextDueAt, Option.some(at(0)))
          const first = yield* queue.claim({ now: at(1), leaseUntil: at(61), workerId: "w-a", limit: 10 })
          assert.deepStrictEqual(byId(first), ["m1"])
          assert.deepStrictEqual([first[0]!.status, first[0]!.leased_by, first[0]!.lease_until, first[0]!.mail_sealed], ["sending", "w-a", at(61), "sealed-m1"])
          assert.deepStrictEqual(yield* queue.claim({ now: at(2), leaseUntil: at(62), workerId: "w-b", limit: 10 }), [])
          assert.deepStrictEqual(yield* queue.nextDueAt, Option.some(at(5)))
          assert.deepStrictEqual(byId(yield* queue.claim({ now: at(5), leaseUntil: at(65), workerId: "w-b", limit: 10 })), ["m2"])
          assert.deepStrictEqual(yield* queue.nextDueAt, Option.some(at(61)))
        })))

      it.effect("a retry keeps the sealed mail; sent and failed drop it; a worker whose lease ended moves nothing", () =>
        run(Effect.gen(function*() {
          const queue = yield* MailQueue
          yield* seed([mail("m1"), mail("m2")])
          yield* queue.claim({ now: at(1), leaseUntil: at(30), workerId: "dead", limit: 10 })
          const again = yield* queue.claim({ now: at(31), leaseUntil: at(60), workerId: "alive", limit: 10 })
          assert.deepStrictEqual(byId(again), ["m1", "m2"])
          const late = yield* queue.complete({
            id: "m1",
            workerId: "dead",
            now: at(32),
            outcome: { status: "sent", attempts_count: 1, next_attempt_at: null, last_error: null }
          })
          assert.isFalse(late)
          assert.isTrue(yield* queue.complete({
            id: "m1",
            workerId: "alive",
            now: at(33),
            outcome: { status: "pending", attempts_count: 1, next_attempt_at: at(400), last_error: "refused 451" }
          }))
          const retried = yield* stored("m1")
          assert.deepStrictEqual(
            [retried.status, retried.attempts_count, retried.next_attempt_at, retried.last_error, retried.mail_sealed, retried.lease_until, retried.leased_by],
            ["pending", 1, at(400), "refused 451", "sealed-m1", null, null]
          )
          assert.isTrue(yield* queue.complete({
            id: "m2",
            workerId: "alive",
            now: at(34),
            outcome: { status: "failed", attempts_count: 5, next_attempt_at: null, last_error: "unreachable" }
          }))
          const failed = yield* stored("m2")
          assert.deepStrictEqual([failed.status, failed.mail_sealed, failed.last_error], ["failed", null, "unreachable"])
          yield* queue.claim({ now: at(400), leaseUntil: at(460), workerId: "w", limit: 10 })
          assert.isTrue(yield* queue.complete({
            id: "m1",
            workerId: "w",
            now: at(401),
            outcome: { status: "sent", attempts_count: 2, next_attempt_at: null, last_error: null }
          }))
          const sent = yield* stored("m1")
          assert.deepStrictEqual([sent.status, sent.attempts_count, sent.mail_sealed, sent.next_attempt_at], ["sent", 2, null, null])
          assert.deepStrictEqual(yield* queue.nextDueAt, Option.none())
        })))

      it.effect("concurrent claimers never get the same mail", () =>
        run(Effect.gen(function*() {
          const queue = yield* MailQueue
          yield* seed(Array.from({ length: 20 }, (_, i) => mail(`m${String(i).padStart(2, "0")}`)))
          const batches = yield* Effect.all(
            Array.from({ length: 5 }, (_, w) => queue.claim({ now: at(1), leaseUntil: at(60), workerId: `w${w}`, limit: 3 })),
            { concurrency: "unbounded" }
          )
          const claimed = batches.flat().map((m) => m.id)
          assert.strictEqual(new Set(claimed).size, claimed.length)
          assert.strictEqual(claimed.length, 15)
          assert.strictEqual((yield* queue.claim({ now: at(1), leaseUntil: at(60), workerId: "last", limit: 100 })).length, 5)
        })))
    })

    describe("delivery stats", () => {
      const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString()
      const hook = (id: string, organizationId = "o1") => ({
        id,
        organization_id: organizationId,
        url: `https://example.com/${id}`,
        enabled: id !== "w3",
        event_types: [],
        flatten: false,
        regulations: ["gdpr"],
        auth: null,
        signing_secret_sealed: "sealed",
        previous_secret_sealed: null,
        previous_secret_expires_at: null,
        auth_client_secret_sealed: null,
        created_at: at(0),
        updated_at: at(0),
        version: 1
      })
      const message = (id: string, webhookId: string, status: DeliveryRow["status"], createdAt: string, organizationId = "o1"): DeliveryRow => ({
        id,
        organization_id: organizationId,
        webhook_id: webhookId,
        event_type: "event.created",
        regulation: "gdpr",
        status,
        attempts_count: 0,
        next_attempt_at: status === "pending" ? createdAt : null,
        last_status_code: null,
        payload: { type: "event.created", parameters: {}, regulation: "gdpr" },
        lease_until: null,
        leased_by: null,
        trace_context: null,
        created_at: createdAt,
        updated_at: createdAt,
        version: 1
      })
      // The webhook of each message the attempts below are of.
      const webhookOf = (deliveryId: string) =>
        deliveryId.startsWith("s") ? "subscriber:audit" : deliveryId === "x1" ? "wx" : deliveryId === "m7" ? "w3" : "w1"
      const tried = (id: string, deliveryId: string, attemptedAt: string, statusCode: number | null, error: string | null, organizationId = "o1") => ({
        id,
        delivery_id: deliveryId,
        organization_id: organizationId,
        webhook_id: webhookOf(deliveryId),
        attempted_at: attemptedAt,
        status_code: statusCode,
        // As the dispatcher records it: a 2xx answer.
        succeeded: statusCode !== null && statusCode >= 200 && statusCode <= 299,
        duration_ms: 5,
        error,
        response_excerpt: null
      })
      const zero = { pending: 0, delivering: 0, delivered: 0, failed: 0 }

      it.effect("one row per webhook of the organization in id order: counts per status, oldest pending, last success and failure", () =>
        run(Effect.gen(function*() {
          const storage = yield* Storage
          // Created out of id order: the answer is in id order.
          for (const h of [hook("w2"), hook("w1"), hook("w3"), hook("wx", "o2")]) {
            yield* Effect.orDie(storage.repository(WebhooksResource.tableDef).create(h))
          }
          const messages = [
            message("m1", "w1", "pending", at(5)),
            message("m2", "w1", "pending", at(3)),
            message("m3", "w1", "delivering", at(2)),
            message("m4", "w1", "delivered", at(1)),
            message("m5", "w1", "failed", at(1)),
            message("m6", "w1", "failed", at(1)),
            message("m7", "w3", "delivered", at(1)),
            // Not a webhook's: an in-process subscriber's, older and failing later than any above.
            message("s1", "subscriber:audit", "pending", at(0)),
            message("s2", "subscriber:audit", "failed", at(0)),
            // Another organization's webhook.
            message("x1", "wx", "pending", at(0), "o2")
          ]
          yield* Effect.forEach(messages, (m) => Effect.orDie(storage.repository(DeliveriesTable).create(m)), { discard: true })
          const attempts = [
            tried("a1", "m4", at(11), null, "connect ECONNREFUSED"),
            tried("a2", "m4", at(12), 200, null),
            tried("a3", "m5", at(30), 503, null),
            tried("a4", "m6", at(31), null, "timed out after 1000 ms"),
            // A redirect is not followed: a failed attempt, the last one of w1.
            tried("a5", "m5", at(40), 302, null),
            tried("a6", "m7", at(10), 500, null),
            tried("a7", "m7", at(20), 299, null),
            tried("a8", "s2", at(50), null, "handler failed"),
            tried("a9", "x1", at(60), 500, "theirs", "o2")
          ]
          yield* Effect.orDie(storage.repository(AttemptsTable).insert(attempts))

          const stats = yield* (yield* DeliveryStats).ofOrganization("o1")
          assert.deepStrictEqual(stats, [
            {
              webhook_id: "w1",
              counts: { pending: 2, delivering: 1, delivered: 1, failed: 2 },
              oldest_pending_at: at(3),
              last_success: { attempted_at: at(12), status_code: 200, error: null },
              last_failure: { attempted_at: at(40), status_code: 302, error: null }
            },
            { webhook_id: "w2", counts: zero, oldest_pending_at: null, last_success: null, last_failure: null },
            {
              webhook_id: "w3",
              counts: { ...zero, delivered: 1 },
              oldest_pending_at: null,
              last_success: { attempted_at: at(20), status_code: 299, error: null },
              last_failure: { attempted_at: at(10), status_code: 500, error: null }
            }
          ])
          const theirs = yield* (yield* DeliveryStats).ofOrganization("o2")
          assert.deepStrictEqual(theirs, [{
            webhook_id: "wx",
            counts: { ...zero, pending: 1 },
            oldest_pending_at: at(0),
            last_success: null,
            last_failure: { attempted_at: at(60), status_code: 500, error: "theirs" }
          }])
          assert.deepStrictEqual(yield* (yield* DeliveryStats).ofOrganization("nobody"), [])
        })))

      it.effect("the last failure's error is that attempt's own, even when an earlier one had another", () =>
        run(Effect.gen(function*() {
          const storage = yield* Storage
          yield* Effect.orDie(storage.repository(WebhooksResource.tableDef).create(hook("w1")))
          yield* Effect.orDie(storage.repository(DeliveriesTable).create(message("m1", "w1", "pending", at(1))))
          yield* Effect.orDie(storage.repository(AttemptsTable).insert([
            tried("a1", "m1", at(10), null, "first"),
            tried("a2", "m1", at(30), null, "third"),
            tried("a3", "m1", at(20), 500, "second")
          ]))
          const [w1] = yield* (yield* DeliveryStats).ofOrganization("o1")
          assert.deepStrictEqual(w1?.last_failure, { attempted_at: at(30), status_code: null, error: "third" })
          assert.deepStrictEqual(w1?.counts, { ...zero, pending: 1 })
        })))
    })

    describe("subscriber registrations", () => {
      const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString()
      const filters = { event_types: ["user.created" as const, "event.created" as const], regulations: ["gdpr", "ccpa"], flatten: true }
      const names = (rows: ReadonlyArray<{ id: string }>) => rows.map((r) => r.id).sort()

      it.effect("save answers the registration as stored; list has it at once, and no longer once removed", () =>
        run(Effect.gen(function*() {
          const registrations = yield* SubscriberRegistrations
          assert.deepStrictEqual(yield* registrations.list, [])
          const saved = yield* registrations.save({ name: "audit", ...filters, now: at(1) })
          const expected = { id: "audit", ...filters, created_at: at(1), updated_at: at(1), version: 1 }
          assert.deepStrictEqual(saved, expected)
          assert.deepStrictEqual(yield* registrations.list, [expected])
          // The same row the repository reads: JSON and booleans are stored as every table stores them.
          assert.deepStrictEqual(yield* (yield* Storage).repository(SubscribersTable).get("audit"), Option.some(expected))
          assert.isTrue(yield* registrations.remove("audit"))
          assert.deepStrictEqual(yield* registrations.list, [])
          assert.isFalse(yield* registrations.remove("audit"))
        })))

      it.effect("a second save replaces the filters, keeps created_at and bumps the version", () =>
        run(Effect.gen(function*() {
          const registrations = yield* SubscriberRegistrations
          yield* registrations.save({ name: "audit", ...filters, now: at(1) })
          assert.strictEqual((yield* registrations.list).length, 1)
          const again = yield* registrations.save({ name: "audit", event_types: [], regulations: ["ccpa"], flatten: false, now: at(5) })
          const expected = { id: "audit", event_types: [], regulations: ["ccpa"], flatten: false, created_at: at(1), updated_at: at(5), version: 2 }
          assert.deepStrictEqual(again, expected)
          assert.deepStrictEqual(yield* registrations.list, [expected])
        })))

      it.effect("list answers every registration; a removal leaves the others", () =>
        run(Effect.gen(function*() {
          const registrations = yield* SubscriberRegistrations
          for (const name of ["charlie", "alpha", "bravo"]) yield* registrations.save({ name, ...filters, now: at(1) })
          assert.deepStrictEqual(names(yield* registrations.list), ["alpha", "bravo", "charlie"])
          assert.isTrue(yield* registrations.remove("bravo"))
          assert.deepStrictEqual(names(yield* registrations.list), ["alpha", "charlie"])
          yield* registrations.save({ name: "bravo", ...filters, now: at(2) })
          const back = (yield* registrations.list).find((r) => r.id === "bravo")
          assert.deepStrictEqual([back?.created_at, back?.version], [at(2), 1])
        })))

      it.effect("list answers every registration in the order of their names, past any page size", () =>
        run(Effect.gen(function*() {
          const count = 2_345
          const rows = Array.from({ length: count }, (_, i) => ({
            id: `s${String(count - i).padStart(5, "0")}`,
            ...filters,
            created_at: at(1),
            updated_at: at(1),
            version: 1
          }))
          yield* Effect.orDie((yield* Storage).repository(SubscribersTable).insert(rows))
          const listed = yield* (yield* SubscriberRegistrations).list
          assert.strictEqual(listed.length, count)
          assert.deepStrictEqual(listed.map((r) => r.id), rows.map((r) => r.id).sort())
        })))

      it.effect("concurrent saves of one name all succeed, and one registration remains", () =>
        run(Effect.gen(function*() {
          const registrations = yield* SubscriberRegistrations
          const saved = yield* Effect.all(
            Array.from({ length: 5 }, (_, i) => registrations.save({ name: "audit", ...filters, flatten: i % 2 === 0, now: at(i) })),
            { concurrency: "unbounded" }
          )
          assert.deepStrictEqual(saved.map((r) => r.version).sort(), [1, 2, 3, 4, 5])
          const [only, ...rest] = yield* registrations.list
          assert.deepStrictEqual(rest, [])
          assert.strictEqual(only?.version, 5)
        })))
    })

    describe("expiry announcements", () => {
      const t = (m: number) => new Date(Date.UTC(2026, 0, 1, 0, m)).toISOString()
      const state = (m: number) => ({ purposes: [{ id: "analytics", enabled: true }], vendors: {}, updated_at: t(m) })
      const row = (user: string, m: number | null, extra: Record<string, unknown> = {}) => ({
        organization_id: "o1",
        user_id: user,
        regulation: "gdpr",
        state: state(m ?? 0),
        last_event_id: m === null ? null : `e-${user}-${m}`,
        last_event_at: m === null ? null : t(m),
        user_created_at: t(0),
        announced_event_id: null,
        vendors_enabled: false,
        enabled_purposes: ["analytics"],
        notice_text_content_id: null,
        ...extra
      })
      const seed = Effect.gen(function*() {
        yield* Effect.orDie((yield* Storage).repository(UserStatesTable).insert([
          row("u3", 3),
          row("u1", 1),
          row("u2a", 2),
          row("u2b", 2),
          row("u5", 5),
          row("none", null),
          row("done", 2, { announced_event_id: "e-done-2" }),
          row("again", 2, { announced_event_id: "e-again-1" }),
          row("other-org", 2, { organization_id: "o2" }),
          row("ccpa", 2, { regulation: "ccpa" })
        ]))
      })
      const due = (after: { at: string; userId?: string }, upTo: string, limit = 100) =>
        Effect.flatMap(ExpiryAnnouncements, (s) => s.due({ organizationId: "o1", regulation: "gdpr", after, upTo, limit }))
      const announce = (userId: string, lastEventId: string) =>
        Effect.flatMap(ExpiryAnnouncements, (s) => s.announce({ organizationId: "o1", userId, regulation: "gdpr", lastEventId }))

      it.effect("due: the range (after, upTo] of the organization and regulation, not yet announced, by time then user, a page at a time", () =>
        run(Effect.gen(function*() {
          yield* seed
          const all = yield* due({ at: t(1) }, t(3))
          assert.deepStrictEqual(all.map((r) => r.user_id), ["again", "u2a", "u2b", "u3"])
          assert.deepStrictEqual(all[1], { user_id: "u2a", last_event_id: "e-u2a-2", last_event_at: t(2), state: state(2) })
          const first = yield* due({ at: t(0) }, t(5), 2)
          assert.deepStrictEqual(first.map((r) => r.user_id), ["u1", "again"])
          const next = yield* due({ at: first[1]!.last_event_at, userId: first[1]!.user_id }, t(5), 2)
          assert.deepStrictEqual(next.map((r) => r.user_id), ["u2a", "u2b"])
          const last = yield* due({ at: next[1]!.last_event_at, userId: next[1]!.user_id }, t(5), 2)
          assert.deepStrictEqual(last.map((r) => r.user_id), ["u3", "u5"])
          assert.deepStrictEqual(yield* due({ at: t(5) }, t(9)), [])
        })))

      it.effect("announce: once per last merged event; not for another event; a newer event is due again", () =>
        run(Effect.gen(function*() {
          yield* seed
          const uow = yield* UnitOfWork
          assert.isFalse(yield* uow.transaction(announce("u2a", "e-u2a-1")))
          assert.isTrue(yield* uow.transaction(announce("u2a", "e-u2a-2")))
          assert.isFalse(yield* uow.transaction(announce("u2a", "e-u2a-2")))
          assert.isFalse(yield* uow.transaction(announce("done", "e-done-2")))
          assert.deepStrictEqual((yield* due({ at: t(0) }, t(9))).map((r) => r.user_id), ["u1", "again", "u2b", "u3", "u5"])
          // A rolled-back mark leaves the row due.
          const failed = yield* Effect.exit(uow.transaction(Effect.zipRight(announce("u2b", "e-u2b-2"), Effect.fail("rolled back"))))
          assert.isTrue(Exit.isFailure(failed))
          assert.include((yield* due({ at: t(0) }, t(9))).map((r) => r.user_id), "u2b")
          // A newer event (what the triggers write from the user) starts a new period.
          const sql = yield* SqlClient.SqlClient
          yield* Effect.orDie(sql`UPDATE consent_user_states SET last_event_id = ${"e-u2a-4"}, last_event_at = ${t(4)}
            WHERE organization_id = ${"o1"} AND user_id = ${"u2a"} AND regulation = ${"gdpr"}`)
          assert.deepStrictEqual((yield* due({ at: t(3) }, t(4))).map((r) => r.user_id), ["u2a"])
          assert.isTrue(yield* uow.transaction(announce("u2a", "e-u2a-4")))
        })))

      it.effect("concurrent announcements of one expiry: exactly one changes the row", () =>
        run(Effect.gen(function*() {
          yield* seed
          const uow = yield* UnitOfWork
          const results = yield* Effect.all(
            Array.from({ length: 4 }, () => uow.transaction(Effect.zipLeft(announce("u3", "e-u3-3"), Effect.yieldNow()))),
            { concurrency: "unbounded" }
          )
          assert.deepStrictEqual(results.filter((r) => r).length, 1)
        })))
    })

    describe("consent log", () => {
      const sha256 = (s: string) => crypto.createHash("sha256").update(s, "utf8").digest("hex")
      const link = (text: string) => (previous: string, seq: number) => sha256(`${previous}\n${seq}\n${text}`)
      const entry = (organizationId: string, shard: number, text: string, time = at(1)) => ({
        organizationId,
        shard,
        changes: text,
        at: time,
        link: link(text)
      })
      const append = (org: string, shard: number, text: string) =>
        Effect.flatMap(UnitOfWork, (uow) =>
          uow.transaction(Effect.flatMap(ConsentLogStore, (log) => Effect.map(log.append([entry(org, shard, text)]), (heads) => heads[0]!))))

      it.effect("appends link each entry to the one before by the one formula (hashed in SQL or not), per chain", () =>
        run(Effect.gen(function*() {
          const first = yield* append("o1", 3, "one ü")
          const second = yield* append("o1", 3, "two")
          const other = yield* append("o1", 4, "elsewhere")
          assert.deepStrictEqual(first, { shard: 3, seq: 1, hash: sha256("\n1\none ü") })
          assert.deepStrictEqual(second, { shard: 3, seq: 2, hash: sha256(`${first.hash}\n2\ntwo`) })
          assert.deepStrictEqual(other, { shard: 4, seq: 1, hash: sha256("\n1\nelsewhere") })
          const log = yield* ConsentLogStore
          const entries = yield* log.entries("o1", { limit: 10 })
          assert.deepStrictEqual(entries.map((e) => [e.shard, e.seq, e.changes, e.hash, e.created_at]), [
            [3, 1, "one ü", first.hash, at(1)],
            [3, 2, "two", second.hash, at(1)],
            [4, 1, "elsewhere", other.hash, at(1)]
          ])
          assert.deepStrictEqual((yield* log.entries("o1", { after: { shard: 3, seq: 2 }, limit: 10 })).map((e) => e.seq), [1])
          assert.deepStrictEqual((yield* log.entries("o1", { shard: 3, after: { shard: 3, seq: 1 }, limit: 10 })).map((e) => e.seq), [2])
          assert.deepStrictEqual(yield* log.heads("o1"), [second, other])
          assert.deepStrictEqual(yield* log.entries("o2", { limit: 10 }), [])
          yield* log.forget("o1")
          assert.deepStrictEqual(yield* log.heads("o1"), [])
          assert.deepStrictEqual(yield* log.entries("o1", { limit: 10 }), [])
        })))

      it.effect("an append rolled back with its transaction leaves the chain as it was", () =>
        run(Effect.gen(function*() {
          const first = yield* append("o1", 0, "kept")
          const uow = yield* UnitOfWork
          const log = yield* ConsentLogStore
          const failed = yield* Effect.exit(uow.transaction(Effect.zipRight(log.append([entry("o1", 0, "lost", at(2))]), Effect.fail("no"))))
          assert.isTrue(Exit.isFailure(failed))
          const next = yield* append("o1", 0, "next")
          assert.deepStrictEqual(next, { shard: 0, seq: 2, hash: sha256(`${first.hash}\n2\nnext`) })
        })))

      it.effect("one append moves every chain it names, of several organizations, new and not, each linked to its own", () =>
        run(Effect.gen(function*() {
          const first = yield* append("o1", 2, "before")
          const uow = yield* UnitOfWork
          const log = yield* ConsentLogStore
          const heads = yield* uow.transaction(log.append([entry("o1", 2, "x"), entry("o1", 9, "y"), entry("o2", 2, "z")]))
          assert.deepStrictEqual(heads, [
            { shard: 2, seq: 2, hash: sha256(`${first.hash}\n2\nx`) },
            { shard: 9, seq: 1, hash: sha256("\n1\ny") },
            { shard: 2, seq: 1, hash: sha256("\n1\nz") }
          ])
          assert.deepStrictEqual((yield* log.entries("o1", { limit: 10 })).map((e) => [e.shard, e.seq, e.changes]), [
            [2, 1, "before"],
            [2, 2, "x"],
            [9, 1, "y"]
          ])
          assert.deepStrictEqual((yield* log.entries("o2", { limit: 10 })).map((e) => [e.shard, e.seq, e.changes, e.hash]), [
            [2, 1, "z", heads[2]!.hash]
          ])
          assert.deepStrictEqual(yield* uow.transaction(log.append([])), [])
        })))

      it.effect("entries appended from commit work land with the COMMIT, beside the transaction's rows, linked as append links them", () =>
        run(Effect.gen(function*() {
          const uow = yield* UnitOfWork
          const log = yield* ConsentLogStore
          const repo = yield* items
          const first = yield* append("o1", 5, "before")
          const commitWrite = (i: number) =>
            uow.transaction(Effect.zipRight(
              repo.create(item(`on-commit-${i}`)),
              uow.beforeCommit({ run: (texts: ReadonlyArray<string>) => log.appendOnCommit(texts.map((t) => entry("o1", 5, t))) }, `c${i}`)
            ))
          yield* Effect.all(Array.from({ length: 12 }, (_, i) => commitWrite(i)), { concurrency: "unbounded" })
          const entries = yield* log.entries("o1", { shard: 5, limit: 100 })
          assert.deepStrictEqual(entries.map((e) => e.seq), Array.from({ length: 13 }, (_, i) => i + 1))
          assert.deepStrictEqual(entries.slice(1).map((e) => e.changes).sort(), Array.from({ length: 12 }, (_, i) => `c${i}`).sort())
          let previous = ""
          for (const e of entries) {
            assert.strictEqual(e.hash, sha256(`${previous}\n${e.seq}\n${e.changes}`))
            previous = e.hash
          }
          assert.strictEqual(entries[0]!.hash, first.hash)
          assert.deepStrictEqual(yield* log.heads("o1"), [{ shard: 5, seq: 13, hash: previous }])
          assert.strictEqual((yield* repo.find({ where: [], sort: [], limit: 100, skip: 0, count: false })).data.filter((r) => String(r.id).startsWith("on-commit-")).length, 12)
          // Outside a transaction it is an append of its own.
          yield* log.appendOnCommit([entry("o2", 1, "alone")])
          assert.deepStrictEqual((yield* log.entries("o2", { limit: 10 })).map((e) => [e.shard, e.seq, e.changes, e.hash]), [[1, 1, "alone", sha256("\n1\nalone")]])
        })))

      it.effect("concurrent appends to one chain never fork it: seq 1..n, each linked to the one before", () =>
        run(Effect.gen(function*() {
          yield* Effect.all(Array.from({ length: 20 }, (_, i) => append("o1", 7, `w${i}`)), { concurrency: "unbounded" })
          const entries = yield* Effect.flatMap(ConsentLogStore, (log) => log.entries("o1", { limit: 100 }))
          assert.deepStrictEqual(entries.map((e) => e.seq), Array.from({ length: 20 }, (_, i) => i + 1))
          let previous = ""
          for (const e of entries) {
            assert.strictEqual(e.hash, sha256(`${previous}\n${e.seq}\n${e.changes}`))
            previous = e.hash
          }
        })))
    })

    describe("proof files", () => {
      it.effect("keeps bytes per organization and id, exactly; remove and forget drop them", () =>
        run(Effect.gen(function*() {
          const files = yield* ProofFiles
          const bytes = new Uint8Array(256).map((_, i) => i)
          yield* files.put({ organization_id: "o1", id: "p1" }, bytes)
          yield* files.put({ organization_id: "o2", id: "p1" }, new Uint8Array([1]))
          const got = yield* files.get({ organization_id: "o1", id: "p1" })
          assert.deepStrictEqual(Option.map(got, (b) => Array.from(b)), Option.some(Array.from(bytes)))
          yield* files.remove({ organization_id: "o1", id: "p1" })
          assert.isTrue(Option.isNone(yield* files.get({ organization_id: "o1", id: "p1" })))
          assert.isTrue(Option.isSome(yield* files.get({ organization_id: "o2", id: "p1" })))
          yield* files.forget("o2")
          assert.isTrue(Option.isNone(yield* files.get({ organization_id: "o2", id: "p1" })))
        })))
    })
  })
