import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { limitingKey } from "../src/Operations/ClientAddress.js"

describe("limitingKey", () => {
  it.each([
    ["192.0.2.1", "192.0.2.1"],
    [" 192.0.2.1 ", "192.0.2.1"],
    ["192.0.2.1:4711", "192.0.2.1"],
    ["::ffff:192.0.2.1", "192.0.2.1"],
    ["::FFFF:c000:0201", "192.0.2.1"],
    ["0:0:0:0:0:ffff:192.0.2.1", "192.0.2.1"],
    ["[::ffff:192.0.2.1]:80", "192.0.2.1"],
    ["2001:db8:1:2::1", "2001:db8:1:2::/64"],
    ["2001:0DB8:0001:0002:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"],
    ["[2001:db8:1:2::7]:443", "2001:db8:1:2::/64"],
    ["fe80::1%eth0", "fe80:0:0:0::/64"],
    ["2001:db8::", "2001:db8:0:0::/64"],
    ["::1", "0:0:0:0::/64"],
    ["::", "0:0:0:0::/64"],
    // An IPv4 address inside another IPv6 prefix (NAT64) is an IPv6 address like any other.
    ["64:ff9b::192.0.2.1", "64:ff9b:0:0::/64"],
    ["unknown", "unknown"],
    ["Not-An-Address", "not-an-address"]
  ])("%s counts as %s", (address, key) => {
    expect(limitingKey(address)).toBe(key)
  })

  const group = fc.integer({ min: 0, max: 0xffff })
  const groups = fc.array(group, { minLength: 8, maxLength: 8 })
  /** The address written out in full, with leading zeros, in either case. */
  const full = (g: ReadonlyArray<number>, upper: boolean) => {
    const text = g.map((n) => n.toString(16).padStart(4, "0")).join(":")
    return upper ? text.toUpperCase() : text
  }
  /** The address with its longest run of zero groups written `::`, as Node reports it. */
  const compressed = (g: ReadonlyArray<number>) => {
    let best = [-1, 0]
    for (let i = 0; i < 8;) {
      if (g[i] !== 0) {
        i++
        continue
      }
      let j = i
      while (j < 8 && g[j] === 0) j++
      if (j - i > best[1]! && j - i > 1) best = [i, j - i]
      i = j
    }
    const hex = g.map((n) => n.toString(16))
    if (best[0]! < 0) return hex.join(":")
    return `${hex.slice(0, best[0]).join(":")}::${hex.slice(best[0]! + best[1]!).join(":")}`
  }
  const isMapped = (g: ReadonlyArray<number>) => g.slice(0, 5).every((n) => n === 0) && g[5] === 0xffff
  const notMapped = groups.filter((g) => !isMapped(g))

  it("every way of writing an IPv6 address counts alike", () => {
    fc.assert(fc.property(notMapped, fc.boolean(), (g, upper) => {
      expect(limitingKey(full(g, upper))).toBe(limitingKey(compressed(g)))
      expect(limitingKey(`[${compressed(g)}]:8080`)).toBe(limitingKey(compressed(g)))
    }))
  })

  it("two IPv6 addresses count alike exactly when their first 64 bits are the same", () => {
    fc.assert(fc.property(notMapped, notMapped, (a, b) => {
      const same = a.slice(0, 4).every((n, i) => n === b[i])
      expect(limitingKey(compressed(a)) === limitingKey(compressed(b))).toBe(same)
      // The last 64 bits never matter.
      const mixed = [...a.slice(0, 4), ...b.slice(4)]
      if (!isMapped(mixed)) expect(limitingKey(compressed(mixed))).toBe(limitingKey(compressed(a)))
    }))
  })

  it("an IPv4-mapped IPv6 address counts as its IPv4 address", () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 4, maxLength: 4 }), (octets) => {
      const v4 = octets.join(".")
      expect(limitingKey(`::ffff:${v4}`)).toBe(v4)
      expect(limitingKey(v4)).toBe(v4)
    }))
  })
})
