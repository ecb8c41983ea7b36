import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { OriginCache } from "../src/Properties/OriginCache.js"
import { originHost } from "../src/Consents/Origins.js"

describe("originHost", () => {
  it("an https origin names its host, with the port it gives", () => {
    assert.strictEqual(originHost("https://shop.example.com", false), "shop.example.com")
    assert.strictEqual(originHost("https://Shop.Example.com", false), "shop.example.com")
    assert.strictEqual(originHost("https://shop.example.com:8443", false), "shop.example.com:8443")
    // The default port is no port, as a website's URL says it.
    assert.strictEqual(originHost("https://shop.example.com:443", false), "shop.example.com")
  })

  it("plain http only for loopback hosts, and only where the server serves plain HTTP", () => {
    assert.strictEqual(originHost("http://localhost:5173", false), undefined)
    assert.strictEqual(originHost("http://localhost:5173", true), "localhost:5173")
    assert.strictEqual(originHost("http://127.0.0.1:8080", true), "127.0.0.1:8080")
    assert.strictEqual(originHost("http://[::1]:8080", true), "[::1]:8080")
    assert.strictEqual(originHost("http://shop.example.com", true), undefined)
  })

  it("what is not an origin names nothing", () => {
    for (const bad of ["null", "", "shop.example.com", "https://shop.example.com/path", "ftp://shop.example.com", "https://user@shop.example.com"]) {
      assert.strictEqual(originHost(bad, true), undefined, bad)
    }
  })
})

describe("OriginCache", () => {
  it.effect("keeps an organization's hosts until they age or are forgotten; a read under way when forgotten is not kept", () =>
    Effect.gen(function*() {
      let now = 0
      let loads = 0
      const cache = yield* Effect.provide(OriginCache, OriginCache.layer(10_000, () => now))
      const load = (hosts: Array<string>) => Effect.sync(() => (loads++, new Set(hosts) as ReadonlySet<string>))
      assert.deepStrictEqual([...(yield* cache.read("a", load(["a.example"])))], ["a.example"])
      assert.deepStrictEqual([...(yield* cache.read("a", load(["changed.example"])))], ["a.example"])
      assert.strictEqual(loads, 1)
      now = 10_000
      assert.deepStrictEqual([...(yield* cache.read("a", load(["later.example"])))], ["later.example"])
      yield* cache.forget("a")
      assert.deepStrictEqual([...(yield* cache.read("a", load(["new.example"])))], ["new.example"])
      // A forget while a read is loading: that read's answer is not kept.
      yield* cache.forget("a")
      const racing = cache.read("a", Effect.zipRight(cache.forget("a"), load(["stale.example"])))
      assert.deepStrictEqual([...(yield* racing)], ["stale.example"])
      assert.deepStrictEqual([...(yield* cache.read("a", load(["fresh.example"])))], ["fresh.example"])
    }))
})
