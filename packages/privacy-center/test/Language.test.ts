import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { chooseLanguage, lookupRange, parseAcceptLanguage } from "../src/index.js"

const subtag = fc.stringMatching(/^[a-z]{2}$/)
const region = fc.stringMatching(/^[A-Z]{2}$/)
const tag = fc.oneof(subtag, fc.tuple(subtag, region).map(([l, r]) => `${l}-${r}`))
const tags = fc.uniqueArray(tag, { maxLength: 6, selector: (t) => t.toLowerCase() })
const quality = fc.integer({ min: 0, max: 1000 }).map((n) => n / 1000)
const weighted = fc.array(fc.tuple(fc.oneof(tag, fc.constant("*")), quality), { maxLength: 8 })
const header = (ranges: ReadonlyArray<readonly [string, number]>) => ranges.map(([r, q]) => `${r};q=${q}`).join(", ")
const shuffleCase = (s: string, flips: ReadonlyArray<boolean>) =>
  [...s].map((c, i) => (flips[i % Math.max(flips.length, 1)] ? c.toUpperCase() : c.toLowerCase())).join("")

describe("parseAcceptLanguage", () => {
  it("orders ranges by quality, the header's order among equals, without those of quality 0", () => {
    expect(parseAcceptLanguage("de;q=0.5, fr-CH, fr;q=0.9, en;q=0.9, it;q=0, *;q=0.1")).toEqual([
      { range: "fr-CH", q: 1 },
      { range: "fr", q: 0.9 },
      { range: "en", q: 0.9 },
      { range: "de", q: 0.5 },
      { range: "*", q: 0.1 }
    ])
  })

  it("leaves out malformed entries and never throws", () => {
    expect(parseAcceptLanguage("fr;q=2, <script>, en;q=abc, de;level=1, es ; q=0.3")).toEqual([{ range: "es", q: 0.3 }])
    fc.assert(fc.property(fc.string(), (s) => Array.isArray(parseAcceptLanguage(s))))
  })

  it("is sorted by descending quality, every quality in (0, 1]", () => {
    fc.assert(
      fc.property(weighted, (ranges) => {
        const parsed = parseAcceptLanguage(header(ranges))
        expect(parsed.length).toBe(ranges.filter(([, q]) => q > 0).length)
        for (let i = 1; i < parsed.length; i++) expect(parsed[i - 1].q).toBeGreaterThanOrEqual(parsed[i].q)
        for (const { q } of parsed) expect(q > 0 && q <= 1).toBe(true)
      })
    )
  })
})

describe("lookupRange (RFC 4647 lookup)", () => {
  it("truncates the range, never extends it, and compares without case", () => {
    expect(lookupRange("fr-CA", ["en", "fr"])).toBe("fr")
    expect(lookupRange("FR-ca", ["en", "fr-CA"])).toBe("fr-CA")
    expect(lookupRange("fr", ["fr-CA"])).toBeUndefined()
    expect(lookupRange("zh-Hant-CN-x-private1", ["zh-Hant"])).toBe("zh-Hant")
    expect(lookupRange("*", ["en"])).toBeUndefined()
  })

  it("finds a listed tag in any case and any extension of it", () => {
    fc.assert(
      fc.property(tags.filter((t) => t.length > 0), fc.nat(), fc.array(fc.boolean()), (available, i, flips) => {
        const wanted = available[i % available.length]
        expect(lookupRange(shuffleCase(wanted, flips), available)).toBe(wanted)
        expect(lookupRange(`${wanted}-x-extra`, available)).toBe(wanted)
      })
    )
  })
})

describe("chooseLanguage", () => {
  it("takes ?lang= first, then Accept-Language by quality, then the first listed, then en", () => {
    const languages = ["en", "fr", "de"]
    expect(chooseLanguage({ query: "de", acceptLanguage: "fr", languages })).toBe("de")
    expect(chooseLanguage({ query: "it", acceptLanguage: "es, fr;q=0.8, de;q=0.9", languages })).toBe("de")
    expect(chooseLanguage({ query: "fr-BE", languages })).toBe("fr")
    expect(chooseLanguage({ acceptLanguage: "ja, zh;q=0.5", languages: ["fr", "de"] })).toBe("fr")
    expect(chooseLanguage({ acceptLanguage: "ja" })).toBe("en")
    expect(chooseLanguage({ query: "<script>", acceptLanguage: null, languages })).toBe("en")
  })

  it("offers the languages content has texts for when languages is empty or null", () => {
    for (const languages of [null, [], undefined]) {
      expect(chooseLanguage({ acceptLanguage: "it, de;q=0.5", languages, withTexts: ["fr", "de"] })).toBe("de")
      expect(chooseLanguage({ acceptLanguage: "it", languages, withTexts: ["fr", "de"] })).toBe("en")
    }
    // A listed language is offered even without texts; texts of an unlisted one are not.
    expect(chooseLanguage({ query: "es", languages: ["en", "es"], withTexts: ["fr"] })).toBe("es")
    expect(chooseLanguage({ query: "fr", languages: ["en", "es"], withTexts: ["fr"] })).toBe("en")
  })

  it("always answers an offered language, the first listed, or en", () => {
    fc.assert(
      fc.property(fc.option(fc.string()), fc.option(fc.oneof(fc.string(), weighted.map(header))), tags, tags, (query, accept, languages, withTexts) => {
        const chosen = chooseLanguage({ query, acceptLanguage: accept, languages, withTexts })
        const offered = languages.length > 0 ? languages : withTexts
        expect([...offered, languages[0] ?? "en"]).toContain(chosen)
      })
    )
  })

  it("answers an offered ?lang= whatever the header says", () => {
    fc.assert(
      fc.property(tags.filter((t) => t.length > 0), fc.nat(), weighted, (languages, i, ranges) => {
        const wanted = languages[i % languages.length]
        expect(chooseLanguage({ query: wanted, acceptLanguage: header(ranges), languages })).toBe(wanted)
      })
    )
  })

  it("answers the offered language of highest quality when no ?lang= applies", () => {
    fc.assert(
      fc.property(tags.filter((t) => t.length > 0), weighted, (languages, ranges) => {
        const chosen = chooseLanguage({ acceptLanguage: header(ranges), languages })
        const best = parseAcceptLanguage(header(ranges))
          .map(({ range }) => lookupRange(range, languages))
          .find((found) => found !== undefined)
        expect(chosen).toBe(best ?? languages[0])
      })
    )
  })
})
