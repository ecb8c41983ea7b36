import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as fc from "fast-check"
import {
  ipFamily,
  isAllowedHost,
  isIpLiteral,
  isNonPublicAddress,
  isNonPublicHostName,
  normalizeHost,
  parseIPv4,
  parseIPv6
} from "../src/Operations/AddressPolicy.js"
import { checkReceiverUrl } from "../src/Webhooks/Webhooks.js"

// Pure classification only: nothing here opens a socket.

describe("AddressPolicy", () => {
  it("classifies non-public addresses, including mapped and embedded IPv4", () => {
    const nonPublic = [
      // loopback, private, link-local (incl. the metadata endpoint), CGNAT, unspecified, multicast
      "127.0.0.1", "127.255.255.254", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
      "169.254.169.254", "169.254.0.1", "100.64.0.1", "100.127.255.255", "0.0.0.0", "224.0.0.1", "239.1.2.3",
      "255.255.255.255", "192.0.0.8", "198.18.0.1",
      "::", "::1", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0", "febf::1", "fec0::1", "ff02::1",
      "100::1", "2001:db8::1",
      // IPv4-mapped, dotted and hex (what `new URL` turns `[::ffff:127.0.0.1]` into)
      "::ffff:127.0.0.1", "::ffff:7f00:1", "::FFFF:7F00:0001", "0:0:0:0:0:ffff:7f00:1", "::ffff:10.0.0.1",
      "::ffff:a00:1", "::ffff:169.254.169.254", "::ffff:a9fe:a9fe", "::ffff:c0a8:101", "::ffff:0:0",
      // IPv4-translated (SIIT), dotted and hex
      "::ffff:0:7f00:1", "::ffff:0:127.0.0.1", "0:0:0:0:ffff:0:a9fe:a9fe", "::ffff:0:a00:1", "::ffff:0:0:0",
      // deprecated IPv4-compatible, and anything else under ::/64
      "::127.0.0.1", "::7f00:1", "::8.8.8.8", "::1:0:808:808", "::ffff:1:808:808",
      // local-use NAT64, Teredo
      "64:ff9b:1::a9fe:a9fe", "64:ff9b:1:7f00:1::", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001::1",
      // NAT64 and 6to4 of non-public addresses
      "64:ff9b::a9fe:a9fe", "64:ff9b::127.0.0.1", "64:ff9b::a00:1", "2002:7f00:1::1", "2002:a9fe:a9fe::",
      "2002:c0a8:101::1",
      "not-an-ip", "example.com", ""
    ]
    const isPublic = [
      "8.8.8.8", "1.1.1.1", "172.32.0.1", "172.15.255.255", "100.128.0.1", "100.63.255.255",
      "169.255.0.1", "192.169.0.1", "223.255.255.255", "2606:4700:4700::1111", "2a00:1450:4001:82b::200e",
      "::ffff:8.8.8.8", "::ffff:808:808", "64:ff9b::808:808", "64:ff9b::8.8.8.8", "2002:808:808::1",
      "::ffff:0:808:808", "::ffff:0:8.8.8.8", "2001:4860:4860::8888"
    ]
    for (const a of nonPublic) assert.isTrue(isNonPublicAddress(a), a)
    for (const a of isPublic) assert.isFalse(isNonPublicAddress(a), a)
  })

  it("malformed literals are not addresses, so they fail closed", () => {
    const malformed = [
      "127.1", "127.0.0", "127.0.0.1.", "127.0.0.1.5", "256.0.0.1", "8.8.8.08", "010.0.0.1", "0x7f.0.0.1",
      "8.8.8.8 ", " 8.8.8.8", "8.8.8.-1", "1e1.8.8.8", "8.8.8.8/32", "8.8.8.8%eth0",
      ":::1", "1:::2", "1::2::3", ":1:2:3:4:5:6:7", "1:2:3:4:5:6:7:", "2606:4700::1111:", "12345::1",
      "2606:4700:4700:0:0:0:0:1111:1", "1:2:3:4:5:6:7:8::", "::1:2:3:4:5:6:7:8", "2606:g::1",
      "::8.8.8.8:1", "::ffff:8.8.8.08", "::ffff:8.8.8", "2606:4700:4700::1111%", "2606:4700:4700::1111%a b",
      "[2606:4700:4700::1111]", "2606:4700:4700::1111]"
    ]
    for (const a of malformed) {
      assert.isTrue(isNonPublicAddress(a), a)
      assert.isTrue(parseIPv4(a) === null && parseIPv6(a) === null, a)
    }
    assert.isNull(parseIPv4("1.2.3"))
    assert.isNull(parseIPv6("1.2.3.4"))
  })

  it("parses literals strictly into octets and groups", () => {
    assert.deepStrictEqual(parseIPv4("192.168.0.255"), [192, 168, 0, 255])
    assert.deepStrictEqual(parseIPv6("::"), [0, 0, 0, 0, 0, 0, 0, 0])
    assert.deepStrictEqual(parseIPv6("1::"), [1, 0, 0, 0, 0, 0, 0, 0])
    assert.deepStrictEqual(parseIPv6("1:2:3:4:5:6:7::"), [1, 2, 3, 4, 5, 6, 7, 0])
    assert.deepStrictEqual(parseIPv6("::ffff:127.0.0.1"), [0, 0, 0, 0, 0, 0xffff, 0x7f00, 1])
    assert.deepStrictEqual(parseIPv6("1:2:3:4:5:6:1.2.3.4"), [1, 2, 3, 4, 5, 6, 0x102, 0x304])
    assert.deepStrictEqual(parseIPv6("FE80::1%eth0"), [0xfe80, 0, 0, 0, 0, 0, 0, 1])
    assert.deepStrictEqual([ipFamily("8.8.8.8"), ipFamily("[::1]"), ipFamily("::1"), ipFamily("example.com")], [4, 6, 6, 0])
    assert.isTrue(isIpLiteral("[2606:4700:4700::1111]"))
    assert.isFalse(isIpLiteral("localhost"))
  })

  it("every IPv4-mapped, compatible, NAT64 and 6to4 form answers as its IPv4 address does", () => {
    const hex = (hi: number, lo: number) => ((hi << 8) | lo).toString(16)
    fc.assert(
      fc.property(fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)), ([a, b, c, d]) => {
        const v4 = `${a}.${b}.${c}.${d}`
        const expected = isNonPublicAddress(v4)
        const [hi, lo] = [hex(a, b), hex(c, d)]
        for (const form of [`::ffff:${v4}`, `::ffff:${hi}:${lo}`, `0:0:0:0:0:ffff:${hi}:${lo}`, `64:ff9b::${v4}`,
          `64:ff9b::${hi}:${lo}`, `2002:${hi}:${lo}::1`, `::ffff:0:${v4}`, `::ffff:0:${hi}:${lo}`, `0:0:0:0:ffff:0:${hi}:${lo}`]) {
          if (isNonPublicAddress(form) !== expected) return false
        }
        // The deprecated IPv4-compatible form ::a.b.c.d is refused whatever it embeds.
        return isNonPublicAddress(`::${v4}`) && isNonPublicAddress(`::${hi}:${lo}`)
      }),
      { numRuns: 2000 }
    )
  })

  it("every non-public IPv4 range stays non-public in its mapped forms (sampled within the range)", () => {
    const ranges: ReadonlyArray<[number, number, number]> = [
      [127, 0, 8], [10, 0, 8], [172, 16, 12], [192, 168, 16], [169, 254, 16], [100, 64, 10], [0, 0, 8], [224, 0, 4]
    ]
    for (const [a, b, bits] of ranges) {
      const base = ((a << 24) | (b << 16)) >>> 0
      fc.assert(
        fc.property(fc.nat(2 ** (32 - bits) - 1), (offset) => {
          const n = (base + offset) >>> 0
          const octets = [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]
          const v4 = octets.join(".")
          const hi = ((octets[0]! << 8) | octets[1]!).toString(16)
          const lo = ((octets[2]! << 8) | octets[3]!).toString(16)
          return isNonPublicAddress(v4) && isNonPublicAddress(`::ffff:${v4}`) && isNonPublicAddress(`::ffff:${hi}:${lo}`) &&
            isNonPublicAddress(`64:ff9b::${hi}:${lo}`) && isNonPublicAddress(`2002:${hi}:${lo}::`) &&
            isNonPublicAddress(`::ffff:0:${hi}:${lo}`)
        }),
        { numRuns: 200 }
      )
    }
  })

  it("matches allow-listed hostnames exactly, ignoring case and IPv6 brackets", () => {
    assert.isTrue(isAllowedHost("LOCALHOST", ["localhost"]))
    assert.isTrue(isAllowedHost("[::1]", ["::1"]))
    assert.isTrue(isAllowedHost("::1", ["[::1]"]))
    assert.isTrue(isAllowedHost("localhost", [" localhost "]))
    assert.isFalse(isAllowedHost("evil.localhost", ["localhost"]))
    assert.isFalse(isAllowedHost("localhost", []))
    assert.strictEqual(normalizeHost("[FE80::1]"), "fe80::1")
  })

  it("names: localhost and *.localhost are non-public by name; literals follow the address rule; other names wait for resolution", () => {
    for (const h of ["localhost", "LOCALHOST", "localhost.", "api.localhost", "a.b.localhost.", "127.0.0.1", "[::1]",
      "[::ffff:7f00:1]", "[::ffff:a9fe:a9fe]", "[64:ff9b::a9fe:a9fe]", "[2002:a00:1::]", "169.254.169.254"]) {
      assert.isTrue(isNonPublicHostName(h), h)
    }
    for (const h of ["example.com", "localhost.example.com", "notlocalhost", "8.8.8.8", "[2606:4700:4700::1111]"]) {
      assert.isFalse(isNonPublicHostName(h), h)
    }
  })

  it.effect("checkReceiverUrl refuses non-public literals in every form unless allow-listed", () =>
    Effect.gen(function*() {
      const refused = [
        "https://[::ffff:7f00:1]/", "https://[::ffff:127.0.0.1]/", "https://[::ffff:a9fe:a9fe]/",
        "https://[::ffff:0:7f00:1]/", "https://[::ffff:0:127.0.0.1]/", "https://[::ffff:0:a9fe:a9fe]/",
        "https://[::ffff:169.254.169.254]/", "https://[::ffff:10.0.0.1]/", "https://[64:ff9b::a9fe:a9fe]/",
        "https://[2002:7f00:1::1]/", "https://[::1]/", "https://[fe80::1]/", "https://[fd00::1]/",
        "https://10.0.0.1/", "https://169.254.169.254/latest/meta-data", "https://100.64.0.1/", "https://0.0.0.0/",
        "https://localhost/", "https://foo.localhost/", "https://0x7f000001/", "https://2130706433/", "https://127.1/"
      ]
      for (const url of refused) {
        const r = yield* Effect.either(checkReceiverUrl(url, "url", []))
        assert.isTrue(Either.isLeft(r), url)
        if (Either.isLeft(r)) {
          assert.strictEqual(r.left.message, "Invalid url: must not point at a private, loopback or link-local address", url)
        }
      }
      // The allow-list still opens the door, for the exact host (the normalized form as `new URL` writes it).
      assert.isTrue(Either.isRight(yield* Effect.either(checkReceiverUrl("https://[::ffff:7f00:1]/", "url", ["::ffff:7f00:1"]))))
      assert.isTrue(Either.isRight(yield* Effect.either(checkReceiverUrl("http://127.0.0.1:8080/", "url", ["127.0.0.1"]))))
      for (const url of ["https://example.com/hook", "https://8.8.8.8/", "https://[2606:4700:4700::1111]/"]) {
        assert.isTrue(Either.isRight(yield* Effect.either(checkReceiverUrl(url, "url", []))), url)
      }
      const http = yield* Effect.either(checkReceiverUrl("http://example.com/", "url", []))
      assert.isTrue(
        Either.isLeft(http) &&
          http.left.message === "Invalid url: plain http is only allowed for hosts listed in WEBHOOK_ALLOW_HOSTS; use https"
      )
      const creds = yield* Effect.either(checkReceiverUrl("https://u:p@example.com/", "url", []))
      assert.isTrue(Either.isLeft(creds) && creds.left.message === "Invalid url: must not carry credentials")
    }))
})
