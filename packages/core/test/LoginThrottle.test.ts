import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import { TooManyRequests } from "../src/Domain/Errors.js"
import { addressKeys, LoginThrottle, throttled } from "../src/Accounts/LoginThrottle.js"

const run = <A, E>(f: (t: LoginThrottle["Type"]) => Effect.Effect<A, E>) =>
  Effect.flatMap(LoginThrottle.make({ freeFailures: 3, maxDelaySeconds: 8, forgetAfterSeconds: 60 }), f)

describe("LoginThrottle", () => {
  it.effect("free failures pass; then each attempt waits 1 s, doubling, capped", () =>
    run((t) =>
      Effect.gen(function*() {
        const k = ["key:a"]
        for (let i = 0; i < 2; i++) yield* t.failed(k)
        yield* t.check(k)
        yield* t.failed(k) // third failure: blocked for 1 s
        const e1 = yield* Effect.flip(t.check(k))
        assert.instanceOf(e1, TooManyRequests)
        assert.strictEqual(e1.retryAfterSeconds, 1)
        yield* TestClock.adjust("1001 millis")
        yield* t.check(k)
        yield* t.failed(k) // 4th: 2 s
        assert.strictEqual((yield* Effect.flip(t.check(k))).retryAfterSeconds, 2)
        for (let i = 0; i < 5; i++) yield* t.failed(k)
        // 2^6 would be 64 s: capped at 8.
        assert.strictEqual((yield* Effect.flip(t.check(k))).retryAfterSeconds, 8)
        // Never locked out for ever: after the cap the owner may try again.
        yield* TestClock.adjust("8001 millis")
        yield* t.check(k)
      })))

  it.effect("a success clears the key; another key or address is unaffected", () =>
    run((t) =>
      Effect.gen(function*() {
        for (let i = 0; i < 3; i++) yield* t.failed(["key:a", "addr:1.2.3.4"])
        assert.instanceOf(yield* Effect.flip(t.check(["key:b", "addr:1.2.3.4"])), TooManyRequests)
        yield* t.check(["key:b", "addr:5.6.7.8"])
        yield* TestClock.adjust("2 seconds")
        yield* t.succeeded(["key:a"])
        yield* t.failed(["key:a"])
        yield* t.check(["key:a"])
      })))

  it.effect("made-up keys past the table's size never free a blocked key: the least blocked are forgotten first", () =>
    Effect.gen(function*() {
      const t = yield* LoginThrottle.make({ freeFailures: 3, maxDelaySeconds: 8, forgetAfterSeconds: 60 })
      for (let i = 0; i < 4; i++) yield* t.failed(["key:victim"])
      // An attacker's own addresses, each failing once: more than the table holds.
      for (let i = 0; i < 100_001; i++) yield* t.failed([`addr:session:10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`])
      assert.instanceOf(yield* Effect.flip(t.check(["key:victim"])), TooManyRequests)
    }))

  it.effect("failures are forgotten after a quiet period", () =>
    run((t) =>
      Effect.gen(function*() {
        for (let i = 0; i < 2; i++) yield* t.failed(["key:a"])
        yield* TestClock.adjust("61 seconds")
        yield* t.failed(["key:a"])
        yield* t.check(["key:a"])
      })))

  it.effect("throttled: a success clears the credential's key, never the address's", () =>
    Effect.gen(function*() {
      const throttle = yield* LoginThrottle.make({ freeFailures: 3, maxDelaySeconds: 8, forgetAfterSeconds: 60 })
      const address = addressKeys("session", "10.0.0.1")
      const attempt = (key: string, ok: boolean) =>
        Effect.either(
          throttled([key, ...address], ok ? Effect.void : Effect.fail("wrong")).pipe(Effect.provideService(LoginThrottle, throttle))
        )
      yield* attempt("key:guess-1", false)
      yield* attempt("key:guess-2", false)
      yield* attempt("key:mine", true)
      yield* attempt("key:guess-3", false)
      // The address's third failure blocks it, the guesser's own success in between notwithstanding.
      assert.instanceOf(yield* Effect.flip(throttle.check(address)), TooManyRequests)
      // The credential that succeeded starts afresh elsewhere.
      yield* throttle.check(["key:mine"])
    }))
})
