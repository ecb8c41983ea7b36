import {
  authenticate,
  ConsentEventsResource,
  bootstrap,
  createSession,
  eq,
  executeExport,
  ExportConfigsResource,
  ExportSink,
  type ExportWriter,
  OrganizationsResource,
  PremiumFeaturesResource,
  type Principal,
  ResourceService as RS,
  Storage
} from "@cmp/core"
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import { engineLayer, type EngineStore } from "./EngineServices.js"

/**
 * A manual export run through core's use-case, on a real store (each store package registers
 * the suite on itself), with a sink that records what is done to its writers and can hold a run
 * open: what happens to a run that is interrupted.
 */

interface Sink {
  /** Destinations (their paths) in the order they were opened, and those aborted. */
  readonly opened: Array<string>
  readonly aborted: Array<string>
  /** What was written to the first destination, in order. */
  readonly written?: Array<string>
  /** Runs once, on the first write: a change to the store while the run is under way. */
  onFirstWrite?: Effect.Effect<void> | undefined
  /** While set, writing and closing wait forever once `writing` is done. */
  hold: boolean
  writing: Deferred.Deferred<void> | undefined
}

const recordingSink = (sink: Sink) =>
  Layer.succeed(ExportSink, {
    open: (destination) =>
      Effect.sync(() => {
        const name = destination.type === "directory" ? destination.path : destination.url
        sink.opened.push(name)
        const step = Effect.suspend(() =>
          sink.hold && sink.writing ? Effect.zipRight(Deferred.succeed(sink.writing, undefined), Effect.never) : Effect.void
        )
        const write = (chunk: string) =>
          Effect.suspend(() => {
            if (name === sink.opened[0]) sink.written?.push(chunk)
            const first = sink.onFirstWrite
            sink.onFirstWrite = undefined
            return first ? Effect.zipRight(first, step) : step
          })
        const writer: ExportWriter = { write, close: step, abort: Effect.sync(() => void sink.aborted.push(name)) }
        return writer
      })
  })

const setup = Effect.gen(function*() {
  yield* TestClock.setTime(Date.parse("2026-03-10T12:00:00.000Z"))
  yield* bootstrap({ key: "admin", secret: "admin-secret" })
  const session = yield* createSession({ type: "api-key", key: "admin", secret: "admin-secret" })
  const operator = (yield* authenticate(session.access_token)) as Principal
  const org = (yield* RS.create(OrganizationsResource, operator, { name: "Org" })).id as string
  const flags = yield* Effect.flatMap(Storage, (s) =>
    s.repository(PremiumFeaturesResource.tableDef).find({ where: [eq("organization_id", org)], sort: [], limit: 1, skip: 0 })
  )
  yield* RS.patch(PremiumFeaturesResource, operator, flags.data[0]!.id as string, { batch_exports_manual_run: true })
  const config = yield* RS.create(ExportConfigsResource, operator, {
    organization_id: org,
    name: "nightly",
    destinations: [{ type: "directory", path: "a" }, { type: "directory", path: "b" }]
  })
  const body = { organization_id: org, export_config_id: config.id, from: "2026-01-01T00:00:00Z", to: "2027-01-01T00:00:00Z" }
  const event = (createdAt: string) =>
    RS.create(ConsentEventsResource, operator, {
      organization_id: org,
      created_at: createdAt,
      user: { organization_user_id: "u" },
      consents: { purposes: [{ id: "analytics", enabled: true }] }
    })
  return { run: executeExport(operator, body), event }
})

export const exportRunSuite = (name: string, makeStore: () => Layer.Layer<EngineStore>) =>
  describe(`an export run on ${name}`, () => {
    const testLayer = () => engineLayer(makeStore())

    it.effect("interrupted, it aborts every writer it opened and frees its organization", () => {
      const sink: Sink = { opened: [], aborted: [], hold: true, writing: undefined }
      return Effect.gen(function*() {
        const { run } = yield* setup
        sink.writing = yield* Deferred.make<void>()
        const fiber = yield* Effect.fork(run)
        yield* Deferred.await(sink.writing)
        yield* Fiber.interrupt(fiber)
        expect(sink.opened).toEqual(["a", "b"])
        expect(sink.aborted.sort()).toEqual(["a", "b"])

        sink.hold = false
        const next = yield* run
        expect(next.status).toBe("succeeded")
      }).pipe(Effect.provide(recordingSink(sink)), Effect.provide(testLayer()))
    })

    it.effect("an event added behind the run's position while it runs neither repeats nor shifts what follows", () => {
      const sink: Sink = { opened: [], aborted: [], hold: false, writing: undefined, written: [] }
      return Effect.gen(function*() {
        const { event, run } = yield* setup
        const base = Date.parse("2026-06-01T00:00:00.000Z")
        // More than one page (500 rows), one millisecond apart.
        const ids: Array<string> = []
        for (let i = 0; i < 520; i++) ids.push((yield* event(new Date(base + i).toISOString())).id as string)
        const context = yield* Effect.context<Effect.Effect.Context<ReturnType<typeof event>>>()
        sink.onFirstWrite = Effect.orDie(event("2026-05-01T00:00:00.000Z")).pipe(Effect.asVoid, Effect.provide(context))
        const done = yield* run
        expect(done).toMatchObject({ status: "succeeded", events_count: 520 })
        const lines = sink.written!.join("").split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l))
        expect(lines.filter((l) => l.type === "event").map((l) => l.id)).toEqual(ids)
      }).pipe(Effect.provide(recordingSink(sink)), Effect.provide(testLayer()))
    }, 30_000)

    it.effect("a run that lasts keeps its organization: past the lease it first took, a second run is still a 429", () => {
      const sink: Sink = { opened: [], aborted: [], hold: true, writing: undefined }
      return Effect.gen(function*() {
        const { run } = yield* setup
        sink.writing = yield* Deferred.make<void>()
        const fiber = yield* Effect.fork(run)
        yield* Deferred.await(sink.writing)
        const busy = yield* Effect.flip(run)
        expect(busy._tag).toBe("TooManyRequests")
        // Well past the first lease's 30 seconds, the run still waiting on its destination. A
        // second at a time, with a moment of real time for the renewals the clock wakes: a store
        // whose driver answers asynchronously finishes a write after `adjust` returns.
        for (let second = 0; second < 45; second++) {
          yield* TestClock.adjust("1 second")
          yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
        }
        const still = yield* Effect.flip(run)
        expect(still._tag).toBe("TooManyRequests")
        yield* Fiber.interrupt(fiber)
      }).pipe(Effect.provide(recordingSink(sink)), Effect.provide(testLayer()))
    })
  })
