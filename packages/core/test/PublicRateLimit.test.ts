import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import { PublicRateLimit } from "../src/Consents/PublicRateLimit.js"
import { TooManyRequests } from "../src/Domain/Errors.js"

const limiter = <A, E>(f: (l: PublicRateLimit["Type"]) => Effect.Effect<A, E>, maxKeys?: number) =>
  Effect.flatMap(PublicRateLimit.make(maxKeys), f)

describe("PublicRateLimit", () => {
  it.effect("n a minute at once, then 429 with the seconds until one more fits; it refills over the minute", () =>
    limiter((l) =>
      Effect.gen(function*() {
        const key = [{ key: "key:org", perMinute: 6 }]
        for (let i = 0; i < 6; i++) yield* l.take(key)
        const refused = yield* Effect.flip(l.take(key))
        assert.instanceOf(refused, TooManyRequests)
        // One write every 10 s refills: the next fits in 10 s.
        assert.strictEqual(refused.retryAfterSeconds, 10)
        yield* TestClock.adjust("9999 millis")
        assert.instanceOf(yield* Effect.flip(l.take(key)), TooManyRequests)
        yield* TestClock.adjust("1 millis")
        yield* l.take(key)
        assert.instanceOf(yield* Effect.flip(l.take(key)), TooManyRequests)
        // A quiet minute fills the bucket again, no more.
        yield* TestClock.adjust("5 minutes")
        for (let i = 0; i < 6; i++) yield* l.take(key)
        assert.instanceOf(yield* Effect.flip(l.take(key)), TooManyRequests)
      })))

  it.effect("every limit counts; a refused write counts against none of them", () =>
    limiter((l) =>
      Effect.gen(function*() {
        const address = { key: "address:192.0.2.1", perMinute: 2 }
        const keyA = { key: "key:a", perMinute: 3 }
        yield* l.take([keyA, address])
        yield* l.take([keyA, address])
        // The address is spent: refused, and key:a keeps its last write for another address.
        assert.instanceOf(yield* Effect.flip(l.take([keyA, address])), TooManyRequests)
        yield* l.take([keyA, { key: "address:192.0.2.2", perMinute: 2 }])
        assert.instanceOf(yield* Effect.flip(l.take([keyA, { key: "address:192.0.2.3", perMinute: 2 }])), TooManyRequests)
        // Another key and address are their own.
        yield* l.take([{ key: "key:b", perMinute: 3 }, { key: "address:192.0.2.4", perMinute: 2 }])
      })))

  it.effect("Retry-After is at least one second", () =>
    limiter((l) =>
      Effect.gen(function*() {
        const fast = [{ key: "key:fast", perMinute: 60_000 }]
        for (let i = 0; i < 60_000; i++) yield* l.take(fast)
        assert.strictEqual((yield* Effect.flip(l.take(fast))).retryAfterSeconds, 1)
      })))

  it.effect("a full table never forgets a busy client's bucket: made-up addresses cannot buy it a new allowance", () =>
    limiter((l) =>
      Effect.gen(function*() {
        const busy = [{ key: "address:192.0.2.1", perMinute: 3 }]
        for (let i = 0; i < 3; i++) yield* l.take(busy)
        assert.instanceOf(yield* Effect.flip(l.take(busy)), TooManyRequests)
        // Many times the table's size of new addresses, one write each, while the busy one waits.
        for (let round = 0; round < 5; round++) {
          for (let i = 0; i < 100; i++) yield* l.take([{ key: `address:198.51.100.${round}.${i}`, perMinute: 60 }])
          assert.instanceOf(yield* Effect.flip(l.take(busy)), TooManyRequests, `round ${round}`)
          yield* TestClock.adjust("100 millis")
        }
        // It refills with time alone: a write every 20 s.
        yield* TestClock.adjust("20 seconds")
        yield* l.take(busy)
        assert.instanceOf(yield* Effect.flip(l.take(busy)), TooManyRequests)
      }), 50))

  it.effect("a full table keeps the buckets furthest from full, and forgets those full soonest", () =>
    limiter((l) =>
      Effect.gen(function*() {
        const limit = (key: string) => [{ key: `address:${key}`, perMinute: 20 }]
        // Ten addresses, the i-th spent by i + 1 writes of its 20.
        for (let i = 0; i < 10; i++) {
          for (let n = 0; n <= i; n++) yield* l.take(limit(String(i)))
        }
        // The table's eleventh key fills it: the next write makes room by forgetting the least spent.
        yield* l.take(limit("new"))
        // The least spent (one write) was forgotten: its whole allowance is back.
        for (let n = 0; n < 20; n++) yield* l.take(limit("0"))
        assert.instanceOf(yield* Effect.flip(l.take(limit("0"))), TooManyRequests)
        // The most spent keeps what it spent: ten of its 20 left.
        for (let n = 0; n < 10; n++) yield* l.take(limit("9"))
        assert.instanceOf(yield* Effect.flip(l.take(limit("9"))), TooManyRequests)
      }), 11))
})
