import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { Ids } from "../src/Engine/Ports.js"
import { uuidV7 } from "../src/Engine/Random.js"

describe("ids", () => {
  it("uuidV7: a version 7, RFC 9562 variant UUID whose first 48 bits are the milliseconds", () => {
    const ms = Date.UTC(2026, 10, 23, 5, 0, 0, 123)
    const id = uuidV7(ms)
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(parseInt(id.replace(/-/g, "").slice(0, 12), 16)).toBe(ms)
  })

  it("uuidV7: later milliseconds sort later, and ids of one millisecond differ", () => {
    const ids = Array.from({ length: 1000 }, (_, i) => uuidV7(1_700_000_000_000 + Math.floor(i / 10)))
    expect(new Set(ids).size).toBe(1000)
    for (let i = 10; i < ids.length; i += 10) expect(ids[i]! > ids[i - 1]!).toBe(true)
  })

  it.effect("Ids.Live answers distinct UUIDs in creation order across milliseconds", () =>
    Effect.gen(function*() {
      const ids = yield* Ids
      const first = yield* ids.next
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 3)))
      const second = yield* ids.next
      expect(first).not.toBe(second)
      expect(second > first).toBe(true)
    }).pipe(Effect.provide(Ids.Live)))
})
