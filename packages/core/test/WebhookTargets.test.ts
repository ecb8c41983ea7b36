import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { type Target, WebhookTargets } from "../src/Webhooks/Targets.js"

const hook = (id: string): Target => ({ id, event_types: [], regulations: null, flatten: false })

/** The cache on a hand-set clock, over an organization's webhooks that a test changes, read by a load that counts its calls. */
const setup = Effect.gen(function*() {
  let now = 0
  const targets = yield* Effect.provide(WebhookTargets, WebhookTargets.layer(1000, () => now))
  let reads = 0
  let stored: ReadonlyArray<Target> = [hook("w1")]
  const load = Effect.sync(() => {
    reads++
    return stored
  })
  return {
    targets,
    load,
    reads: () => reads,
    advance: (ms: number) => (now += ms),
    store: (hooks: ReadonlyArray<Target>) => (stored = hooks)
  }
})

const ids = (targets: ReadonlyArray<Target>) => targets.map((t) => t.id)

describe("WebhookTargets", () => {
  it.effect("another server's change is seen once the ttl has passed, not before", () =>
    Effect.gen(function*() {
      const t = yield* setup
      assert.deepStrictEqual(ids(yield* t.targets.read("org-1", t.load)), ["w1"])
      t.store([hook("w1"), hook("w2")])
      t.advance(999)
      assert.deepStrictEqual(ids(yield* t.targets.read("org-1", t.load)), ["w1"])
      assert.strictEqual(t.reads(), 1)
      t.advance(1)
      assert.deepStrictEqual(ids(yield* t.targets.read("org-1", t.load)), ["w1", "w2"])
      assert.strictEqual(t.reads(), 2)
    }))

  it.effect("a change through this process is seen at once, and only its organization is read again", () =>
    Effect.gen(function*() {
      const t = yield* setup
      yield* t.targets.read("org-1", t.load)
      yield* t.targets.read("org-2", Effect.succeed([hook("x")]))
      t.store([])
      yield* t.targets.forget("org-1")
      assert.deepStrictEqual(ids(yield* t.targets.read("org-1", t.load)), [])
      assert.deepStrictEqual(ids(yield* t.targets.read("org-2", Effect.succeed([]))), ["x"])
    }))

  it.effect("a list read before a change and answered after it is not kept", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const slow = Effect.zipRight(
        Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(release)),
        Effect.succeed([hook("old")])
      )
      const racing = yield* Effect.fork(t.targets.read("org-1", slow))
      yield* Deferred.await(started)
      yield* t.targets.forget("org-1")
      yield* Deferred.succeed(release, undefined)
      assert.deepStrictEqual(ids(yield* Fiber.join(racing)), ["old"])
      assert.deepStrictEqual(ids(yield* t.targets.read("org-1", t.load)), ["w1"])
    }))
})
