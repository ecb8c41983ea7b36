import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { DeliveriesResource } from "../src/Webhooks/Webhooks.js"
import { type SubscriberRegistration, SubscriberRegistrations } from "../src/Webhooks/Ports.js"
import { keepingList } from "../src/Webhooks/Subscribers.js"
import { DeliveriesTable } from "../src/Webhooks/Tables.js"

describe("the outbox table", () => {
  it("is the table the deliveries resource serves, column for column", () => {
    assert.deepStrictEqual(DeliveriesResource.tableDef, DeliveriesTable)
    assert.includeMembers(Object.keys(DeliveriesTable.fields), ["webhook_id", "payload", "lease_until", "leased_by"])
    assert.notInclude(Object.keys(DeliveriesTable.fields), "attempts")
  })
})

/** Registrations in memory whose list counts its reads, kept on a hand-set clock. */
const setup = () => {
  let now = 0
  let reads = 0
  const rows = new Map<string, SubscriberRegistration>()
  const registration = (name: string): SubscriberRegistration => ({
    id: name,
    event_types: [],
    regulations: ["gdpr"],
    flatten: false,
    created_at: "2026-01-01T00:00:00.000Z",
    updated_at: "2026-01-01T00:00:00.000Z",
    version: 1
  })
  const underlying = SubscriberRegistrations.of({
    list: Effect.sync(() => {
      reads++
      return [...rows.values()]
    }),
    save: ({ name }) => Effect.sync(() => rows.set(name, registration(name)).get(name)!),
    remove: (name) => Effect.sync(() => rows.delete(name))
  })
  return {
    kept: keepingList(underlying, 1000, () => now),
    underlying,
    reads: () => reads,
    advance: (ms: number) => (now += ms),
    /** A change made elsewhere (another process), which this copy does not hear of. */
    elsewhere: (name: string) => rows.set(name, registration(name))
  }
}

const ids = (rows: ReadonlyArray<SubscriberRegistration>) => rows.map((r) => r.id)

describe("keepingList", () => {
  it.effect("answers the list from memory for less than a second, then reads again", () =>
    Effect.gen(function*() {
      const t = setup()
      assert.deepStrictEqual(ids(yield* t.kept.list), [])
      t.elsewhere("audit")
      t.advance(999)
      assert.deepStrictEqual(ids(yield* t.kept.list), [])
      assert.strictEqual(t.reads(), 1)
      t.advance(1)
      assert.deepStrictEqual(ids(yield* t.kept.list), ["audit"])
      assert.strictEqual(t.reads(), 2)
    }))

  it.effect("a save or a removal through it is seen at once", () =>
    Effect.gen(function*() {
      const t = setup()
      assert.deepStrictEqual(ids(yield* t.kept.list), [])
      yield* t.kept.save({ name: "audit", event_types: [], regulations: ["gdpr"], flatten: false, now: "2026-01-01T00:00:00.000Z" })
      assert.deepStrictEqual(ids(yield* t.kept.list), ["audit"])
      assert.isTrue(yield* t.kept.remove("audit"))
      assert.deepStrictEqual(ids(yield* t.kept.list), [])
      assert.strictEqual(t.reads(), 3)
    }))

  it.effect("a list read before a change and answered after it is not kept", () =>
    Effect.gen(function*() {
      const t = setup()
      const gate = yield* Deferred.make<void>()
      const slow = keepingList(
        SubscriberRegistrations.of({ ...t.underlying, list: Effect.zipRight(Deferred.await(gate), t.underlying.list) }),
        1000,
        () => 0
      )
      const reading = yield* Effect.fork(slow.list)
      yield* Effect.yieldNow()
      yield* slow.save({ name: "audit", event_types: [], regulations: ["gdpr"], flatten: false, now: "2026-01-01T00:00:00.000Z" })
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(reading)
      const before = t.reads()
      yield* slow.list
      assert.strictEqual(t.reads(), before + 1)
    }))
})
