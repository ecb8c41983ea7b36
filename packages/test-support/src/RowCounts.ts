/**
 * The row counts a store keeps are exact: the `total` of a find over an organization's consent
 * users, events, proofs and webhook messages (which the store reads from its counts), and the
 * delivery stats' counts per status, always equal the rows a find that counts them one by one
 * finds (a condition on `created_at` is not one the counts are kept by). Through core's
 * use-cases and the store's ports, on a fresh store per test, each store package registering
 * the suite on itself: creates, removals, erasure with its cascades, an organization's removal,
 * writes that fail and roll back, concurrent writes committed together, and messages moving
 * through the delivery queue.
 */
import {
  ConsentEventsResource,
  ConsentUsersResource,
  DeliveriesTable,
  DeliveryQueue,
  type DeliveryRow,
  DeliveryStats,
  eq,
  gte,
  OrganizationsResource,
  PremiumFeaturesResource,
  type Principal,
  ProofsResource,
  ResourceService as RS,
  Storage,
  type TableDef,
  WebhooksResource
} from "@cmp/core"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import { operatorWith } from "./Operator.js"
import { engineLayer, type EngineStore } from "./EngineServices.js"
import { dataUri, samplePdf } from "./ProofSamples.js"

const T0 = Date.parse("2026-03-10T12:00:00.000Z")
const EPOCH = "1970-01-01T00:00:00.000Z"

const setup = Effect.gen(function*() {
  yield* TestClock.setTime(T0)
  const { operator, organizations: [a, b] } = yield* operatorWith("A", "B")
  // Proofs sent with events are kept where the organization has the feature.
  const flags = yield* Effect.flatMap(Storage, (s) =>
    s.repository(PremiumFeaturesResource.tableDef).find({ where: [eq("organization_id", a!)], sort: [], limit: 1, skip: 0 }))
  yield* RS.patch(PremiumFeaturesResource, operator, flags.data[0]!.id as string, { versions_and_proofs: true })
  return { operator, a: a!, b: b! }
})

const choices = { purposes: [{ id: "analytics", enabled: true }] }

/**
 * The total of a table's rows of an organization, as a find answers it from the kept counts,
 * and as a find whose condition the counts are not kept by counts them one by one.
 */
const totals = (table: TableDef, organizationId: string) =>
  Effect.gen(function*() {
    const repo = (yield* Storage).repository(table)
    const page = (where: ReturnType<typeof eq>[]) => repo.find({ where, sort: [], limit: 0, skip: 0 })
    const kept = (yield* page([eq("organization_id", organizationId)])).total
    const read = (yield* page([eq("organization_id", organizationId), gte("created_at", EPOCH)])).total
    return { kept, read }
  })

/** Both totals of each table are the expected number of rows. */
const expectTotals = (organizationId: string, expected: { users: number; events: number; proofs?: number }) =>
  Effect.gen(function*() {
    const users = yield* totals(ConsentUsersResource.tableDef, organizationId)
    const events = yield* totals(ConsentEventsResource.tableDef, organizationId)
    const proofs = yield* totals(ProofsResource.tableDef, organizationId)
    expect({ users, events, proofs }).toEqual({
      users: { kept: expected.users, read: expected.users },
      events: { kept: expected.events, read: expected.events },
      proofs: { kept: expected.proofs ?? 0, read: expected.proofs ?? 0 }
    })
  })

const event = (operator: Principal, organizationId: string, user: string, over: Record<string, unknown> = {}) =>
  RS.create(ConsentEventsResource, operator, { organization_id: organizationId, user: { organization_user_id: user }, consents: choices, ...over })

const at = (s: number) => new Date(T0 + s * 1000).toISOString()

const message = (id: string, organizationId: string, webhookId: string, status: DeliveryRow["status"]): DeliveryRow => ({
  id,
  organization_id: organizationId,
  webhook_id: webhookId,
  event_type: "event.created",
  regulation: "gdpr",
  status,
  attempts_count: 0,
  next_attempt_at: status === "pending" ? at(0) : null,
  last_status_code: null,
  payload: { type: "event.created", parameters: {}, regulation: "gdpr" },
  lease_until: null,
  leased_by: null,
  trace_context: null,
  created_at: at(0),
  updated_at: at(0),
  version: 1
})

const hook = (id: string, organizationId: string) => ({
  id,
  organization_id: organizationId,
  url: `https://example.com/${id}`,
  enabled: true,
  event_types: [],
  flatten: false,
  regulations: [],
  auth: null,
  signing_secret_sealed: "sealed",
  previous_secret_sealed: null,
  previous_secret_expires_at: null,
  auth_client_secret_sealed: null,
  created_at: at(0),
  updated_at: at(0),
  version: 1
})

const statuses = ["pending", "delivering", "delivered", "failed"] as const

/** A webhook's messages per status, as the stats answer them and as a find counting them one by one does. */
const deliveryCounts = (organizationId: string, webhookId: string) =>
  Effect.gen(function*() {
    const stats = yield* (yield* DeliveryStats).ofOrganization(organizationId)
    const repo = (yield* Storage).repository(DeliveriesTable)
    const read: Record<string, number> = {}
    const kept: Record<string, number> = {}
    for (const status of statuses) {
      const where = [eq("organization_id", organizationId), eq("webhook_id", webhookId), eq("status", status)]
      kept[status] = (yield* repo.find({ where, sort: [], limit: 0, skip: 0 })).total
      read[status] = (yield* repo.find({ where: [...where, gte("created_at", EPOCH)], sort: [], limit: 0, skip: 0 })).total
    }
    return { stats: stats.find((s) => s.webhook_id === webhookId)?.counts, kept, read }
  })

export const rowCountSuite = (name: string, makeStore: () => Layer.Layer<EngineStore>) =>
  describe(`row counts on ${name}`, () => {
    const testLayer = () => engineLayer(makeStore())

    it.effect("creates, patches and removals of users, events and proofs, each organization apart", () =>
      Effect.gen(function*() {
        const { a, b, operator } = yield* setup
        yield* expectTotals(a, { users: 0, events: 0 })
        // The first event of a user makes the user; a second one adds an event only.
        yield* event(operator, a, "u1")
        yield* event(operator, a, "u1")
        yield* event(operator, a, "u2", { proofs: [{ file: dataUri("application/pdf", samplePdf()) }] })
        yield* event(operator, b, "u1")
        const user = yield* RS.create(ConsentUsersResource, operator, { organization_id: a, organization_user_id: "u3", consents: choices })
        yield* expectTotals(a, { users: 3, events: 4, proofs: 1 })
        yield* expectTotals(b, { users: 1, events: 1 })
        // A patch changes no count.
        yield* RS.patch(ConsentUsersResource, operator, user.id as string, { country: "FR" }, { organizationId: a })
        yield* expectTotals(a, { users: 3, events: 4, proofs: 1 })
        const [first] = (yield* RS.find(ConsentEventsResource, operator, { organization_id: a, $limit: "1" })).data
        yield* RS.remove(ConsentEventsResource, operator, first!.id as string, { organizationId: a })
        yield* expectTotals(a, { users: 3, events: 3, proofs: 1 })
        yield* expectTotals(b, { users: 1, events: 1 })
      }).pipe(Effect.provide(testLayer())), 30_000)

    it.effect("erasing a user takes its events and proofs off the counts; removing an organization, everything of it", () =>
      Effect.gen(function*() {
        const { a, b, operator } = yield* setup
        const pdf = { proofs: [{ file: dataUri("application/pdf", samplePdf()) }] }
        const kept = yield* event(operator, a, "keep", pdf)
        const erased = yield* event(operator, a, "erase", pdf)
        yield* event(operator, a, "erase")
        yield* event(operator, b, "other")
        yield* expectTotals(a, { users: 2, events: 3, proofs: 2 })
        yield* RS.remove(ConsentUsersResource, operator, (erased.user as { id: string }).id, { organizationId: a })
        yield* expectTotals(a, { users: 1, events: 1, proofs: 1 })
        expect((kept.user as { id: string }).id).toBeDefined()

        const storage = yield* Storage
        yield* Effect.orDie(storage.repository(WebhooksResource.tableDef).create(hook("w-a", a)))
        yield* Effect.orDie(storage.repository(DeliveriesTable).insert([message("m1", a, "w-a", "pending"), message("m2", a, "w-a", "failed")]))
        yield* RS.remove(OrganizationsResource, operator, a)
        yield* expectTotals(a, { users: 0, events: 0 })
        expect(yield* totals(DeliveriesTable, a)).toEqual({ kept: 0, read: 0 })
        yield* expectTotals(b, { users: 1, events: 1 })
      }).pipe(Effect.provide(testLayer())), 30_000)

    it.effect("concurrent writes, some failing and rolled back, count exactly what committed", () =>
      Effect.gen(function*() {
        const { a, b, operator } = yield* setup
        // Every fifth names an event id already taken: a Conflict, its writes rolled back.
        yield* event(operator, a, "first", { id: "taken" })
        const outcomes = yield* Effect.all(
          Array.from({ length: 40 }, (_, i) =>
            Effect.either(event(operator, i % 2 === 0 ? a : b, `user-${i}`, i % 5 === 0 ? { id: "taken" } : {}))),
          { concurrency: "unbounded" }
        )
        const committed = (org: number) => outcomes.filter((o, i) => i % 2 === org && Either.isRight(o)).length
        // In b, the first to take the id commits; the others of b that name it fail.
        expect(outcomes.filter(Either.isLeft).length).toBe(4 + 3)
        yield* expectTotals(a, { users: 1 + committed(0), events: 1 + committed(0) })
        yield* expectTotals(b, { users: committed(1), events: committed(1) })
      }).pipe(Effect.provide(testLayer())), 30_000)

    it.effect("the delivery stats count every message where it is: queued, claimed, completed, replayed, removed", () =>
      Effect.gen(function*() {
        const { a, b } = yield* setup
        const storage = yield* Storage
        const queue = yield* DeliveryQueue
        yield* Effect.orDie(storage.repository(WebhooksResource.tableDef).create(hook("w-a", a)))
        yield* Effect.orDie(storage.repository(WebhooksResource.tableDef).create(hook("w-b", b)))
        const deliveries = storage.repository(DeliveriesTable)
        yield* Effect.orDie(deliveries.insert(Array.from({ length: 10 }, (_, i) => message(`m${i}`, a, "w-a", "pending"))))
        yield* Effect.orDie(deliveries.insert([message("x1", b, "w-b", "pending"), message("s1", a, "subscriber:audit", "pending")]))
        const expectCounts = (counts: Record<(typeof statuses)[number], number>) =>
          Effect.map(deliveryCounts(a, "w-a"), (found) => expect(found).toEqual({ stats: counts, kept: counts, read: counts }))
        yield* expectCounts({ pending: 10, delivering: 0, delivered: 0, failed: 0 })

        const claimed = yield* queue.claim({ now: at(1), leaseUntil: at(60), workerId: "w", limit: 6 })
        const mine = claimed.filter((m) => m.webhook_id === "w-a")
        yield* expectCounts({ pending: 10 - mine.length, delivering: mine.length, delivered: 0, failed: 0 })
        const attempt = (id: string, ok: boolean) => ({
          id: `a-${id}`,
          delivery_id: id,
          organization_id: a,
          webhook_id: "w-a",
          attempted_at: at(2),
          status_code: ok ? 200 : 500,
          succeeded: ok,
          duration_ms: 1,
          error: null,
          response_excerpt: null
        })
        const outcomes = ["delivered", "failed", "pending"] as const
        yield* Effect.all(
          mine.map((m, i) =>
            queue.complete({
              id: m.id,
              workerId: "w",
              now: at(2),
              attempt: attempt(m.id, outcomes[i % 3] === "delivered"),
              outcome: { status: outcomes[i % 3]!, attempts_count: 1, next_attempt_at: outcomes[i % 3] === "pending" ? at(300) : null, last_status_code: 200 }
            })),
          { concurrency: "unbounded" }
        )
        const done = (s: string) => mine.filter((_, i) => outcomes[i % 3] === s).length
        yield* expectCounts({ pending: 10 - mine.length + done("pending"), delivering: 0, delivered: done("delivered"), failed: done("failed") })

        // A replay moves a failed message back to pending, as the use-case does.
        const failed = mine.find((_, i) => outcomes[i % 3] === "failed")!
        const row = (yield* deliveries.get(failed.id))
        if (row._tag === "None") return yield* Effect.dieMessage("the failed message is gone")
        yield* Effect.orDie(deliveries.patch(failed.id, { status: "pending", next_attempt_at: at(3), updated_at: at(3) }, row.value.version))
        yield* expectCounts({ pending: 11 - mine.length + done("pending"), delivering: 0, delivered: done("delivered"), failed: done("failed") - 1 })
        yield* Effect.orDie(deliveries.remove(mine[0]!.id))
        const after = yield* deliveryCounts(a, "w-a")
        expect(after.stats).toEqual(after.read)
        expect(after.kept).toEqual(after.read)
        expect(Object.values(after.read).reduce((x, y) => x + y, 0)).toBe(9)
        // Another organization's messages, and a subscriber's, are counted apart.
        expect((yield* deliveryCounts(b, "w-b")).kept).toEqual({ pending: 1, delivering: 0, delivered: 0, failed: 0 })
        expect(yield* totals(DeliveriesTable, a)).toEqual({ kept: 10, read: 10 })
      }).pipe(Effect.provide(testLayer())), 30_000)
  })
