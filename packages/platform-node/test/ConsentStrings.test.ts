import { ConsentStringDecoder, type GppDecoding, type TcDecoding } from "@cmp/core"
import {
  GPP_TCFEU_USNAT,
  GPP_USP_USNAT,
  GPP_WITH_UNKNOWN_SECTION,
  TC_STRING
} from "@cmp/test-support/consent-strings"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import fc from "fast-check"
import { DEFAULT_DECODE_TIME_LIMIT_MS, makeConsentStringDecoder } from "../src/index.js"

/** The consent string decoder through the port of core it implements. */

const decoder = makeConsentStringDecoder()
const gpp = (s: string): GppDecoding => Effect.runSync(decoder.decodeGpp(s))
const tc = (s: string): TcDecoding => Effect.runSync(decoder.decodeTc(s))

const BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
const base64url = (bits: string) => {
  let padded = bits
  while (padded.length % 6 !== 0) padded += "0"
  let out = ""
  for (let i = 0; i < padded.length; i += 6) out += BASE64URL[parseInt(padded.slice(i, i + 6), 2)]
  return out
}
const int = (n: number, width: number) => n.toString(2).padStart(width, "0")
const fibonacci = (n: number) => {
  const fib = [1, 2]
  while (fib.at(-1)! + fib.at(-2)! <= n) fib.push(fib.at(-1)! + fib.at(-2)!)
  let bits = ""
  let rest = n
  for (let i = fib.length - 1; i >= 0; i--) {
    if (fib[i]! <= rest) {
      bits = "1" + bits
      rest -= fib[i]!
    } else bits = "0" + bits
  }
  return bits.replace(/^0+/, "").split("").reverse().join("") + "1"
}

/** A TCF v2 core segment whose vendor consents are `entries` ranges over every vendor id. */
const rangeBomb = (entries: number) => {
  const core = int(2, 6) + int(1, 36) + int(1, 36) + int(2, 12) + int(1, 12) + int(1, 6) + int(0, 12) + int(1, 12) +
    int(4, 6) + "1" + "0" + int(0, 12) + "1".repeat(24) + "0".repeat(24) + "0" + int(0, 12)
  let vendors = int(65535, 16) + "1" + int(entries, 12)
  for (let i = 0; i < entries; i++) vendors += "1" + int(1, 16) + int(65535, 16)
  return base64url(core + vendors + int(0, 16) + "0" + int(0, 12))
}

describe("TC strings (@iabtechlabtcf/core)", () => {
  it("a TC string made by the library decodes; made-up and version 1 strings do not, with the reason", () => {
    expect(tc(TC_STRING)).toStrictEqual({ _tag: "Decoded" })
    for (const made of ["CQ", "CP", "not a tc string", "CPXxRfAPXxRfAAfKABENB-CgAAAAAAAAAAYgAAAAAAAA".slice(0, 20)]) {
      const r = tc(made)
      expect(r._tag).toBe("Undecodable")
      if (r._tag === "Undecodable") expect(r.reason.length).toBeGreaterThan(0)
    }
    // the same fields under version 1
    const v1 = base64url(int(1, 6) + "0".repeat(400))
    expect(tc(v1)._tag).toBe("Undecodable")
  })

  it("a crafted string that would keep the library busy for seconds is refused within the time limit", () => {
    const r = tc(rangeBomb(4095))
    expect(r).toStrictEqual({ _tag: "Undecodable", reason: `it does not decode within ${DEFAULT_DECODE_TIME_LIMIT_MS} ms` })
    // and the decoder works on afterwards
    expect(tc(TC_STRING)._tag).toBe("Decoded")
  })
})

describe("GPP strings (@iabgpp/cmpapi)", () => {
  it("answers the header's section ids, in the string's order", () => {
    expect(gpp(GPP_USP_USNAT)).toStrictEqual({ _tag: "Decoded", sectionIds: [6, 7] })
    expect(gpp(GPP_TCFEU_USNAT)).toStrictEqual({ _tag: "Decoded", sectionIds: [2, 7] })
    expect(gpp("DBAA")).toStrictEqual({ _tag: "Decoded", sectionIds: [] })
  })

  it("keeps a section the library does not know, unread, and still decodes the others", () => {
    expect(gpp(GPP_WITH_UNKNOWN_SECTION)).toStrictEqual({ _tag: "Decoded", sectionIds: [7, 30] })
    // the known section is decoded: a broken US national section is refused even beside an unknown one
    const r = gpp("DBACLIY~!!~BVVVVVA")
    expect(r._tag).toBe("Undecodable")
    if (r._tag === "Undecodable") expect(r.reason).toMatch(/^section 7 \(usnat\) does not decode/)
  })

  it("refuses, saying why: no header, a header of another type or version, a count that does not match, an empty or broken section", () => {
    const reasons = (s: string) => {
      const r = gpp(s)
      return r._tag === "Undecodable" ? r.reason : "decoded"
    }
    expect(reasons("")).toMatch(/GPP header/)
    expect(reasons(TC_STRING)).toMatch(/GPP header/)
    expect(reasons("DBABzw~1YNN")).toBe("the header lists more sections than the string's 1")
    expect(reasons("DBABzw~1YNN~CUAAAAAAAACA.QA~1YNN")).toBe("the header lists 2 sections and the string has 3")
    expect(reasons("DBABzw~~CUAAAAAAAACA.QA")).toBe("section 6 is empty")
    expect(reasons("D*AB~x")).toBe("the header is not base64url")
    expect(reasons(base64url(int(4, 6) + int(1, 6) + int(0, 12)))).toBe("it does not start with a GPP header")
    expect(reasons(base64url(int(3, 6) + int(2, 6) + int(0, 12)))).toBe("the header has version 2, not 1")
    expect(reasons("DBABMA~C!" + "A".repeat(30))).toMatch(/^section 2 \(tcfeuv2\) does not decode/)
  })

  it("a header claiming billions of sections costs nothing", () => {
    // 100 ranges, each over about 100 million ids
    let bits = int(3, 6) + int(1, 6) + int(100, 12)
    for (let i = 0; i < 100; i++) bits += "1" + fibonacci(1) + fibonacci(100_000_000)
    const r = gpp(base64url(bits) + "~1YNN")
    expect(r).toStrictEqual({ _tag: "Undecodable", reason: "the header lists more sections than the string's 1" })
    // and 4,095 of them make a header no GPP string has
    let more = int(3, 6) + int(1, 6) + int(4095, 12)
    for (let i = 0; i < 4095; i++) more += "1" + fibonacci(1) + fibonacci(100_000_000)
    expect(gpp(base64url(more) + "~1YNN")).toStrictEqual({ _tag: "Undecodable", reason: "the header is longer than 1024 characters" })
  })

  it("a section that would keep the library busy is refused within the time limit", () => {
    const r = gpp("DBABMA~" + rangeBomb(4095))
    expect(r._tag).toBe("Undecodable")
  })

  it("a string of 65,536 characters is answered", () => {
    const long = "DBABzw~1YNN~" + "CUAAAAAAAACA." + "A".repeat(65_536 - 25)
    expect(long.length).toBe(65_536)
    expect(["Decoded", "Undecodable"]).toContain(gpp(long)._tag)
    expect(["Decoded", "Undecodable"]).toContain(tc("C" + "A".repeat(65_535))._tag)
  })

  it("never throws on random input: any text, base64url with separators, mutations of real strings", () => {
    const alphabet = fc.constantFrom(...(BASE64URL + "~.").split(""))
    const gppLike = fc.array(alphabet, { maxLength: 200 }).map((cs) => "DB" + cs.join(""))
    const mutated = fc.tuple(fc.constantFrom(GPP_USP_USNAT, GPP_TCFEU_USNAT, GPP_WITH_UNKNOWN_SECTION, TC_STRING), fc.nat(), alphabet)
      .map(([s, at, c]) => s.slice(0, at % s.length) + c + s.slice(at % s.length + 1))
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: "binary", maxLength: 50 }), gppLike, mutated), (s) => {
        expect(["Decoded", "Undecodable"]).toContain(gpp(s)._tag)
        expect(["Decoded", "Undecodable"]).toContain(tc(s)._tag)
        const r = gpp(s)
        if (r._tag === "Decoded") expect(r.sectionIds.length).toBe(s.split("~").length - 1)
      }),
      { numRuns: 200 }
    )
  }, 120_000)

  it("is a layer of the port", () =>
    Effect.gen(function*() {
      const port = yield* ConsentStringDecoder
      expect(yield* port.decodeGpp(GPP_USP_USNAT)).toStrictEqual({ _tag: "Decoded", sectionIds: [6, 7] })
    }).pipe(Effect.provideService(ConsentStringDecoder, decoder), Effect.runPromise))
})
