/**
 * The rows of users' states (`consent_user_states`) the database keeps from the users'
 * `consent_states`: one per user and regulation with a state, naming the last merged event and
 * its time, whatever wrote the user (an event, a user's create or patch with choices, a
 * removed event merged again from scratch, an erasure, an organization's removal). Through
 * core's use-cases and the store's ports, each store package registering the suite on itself.
 */
import {
  ConsentEventsResource,
  ConsentUsersResource,
  eq,
  OrganizationsResource,
  ResourceService as RS,
  Storage,
  UserStatesTable
} from "@cmp/core"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import { operatorWith } from "./Operator.js"
import { engineLayer, type EngineStore } from "./EngineServices.js"

const T0 = Date.parse("2026-03-10T12:00:00.000Z")

const setup = Effect.gen(function*() {
  yield* TestClock.setTime(T0)
  const { operator, organizations: [a] } = yield* operatorWith("A")
  return { operator, a: a! }
})

/** The state rows of an organization, as `[user, regulation, last_event_id, last_event_at]`, in a stable order. */
const rowsOf = (organizationId: string) =>
  Effect.gen(function*() {
    const page = yield* (yield* Storage).repository(UserStatesTable).find({
      count: false,
      where: [eq("organization_id", organizationId)],
      sort: [],
      ordered: false,
      limit: 1000,
      skip: 0
    })
    return page.data.map((r) => ({
      user: r.user_id,
      regulation: r.regulation,
      event: r.last_event_id,
      at: r.last_event_at === null ? null : new Date(r.last_event_at).toISOString(),
      created: new Date(r.user_created_at).toISOString(),
      purposes: r.state.purposes.map((p) => `${p.id}:${p.enabled}`)
    })).sort((x, y) => (x.user + "\n" + x.regulation < y.user + "\n" + y.regulation ? -1 : 1))
  })

export const userStateRowsSuite = (name: string, makeStore: () => Layer.Layer<EngineStore>) =>
  describe(`users' state rows on ${name}`, () => {
    it.effect("follow events, users' choices, removals and erasure", () =>
      Effect.gen(function*() {
        const { operator, a } = yield* setup
        const event = (user: string, created_at: string, enabled: boolean, regulation = "gdpr") =>
          RS.create(ConsentEventsResource, operator, {
            organization_id: a,
            regulation,
            created_at,
            user: { organization_user_id: user },
            consents: { purposes: [{ id: "analytics", enabled }] }
          })
        const e1 = yield* event("u1", "2026-01-01T00:00:00.000Z", true)
        const u1 = e1.user.id as string
        const created = new Date(T0).toISOString()
        expect(yield* rowsOf(a)).toEqual([
          { user: u1, regulation: "gdpr", event: e1.id, at: "2026-01-01T00:00:00.000Z", created, purposes: ["analytics:true"] }
        ])
        // A newer event moves the row; another regulation adds one; an older one is merged in order.
        const e2 = yield* event("u1", "2026-02-01T00:00:00.000Z", false)
        const e3 = yield* event("u1", "2026-01-15T00:00:00.000Z", true, "ccpa")
        yield* event("u1", "2025-12-01T00:00:00.000Z", true)
        expect(yield* rowsOf(a)).toEqual([
          { user: u1, regulation: "ccpa", event: e3.id, at: "2026-01-15T00:00:00.000Z", created, purposes: ["analytics:true"] },
          { user: u1, regulation: "gdpr", event: e2.id, at: "2026-02-01T00:00:00.000Z", created, purposes: ["analytics:false"] }
        ])
        // Removing the newest event merges the others again.
        yield* RS.remove(ConsentEventsResource, operator, e2.id as string, { organizationId: a })
        expect((yield* rowsOf(a)).find((r) => r.regulation === "gdpr")).toMatchObject({ event: e1.id, at: "2026-01-01T00:00:00.000Z" })
        // Removing the only event of a regulation removes its row.
        yield* RS.remove(ConsentEventsResource, operator, e3.id as string, { organizationId: a })
        expect((yield* rowsOf(a)).map((r) => r.regulation)).toEqual(["gdpr"])
        // A user made with choices has its row; one made without has none.
        const u2 = yield* RS.create(ConsentUsersResource, operator, { organization_id: a, organization_user_id: "u2", consents: { purposes: [{ id: "ads", enabled: true }] } })
        yield* RS.create(ConsentUsersResource, operator, { organization_id: a, organization_user_id: "u3" })
        const rows = yield* rowsOf(a)
        expect(rows.map((r) => [r.user, r.regulation])).toEqual([[u1, "gdpr"], [u2.id, "gdpr"]].sort((x, y) => (x[0]! < y[0]! ? -1 : 1)))
        expect(rows.find((r) => r.user === u2.id)).toMatchObject({ purposes: ["ads:true"], at: created })
        // Erasure takes the rows with the user.
        yield* RS.remove(ConsentUsersResource, operator, u1, { organizationId: a })
        expect((yield* rowsOf(a)).map((r) => r.user)).toEqual([u2.id])
        // So does the organization's removal.
        yield* RS.remove(OrganizationsResource, operator, a)
        expect(yield* rowsOf(a)).toEqual([])
      }).pipe(Effect.provide(engineLayer(makeStore()))), { timeout: 60_000 })
  })
