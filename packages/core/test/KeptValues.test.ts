import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { joinWaitMs, KeptValues, readThrough } from "../src/Engine/KeptValues.js"

/** A load that counts its runs and finishes when told, answering the value it is told. */
const gatedLoad = Effect.gen(function*() {
  let runs = 0
  let gate = yield* Deferred.make<string, string>()
  const load = Effect.suspend(() => {
    runs++
    return Deferred.await(gate)
  })
  return {
    load,
    runs: () => runs,
    finish: (value: string) => Deferred.succeed(gate, value),
    fail: (error: string) => Deferred.fail(gate, error),
    reset: Effect.map(Deferred.make<string, string>(), (d) => (gate = d))
  }
})

const waitForRuns = (runs: () => number, n: number) =>
  Effect.repeat(Effect.yieldNow(), { until: () => runs() >= n })

describe("KeptValues", () => {
  it.effect("callers that miss while a load is under way wait for it: one load, one value", () =>
    Effect.gen(function*() {
      const kept = new KeptValues<string>(1000, () => 0)
      const l = yield* gatedLoad
      const readers = yield* Effect.forEach([1, 2, 3, 4, 5], () => Effect.fork(readThrough(kept, "k", l.load, true)))
      yield* waitForRuns(l.runs, 1)
      yield* Effect.yieldNow()
      yield* l.finish("row")
      for (const r of readers) assert.strictEqual(yield* Fiber.join(r), "row")
      assert.strictEqual(l.runs(), 1)
      assert.strictEqual(yield* readThrough(kept, "k", Effect.succeed("other")), "row")
    }))

  it.effect("a caller that may hold a transaction never waits: it loads on its own", () =>
    Effect.gen(function*() {
      const kept = new KeptValues<string>(1000, () => 0)
      const l = yield* gatedLoad
      const outside = yield* Effect.fork(readThrough(kept, "k", l.load, true))
      yield* waitForRuns(l.runs, 1)
      assert.strictEqual(yield* readThrough(kept, "k", Effect.succeed("inside")), "inside")
      yield* l.finish("row")
      assert.strictEqual(yield* Fiber.join(outside), "row")
    }))

  it.effect("a caller after a forget does not wait for a load begun before it", () =>
    Effect.gen(function*() {
      const kept = new KeptValues<string>(1000, () => 0)
      const l = yield* gatedLoad
      const before = yield* Effect.fork(readThrough(kept, "k", l.load, true))
      yield* waitForRuns(l.runs, 1)
      kept.forget("k")
      assert.strictEqual(yield* readThrough(kept, "k", Effect.succeed("after"), true), "after")
      yield* l.finish("before")
      assert.strictEqual(yield* Fiber.join(before), "before")
      // The load under way at the forget was not kept; the one after it was.
      assert.strictEqual(yield* readThrough(kept, "k", Effect.succeed("later")), "after")
    }))

  it.effect("when the load fails, its waiters load on their own", () =>
    Effect.gen(function*() {
      const kept = new KeptValues<string>(1000, () => 0)
      const l = yield* gatedLoad
      const first = yield* Effect.fork(readThrough(kept, "k", l.load, true))
      yield* waitForRuns(l.runs, 1)
      const second = yield* Effect.fork(readThrough(kept, "k", Effect.succeed("own"), true))
      yield* Effect.yieldNow()
      yield* l.fail("store down")
      assert.strictEqual(yield* Effect.flip(Fiber.join(first)), "store down")
      assert.strictEqual(yield* Fiber.join(second), "own")
    }))

  it.live("a caller waits for another's load at most joinWaitMs, then loads on its own", () =>
    Effect.gen(function*() {
      const kept = new KeptValues<string>(1000, () => 0)
      const l = yield* gatedLoad
      const stuck = yield* Effect.fork(readThrough(kept, "k", l.load, true))
      yield* waitForRuns(l.runs, 1)
      const started = performance.now()
      assert.strictEqual(yield* readThrough(kept, "k", Effect.succeed("own"), true), "own")
      assert.isAtLeast(performance.now() - started, joinWaitMs - 5)
      yield* l.finish("late")
      assert.strictEqual(yield* Fiber.join(stuck), "late")
    }))
})
