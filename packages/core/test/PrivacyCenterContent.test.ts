import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import { PrivacyCenterContent } from "../src/Properties/PrivacyCenterContent.js"

/** Decoded as a write would check it: unknown keys are errors unless the schema keeps them. */
const decode = Schema.decodeUnknownEither(PrivacyCenterContent, { onExcessProperty: "error", errors: "all" })

const issues = (input: unknown): string => {
  const r = decode(input)
  if (Either.isRight(r)) throw new Error(`expected failure, decoded: ${JSON.stringify(r.right)}`)
  return ParseResult.ArrayFormatter.formatErrorSync(r.left)
    .map((i) => `${i.path.join(".")}: ${i.message}`)
    .join("\n")
}

const content = {
  en: { title: "Your privacy", intro: "We respect your choices.", purposes: { analytics: "Audience measurement" } },
  "fr-FR": { title: "Votre vie privée" },
  purposes: [{ id: "analytics", name: "Analytics", description: "Counting visits." }, { id: "ads", name: "Advertising" }],
  regulation: "gdpr",
  notice_text_content_id: "ntc_1"
}

describe("PrivacyCenterContent", () => {
  it("decodes texts per language, purposes, the regulation and the notice text content", () => {
    expect(Either.getOrThrow(decode(content))).toEqual(content)
    expect(Either.getOrThrow(decode({}))).toEqual({})
  })

  it("keeps keys it does not name as they are, checked or not", () => {
    const own = { ...content, theme: { dark: true }, EN: 42, "en-us": ["not", "a", "code"], title: { en: "Hello" } }
    expect(Either.getOrThrow(decode(own))).toEqual(own)
  })

  it("refuses texts that are not plain strings of their bounds", () => {
    expect(issues({ en: { title: 42 } })).toContain("en.title")
    expect(issues({ en: { title: " " } })).toContain("en.title: must not be empty")
    expect(issues({ en: { intro: "x".repeat(10_001) } })).toContain("en.intro")
    expect(issues({ fr: { purposes: { ads: "" } } })).toContain("fr.purposes.ads")
    expect(issues({ de: "Hallo" })).toContain("de")
  })

  it("refuses purposes without an id or a name, and an id listed twice", () => {
    expect(issues({ purposes: [{ name: "No id" }] })).toContain("purposes.0.id")
    expect(issues({ purposes: [{ id: "a" }] })).toContain("purposes.0.name")
    expect(issues({ purposes: [{ id: "a", name: "A" }, { id: "a", name: "B" }] })).toContain("must list each purpose id once")
    expect(issues({ purposes: { a: "A" } })).toContain("purposes")
  })

  it("refuses a regulation that is not a code, and an empty notice text content id", () => {
    expect(issues({ regulation: "GDPR" })).toContain("regulation: must be a lower-case regulation code")
    expect(issues({ notice_text_content_id: "" })).toContain("notice_text_content_id")
  })
})
