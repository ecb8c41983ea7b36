import {
  DnsRecords,
  DomainRelease,
  DomainsResource,
  Provisioner,
  ResourceService as RS,
  Storage
} from "@cmp/core"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import { operatorWith } from "./Operator.js"
import { engineLayer, type EngineStore } from "./EngineServices.js"

/**
 * The release of page hosts nobody proved (api.md "Proven domains"), on a real store (each store
 * package registers the suite on itself) and the test clock: the rule itself, and the loop that
 * runs it in every process of the platform.
 */

const T0 = Date.parse("2026-03-10T12:00:00.000Z")
const HOUR = 3_600_000
const DAY = 24 * HOUR

/** The TXT records the resolver double answers, by name. */
type Records = Record<string, ReadonlyArray<string>>

const hosts = (records: Records) =>
  Layer.mergeAll(
    Provisioner.ImmediateLayer,
    Layer.succeed(DnsRecords, { txt: (name) => Effect.succeed(records[name] ?? []) })
  )

/** An organization's domains of each kind, made at the clock's time: which of them the release may take. */
const world = (records: Records) =>
  Effect.gen(function*() {
    const { operator, organizations: [org] } = yield* operatorWith("Org")
    const make = (name: string, usage: string) =>
      RS.create(DomainsResource, operator, { id: `${name}.example.com`, organization_id: org!, usage })
    const schedule = (id: string) => RS.patch(DomainsResource, operator, id, { status: "scheduled" })
    const draft = yield* make("draft", "privacy-center")
    const failed = yield* make("failed", "preference-center")
    expect((yield* schedule(failed.id)).status).toBe("failed")
    const proven = yield* make("proven", "privacy-center")
    records[proven.verification!.record] = [proven.verification!.value]
    expect((yield* schedule(proven.id)).status).toBe("ready")
    const cmp = yield* make("cmp", "cmp")
    return { operator, make, ids: [draft.id, failed.id, proven.id, cmp.id] }
  })

/** Which of these domains the store still holds. */
const held = (ids: ReadonlyArray<string>) =>
  Effect.flatMap(Storage, (s) =>
    Effect.forEach(ids, (id) => Effect.map(Effect.orDie(s.repository(DomainsResource.tableDef).get(id)), (row) => row._tag === "Some"))
  )

export const domainReleaseSuite = (name: string, makeStore: () => Layer.Layer<EngineStore>) =>
  describe(`the release of unproven page hosts on ${name}`, () => {
    it.effect("a page host not ready seven days after its creation is removed; a ready one, a cmp domain and a younger one stay", () => {
      const records: Records = {}
      return Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        const { ids, make } = yield* world(records)
        yield* TestClock.setTime(T0 + 7 * DAY - 1)
        expect(yield* DomainRelease.releaseUnprovenDomains).toBe(0)
        expect(yield* held(ids)).toEqual([true, true, true, true])
        const younger = yield* make("younger", "privacy-center")
        yield* TestClock.setTime(T0 + 7 * DAY + 1)
        expect(yield* DomainRelease.releaseUnprovenDomains).toBe(2)
        expect(yield* held([...ids, younger.id])).toEqual([false, false, true, true, true])
        // Nothing more to release, until the younger one's seven days are over.
        expect(yield* DomainRelease.releaseUnprovenDomains).toBe(0)
        yield* TestClock.adjust(7 * DAY)
        expect(yield* DomainRelease.releaseUnprovenDomains).toBe(1)
      }).pipe(Effect.provide(Layer.merge(engineLayer(makeStore()), hosts(records))))
    })

    it.scoped("its loop releases them as the clock passes the seven days, at its interval", () => {
      const records: Records = {}
      return Effect.gen(function*() {
        yield* TestClock.setTime(T0)
        const { ids } = yield* world(records)
        // The loop as the platform runs it, for the rest of the test.
        yield* Layer.buildWithScope(DomainRelease.layer({ everyMs: HOUR }), yield* Effect.scope)
        // An hour at a time, with a moment of real time for a round a store answers asynchronously.
        const pass = (hours: number) =>
          Effect.gen(function*() {
            for (let i = 0; i < hours; i++) {
              yield* TestClock.adjust(HOUR)
              yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 2)))
            }
          })
        yield* pass(7 * 24 - 1)
        expect(yield* held(ids)).toEqual([true, true, true, true])
        yield* pass(3)
        expect(yield* held(ids)).toEqual([false, false, true, true])
      }).pipe(Effect.provide(Layer.merge(engineLayer(makeStore()), hosts(records))))
    }, 30_000)
  })
