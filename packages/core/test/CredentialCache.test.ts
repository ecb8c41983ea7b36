import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { CredentialCache, type CredentialHolder } from "../src/Accounts/CredentialCache.js"

const org1: CredentialHolder = { organizationId: "org-1" }
const org2: CredentialHolder = { organizationId: "org-2" }

/** A cache on a hand-set monotonic clock, and a store read that counts its calls. */
const setup = Effect.gen(function*() {
  let now = 0
  const cache = yield* Effect.provide(CredentialCache, CredentialCache.layer(500, () => now))
  let reads = 0
  let row: CredentialHolder | undefined = org1
  const load = Effect.sync(() => {
    reads++
    return row
  })
  return {
    cache,
    load,
    reads: () => reads,
    advance: (ms: number) => (now += ms),
    remove: () => (row = undefined)
  }
})

describe("CredentialCache", () => {
  it.effect("answers from memory for less than its ttl, then reads again", () =>
    Effect.gen(function*() {
      const t = yield* setup
      assert.deepStrictEqual(yield* t.cache.read("api_keys", "k", t.load), org1)
      t.advance(499)
      assert.deepStrictEqual(yield* t.cache.read("api_keys", "k", t.load), org1)
      assert.deepStrictEqual(t.reads(), 1)
      t.remove()
      t.advance(1)
      assert.deepStrictEqual(yield* t.cache.read("api_keys", "k", t.load), undefined)
      assert.deepStrictEqual(t.reads(), 2)
    }))

  it.effect("a forget drops the entry at once; a read under way when it happened is not kept", () =>
    Effect.gen(function*() {
      const t = yield* setup
      assert.deepStrictEqual(yield* t.cache.read("api_keys", "k", t.load), org1)
      t.remove()
      yield* t.cache.forget("api_keys", "k")
      assert.deepStrictEqual(yield* t.cache.read("api_keys", "k", t.load), undefined)

      // A read that saw the row before a delete committed, finishing after its forget.
      const started = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const slow = Effect.zipRight(Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(release)), Effect.succeed(org1))
      const racing = yield* Effect.fork(t.cache.read("platform_integrations", "i", slow))
      yield* Deferred.await(started)
      yield* t.cache.forget("platform_integrations", "i")
      yield* Deferred.succeed(release, undefined)
      assert.deepStrictEqual(yield* Fiber.join(racing), org1)
      assert.deepStrictEqual(yield* t.cache.read("platform_integrations", "i", t.load), undefined)
    }))

  it.effect("forgetting an organization drops its credentials only", () =>
    Effect.gen(function*() {
      const t = yield* setup
      yield* t.cache.read("api_keys", "a", Effect.succeed(org1))
      yield* t.cache.read("api_keys", "b", Effect.succeed(org2))
      yield* t.cache.forgetOrganization("org-1")
      assert.deepStrictEqual(yield* t.cache.read("api_keys", "a", Effect.succeed(undefined)), undefined)
      assert.deepStrictEqual(yield* t.cache.read("api_keys", "b", Effect.succeed(undefined)), org2)
    }))
})
