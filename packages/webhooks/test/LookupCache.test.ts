import { assert, describe, it } from "@effect/vitest"
import { type LookupAddress, makeLookupCache } from "../src/LookupCache.js"

/** A resolver whose answers the test sets, counting the lookups it was asked for. */
const resolver = () => {
  const answers = new Map<string, ReadonlyArray<LookupAddress> | Error>()
  const asked: Array<string> = []
  let clock = 0
  const pending: Array<() => void> = []
  let hold = false
  return {
    answers,
    asked,
    tick: (ms: number) => void (clock += ms),
    now: () => clock,
    holdAnswers: () => void (hold = true),
    release: () => {
      hold = false
      for (const go of pending.splice(0)) go()
    },
    lookup: (host: string) => {
      asked.push(host)
      const answer = answers.get(host) ?? new Error(`ENOTFOUND ${host}`)
      const settle = () => (answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer))
      return hold ? new Promise<ReadonlyArray<LookupAddress>>((resolve) => pending.push(() => resolve(settle()))) : settle()
    }
  }
}

describe("the senders' lookup cache", () => {
  it("answers a name from one lookup until its time runs out, then looks it up again", async () => {
    const r = resolver()
    const cached = makeLookupCache({ ttlMs: 5000, maxNames: 10, lookup: r.lookup, now: r.now })
    r.answers.set("hooks.example.com", [{ address: "93.184.216.34", family: 4 }])
    assert.deepStrictEqual(await cached("hooks.example.com"), [{ address: "93.184.216.34", family: 4 }])
    r.tick(4999)
    await cached("hooks.example.com")
    assert.deepStrictEqual(r.asked, ["hooks.example.com"])

    // The name moved (or was rebound): the next call after the cached answer ends sees it.
    r.answers.set("hooks.example.com", [{ address: "127.0.0.1", family: 4 }])
    r.tick(1)
    assert.deepStrictEqual(await cached("hooks.example.com"), [{ address: "127.0.0.1", family: 4 }])
    assert.deepStrictEqual(r.asked, ["hooks.example.com", "hooks.example.com"])
  })

  it("calls to one name at the same time share a lookup", async () => {
    const r = resolver()
    const cached = makeLookupCache({ ttlMs: 5000, maxNames: 10, lookup: r.lookup, now: r.now })
    r.answers.set("a.example", [{ address: "203.0.113.7", family: 4 }])
    r.holdAnswers()
    const calls = Array.from({ length: 32 }, () => cached("a.example"))
    r.release()
    const answers = await Promise.all(calls)
    assert.strictEqual(r.asked.length, 1)
    for (const a of answers) assert.deepStrictEqual(a, [{ address: "203.0.113.7", family: 4 }])
  })

  it("a failed lookup is answered to its callers, then forgotten", async () => {
    const r = resolver()
    const cached = makeLookupCache({ ttlMs: 5000, maxNames: 10, lookup: r.lookup, now: r.now })
    const first = await cached("down.example").then(() => "resolved", (e: Error) => e.message)
    assert.strictEqual(first, "ENOTFOUND down.example")
    r.answers.set("down.example", [{ address: "198.51.100.1", family: 4 }])
    assert.deepStrictEqual(await cached("down.example"), [{ address: "198.51.100.1", family: 4 }])
    assert.deepStrictEqual(r.asked, ["down.example", "down.example"])
  })

  it("keeps at most maxNames names, dropping the oldest", async () => {
    const r = resolver()
    const cached = makeLookupCache({ ttlMs: 5000, maxNames: 2, lookup: r.lookup, now: r.now })
    for (const host of ["a.example", "b.example", "c.example"]) r.answers.set(host, [{ address: "198.51.100.2", family: 4 }])
    await cached("a.example")
    await cached("b.example")
    await cached("c.example")
    await cached("b.example")
    await cached("c.example")
    await cached("a.example")
    assert.deepStrictEqual(r.asked, ["a.example", "b.example", "c.example", "a.example"])
  })
})
