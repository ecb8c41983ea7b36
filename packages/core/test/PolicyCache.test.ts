import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { NoticeVersions } from "../src/Notices/NoticeVersions.js"
import { ConsentPolicies } from "../src/Consents/PolicyCache.js"

/** The kept policies and notice versions on a hand-set clock, over values a test changes, read by loads that count their calls. */
const setup = Effect.gen(function*() {
  let now = 0
  const policies = yield* Effect.provide(ConsentPolicies, ConsentPolicies.layer(1000, () => now))
  const versions = yield* Effect.provide(NoticeVersions, NoticeVersions.layer(1000, () => now))
  let reads = 0
  let stored: ReadonlyArray<string> = ["gdpr"]
  let latest: number | undefined = 1
  return {
    policies,
    versions,
    loadPolicies: Effect.sync(() => {
      reads++
      return stored
    }),
    loadLatest: Effect.sync(() => {
      reads++
      return latest
    }),
    reads: () => reads,
    advance: (ms: number) => (now += ms),
    store: (regulations: ReadonlyArray<string>) => (stored = regulations),
    approve: (version: number) => (latest = version)
  }
})

describe("kept consent policies and notice versions", () => {
  it.effect("a policy changed through another server is seen within a second; through this one at once, for its organization only", () =>
    Effect.gen(function*() {
      const t = yield* setup
      assert.deepStrictEqual(yield* t.policies.read("org-1", t.loadPolicies), ["gdpr"])
      t.store(["gdpr", "ccpa"])
      t.advance(999)
      assert.deepStrictEqual(yield* t.policies.read("org-1", t.loadPolicies), ["gdpr"])
      assert.strictEqual(t.reads(), 1)
      t.advance(1)
      assert.deepStrictEqual(yield* t.policies.read("org-1", t.loadPolicies), ["gdpr", "ccpa"])
      yield* t.policies.read("org-2", Effect.succeed(["lgpd"]))
      t.store([])
      yield* t.policies.forget("org-1")
      assert.deepStrictEqual(yield* t.policies.read("org-1", t.loadPolicies), [])
      assert.deepStrictEqual(yield* t.policies.read("org-2", Effect.succeed<ReadonlyArray<string>>([])), ["lgpd"])
    }))

  it.effect("a text's newest approved version is read again once its copy is dropped", () =>
    Effect.gen(function*() {
      const t = yield* setup
      assert.strictEqual(yield* t.versions.latest("text-1", t.loadLatest), 1)
      t.approve(2)
      assert.strictEqual(yield* t.versions.latest("text-1", t.loadLatest), 1)
      yield* t.versions.forgetText("text-1")
      assert.strictEqual(yield* t.versions.latest("text-1", t.loadLatest), 2)
      t.approve(3)
      t.advance(1000)
      assert.strictEqual(yield* t.versions.latest("text-1", t.loadLatest), 3)
    }))
})
