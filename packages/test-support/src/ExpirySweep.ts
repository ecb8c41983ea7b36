/**
 * The expiry sweep over core's services on a store (each store package registers the suite on
 * itself), its time the TestClock's: what it remembers between sweeps, and what a whole pass
 * catches that the sweeps since the last one could not (an event recorded with a `created_at`
 * behind the point they had reached).
 */
import {
  ConsentEventsResource,
  ConsentPoliciesResource,
  DeliveriesTable,
  eq,
  ExpirySweep,
  ResourceService as RS,
  Storage,
  WebhooksResource
} from "@cmp/core"
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import { operatorWith } from "./Operator.js"
import { engineLayer, type EngineStore } from "./EngineServices.js"

const T0 = Date.parse("2026-03-10T12:00:00.000Z")
const SECOND = 1000
/**
 * The sweep's interval in this suite: a millisecond over a second, so that its sleep is told
 * from any other timer on the test clock at a round second.
 */
const INTERVAL = SECOND + 1
const iso = (ms: number) => new Date(ms).toISOString()

/**
 * Waits (in real time) until the sweep went back to sleep: its next sleep, `INTERVAL` after the
 * TestClock's time (which stands still while it sweeps), is pending.
 */
const settled = Effect.gen(function*() {
  for (;;) {
    const now = yield* TestClock.currentTimeMillis
    if (Chunk.some(yield* TestClock.sleeps(), (at) => at === now + INTERVAL)) return
    yield* Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 5)))
  }
})

/**
 * Moves the TestClock by `sweeps` intervals, one at a time, each step waking one sweep and
 * waiting for it to end: a longer adjustment would wake the sweep at the instants it passes,
 * and let it read a time it had already left.
 */
const advance = (sweeps: number) =>
  Effect.gen(function*() {
    for (let n = 0; n < sweeps; n++) {
      yield* TestClock.adjust(INTERVAL)
      yield* settled
    }
  })

const setup = Effect.gen(function*() {
  yield* TestClock.setTime(T0)
  const { operator, organizations: [a] } = yield* operatorWith("A")
  yield* Effect.orDie((yield* Storage).repository(WebhooksResource.tableDef).create({
    id: "hook-1",
    organization_id: a!,
    url: "https://example.com/hook",
    enabled: true,
    event_types: ["user.consent_expired"],
    flatten: false,
    regulations: ["gdpr"],
    auth: null,
    signing_secret_sealed: "sealed:whsec_x",
    previous_secret_sealed: null,
    previous_secret_expires_at: null,
    auth_client_secret_sealed: null,
    created_at: iso(T0),
    updated_at: iso(T0),
    version: 1
  }))
  return { operator, a: a! }
})

/** The users whose expiry was written to the outbox, in the order of the messages. */
const announced = Effect.gen(function*() {
  const page = yield* (yield* Storage).repository(DeliveriesTable).find({
    count: false,
    where: [eq("webhook_id", "hook-1")],
    sort: [{ field: "id", direction: 1 }],
    limit: 1000,
    skip: 0
  })
  return page.data.map((d) => {
    const p = d.payload as { parameters: { entity: { organization_user_id: string }; expired_at: string } }
    return [p.parameters.entity.organization_user_id, p.parameters.expired_at]
  })
})

export const expirySweepSuite = (name: string, makeStore: () => Layer.Layer<EngineStore>) =>
  describe(`the expiry sweep on ${name}`, () => {
    it.effect("reads only what fell due since its last pass, and the whole range again at its rescan: a lapse recorded late is announced then", () =>
      Effect.gen(function*() {
        const { a, operator } = yield* setup
        const event = (user: string, created_at: number) =>
          RS.create(ConsentEventsResource, operator, {
            organization_id: a,
            created_at: iso(created_at),
            user: { organization_user_id: user },
            consents: { purposes: [{ id: "analytics", enabled: true }] }
          })
        yield* RS.create(ConsentPoliciesResource, operator, { organization_id: a, consent_duration: 60, consent_duration_unit: "seconds" })
        yield* event("on-time", T0)
        yield* Layer.build(ExpirySweep.layer({ intervalMs: INTERVAL, rescanMs: 60 * SECOND }))
        yield* settled
        // The first whole pass is one interval after the start (the first sweep with a range
        // past the policy's form), the next one 60 intervals later.
        yield* advance(61)
        expect(yield* announced).toStrictEqual([["on-time", iso(T0 + 60 * SECOND)]])
        // Written now with a time behind what the sweeps have covered: lapsed already, after the
        // policy took its form, so it is to be announced, by the next whole pass.
        yield* event("late", T0 + 500)
        yield* advance(50)
        expect(yield* announced).toStrictEqual([["on-time", iso(T0 + 60 * SECOND)]])
        yield* advance(10)
        expect(yield* announced).toStrictEqual([["on-time", iso(T0 + 60 * SECOND)], ["late", iso(T0 + 500 + 60 * SECOND)]])
        // And never again.
        yield* advance(61)
        expect(yield* announced).toHaveLength(2)
      }).pipe(Effect.scoped, Effect.provide(engineLayer(makeStore()))), { timeout: 60_000 })
  })
