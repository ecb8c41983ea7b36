import { DOC, DOCX, Digests, MAX_PROOF_BYTES, MediaTypes, type ProofReportDocument, ReportPdf } from "@cmp/core"
import {
  dataUri,
  largePng,
  sampleDoc,
  sampleDocx,
  sampleGif,
  sampleJpeg,
  sampleOleWithoutWord,
  samplePdf,
  samplePlainZip,
  samplePng,
  sampleText,
  sampleXlsx
} from "@cmp/test-support/proof-samples"
import { digestsLayer as engineDigests } from "@cmp/test-support/engine"
import { assert, describe, it } from "@effect/vitest"
import canonicalize from "canonicalize"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import fc from "fast-check"
import { getDocument } from "pdfjs-dist/legacy/build/pdf.mjs"
import { DigestsLive, MediaTypesLive, ReportPdfLive } from "../src/index.js"

/** The proof adapters through the ports of core they implement. */

const adapters = Layer.mergeAll(MediaTypesLive, ReportPdfLive, DigestsLive)

const detect = (bytes: Uint8Array) => Effect.flatMap(MediaTypes, (m) => m.detect(bytes))

describe("media types", () => {
  it.effect("each sample is detected as its type", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* detect(samplePdf()), "application/pdf")
      assert.strictEqual(yield* detect(samplePng()), "image/png")
      assert.strictEqual(yield* detect(sampleJpeg()), "image/jpeg")
      assert.strictEqual(yield* detect(sampleGif()), "image/gif")
      assert.strictEqual(yield* detect(sampleDocx()), DOCX)
      assert.strictEqual(yield* detect(sampleDoc()), DOC)
    }).pipe(Effect.provide(adapters)))

  it.effect("a plain ZIP, a spreadsheet package, an OLE file without a Word document and text are no proof type", () =>
    Effect.gen(function*() {
      for (const bytes of [samplePlainZip(), sampleXlsx(), sampleOleWithoutWord(), sampleText(), new Uint8Array(0)]) {
        assert.isUndefined(yield* detect(bytes))
      }
    }).pipe(Effect.provide(adapters)))

  it.effect("corrupt or truncated files are no proof type, and never fail", () =>
    Effect.gen(function*() {
      const ole = sampleDoc()
      const corruptOle = ole.slice(0, 600)
      corruptOle.fill(0xff, 48, 600)
      const candidates = [
        samplePng().slice(0, 12),
        sampleDocx().slice(0, 40),
        ole.slice(0, 8),
        corruptOle,
        new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0xff, 0xff, 0xff, 0xff])
      ]
      for (const bytes of candidates) assert.isUndefined(yield* detect(bytes))
    }).pipe(Effect.provide(adapters)))

  it.effect("the type is read from the bytes, never from what the sender declares", () =>
    Effect.gen(function*() {
      const uri = dataUri("application/pdf", samplePng())
      assert.match(uri, /^data:application\/pdf;base64,/)
      const bytes = new Uint8Array(Buffer.from(uri.slice(uri.indexOf(",") + 1), "base64"))
      assert.strictEqual(yield* detect(bytes), "image/png")
    }).pipe(Effect.provide(adapters)))

  it.effect("a PNG just over the size limit is still a PNG of that size", () =>
    Effect.gen(function*() {
      const big = largePng(MAX_PROOF_BYTES + 1)
      assert.strictEqual(big.length, MAX_PROOF_BYTES + 1)
      assert.strictEqual(yield* detect(big), "image/png")
    }).pipe(Effect.provide(adapters)))
})

// ---------------------------------------------------------------- the report PDF

const hex = (c: string) => c.repeat(64)
const NOTICE_SENTENCE = "We use cookies to measure the audience of this website and to improve our services."
const NOTICE = [
  "Your privacy matters to us.",
  Array.from({ length: 60 }, () => NOTICE_SENTENCE).join(" "),
  "Zażółć gęślą jaźń - 日本語 🍪 “quoted” – done."
].join("\n\n")

const document: ProofReportDocument = {
  generated_at: "2026-11-20T10:00:00.000Z",
  organization: { id: "org-7", name: "Acme Widgets Ltd" },
  user: { id: "user-42", organization_user_id: "customer-1234", created_at: "2026-01-02T03:04:05.000Z" },
  regulations: [{
    regulation: "gdpr",
    consents: {
      purposes: [{ id: "analytics", enabled: true }, { id: "ads", enabled: false, enabled_li: true }],
      vendors: { enabled: ["vendor-a"], disabled: ["vendor-b"], enabled_li: [], disabled_li: [] },
      tcfcs: "CP".repeat(10_000)
    },
    events: [
      {
        id: "event-first",
        created_at: "2026-02-01T09:00:00.000Z",
        updated_at: "2026-02-01T09:00:00.000Z",
        status: "confirmed",
        consents: { purposes: [{ id: "analytics", enabled: true }], vendors: { enabled: ["vendor-a"] } },
        metadata: { source: "banner" },
        delegate: { id: "agent-9", name: "Support desk" },
        notice: { id: "notice-1", text_id: "text-1", content_version: 3, content: NOTICE },
        proofs: [
          { id: "proof-1", media_type: "image/png", size: 1234, sha256: hex("a"), erased: false },
          { id: "proof-2", media_type: null, size: null, sha256: null, erased: true }
        ],
        log: [{ shard: 3, seq: 17, hash: hex("b"), created_at: "2026-02-01T09:00:00.000Z" }]
      },
      {
        id: "event-second",
        created_at: "2026-03-01T09:00:00.000Z",
        updated_at: "2026-03-02T09:00:00.000Z",
        status: "pending_approval",
        consents: { purposes: [{ id: "ads", enabled: false }] },
        metadata: null,
        delegate: null,
        notice: null,
        proofs: [],
        log: []
      }
    ]
  }],
  log_head: hex("c"),
  user_log: [{ shard: 11, seq: 2, hash: hex("d"), created_at: "2026-01-02T03:04:05.000Z" }]
}

const REPORT = { id: "report-1", sha256: hex("e"), created_at: "2026-11-20T10:00:01.000Z", report: document }

const render = Effect.flatMap(ReportPdf, (pdf) => pdf.render(REPORT))

const pdfContent = (bytes: Uint8Array) =>
  Effect.promise(async () => {
    const pdf = await getDocument({ data: bytes.slice(), verbosity: 0, isEvalSupported: false }).promise
    let text = ""
    for (let n = 1; n <= pdf.numPages; n++) {
      const page = await pdf.getPage(n)
      for (const item of (await page.getTextContent()).items) if ("str" in item) text += `${item.str} `
    }
    const { info } = await pdf.getMetadata()
    const pages = pdf.numPages
    await pdf.destroy()
    return { text: text.replace(/\s+/g, " "), pages, info: info as Record<string, unknown> }
  })

describe("report PDF", () => {
  it.effect("an A4 PDF that shows the report: organization, user, status, events, notice, proofs, log, digest", () =>
    Effect.gen(function*() {
      const bytes = yield* render
      assert.strictEqual(Buffer.from(bytes.subarray(0, 5)).toString("latin1"), "%PDF-")
      const { info, pages, text } = yield* pdfContent(bytes)
      for (
        const expected of [
          "Proof of consent",
          "report-1",
          "Acme Widgets Ltd",
          "org-7",
          "user-42",
          "customer-1234",
          "Regulation gdpr",
          "Purpose analytics: enabled",
          "Purpose ads: disabled; legitimate interest enabled",
          "Vendors enabled: vendor-a",
          "event-first",
          "event-second",
          "2026-02-01T09:00:00.000Z",
          "pending_approval",
          "agent-9 (Support desk)",
          NOTICE_SENTENCE,
          hex("a"),
          "proof-2: erased",
          `3/17 ${hex("b")}`,
          hex("c"),
          `11/2 ${hex("d")}`,
          hex("e")
        ]
      ) assert.include(text, expected)
      assert.isAbove(pages, 1, "the long notice runs onto further pages")
      assert.match(String(info.CreationDate), /^D:20261120100001/)
    }).pipe(Effect.provide(adapters)))

  it.effect("wording beyond Latin-1 is shown as written; characters the faces lack are replaced, never fatal", () =>
    Effect.gen(function*() {
      const { text } = yield* pdfContent(yield* render)
      assert.include(text, "Zażółć gęślą jaźń - ??? ? “quoted” – done.")
    }).pipe(Effect.provide(adapters)))

  it.effect("its text, ids and headings show Polish, Czech, Greek, Romanian, Bulgarian and German as written", () =>
    Effect.gen(function*() {
      const words = [
        "Zażółć gęślą jaźń",
        "Příliš žluťoučký kůň úpěl ďábelské ódy",
        "Ελληνικά: Συγκατάθεση",
        "Consimțământ, țară, șir, Ș Ț",
        "Съгласие за бисквитки",
        "Straße, Größe, Übermaß"
      ]
      const all = words.join(" / ")
      const [gdpr] = document.regulations
      const report: ProofReportDocument = {
        ...document,
        // The organization's name in the text face, the user's id in the monospaced one, the event's id in a bold heading.
        organization: { ...document.organization, name: all },
        user: { ...document.user, organization_user_id: all },
        regulations: [{ ...gdpr!, events: [{ ...gdpr!.events[1]!, id: all }] }]
      }
      const { text } = yield* pdfContent(yield* Effect.flatMap(ReportPdf, (pdf) => pdf.render({ ...REPORT, report })))
      const squeezed = (s: string) => s.replace(/\s+/g, "")
      for (const w of words) assert.isAtLeast(squeezed(text).split(squeezed(w)).length - 1, 3, w)
    }).pipe(Effect.provide(adapters)))

  it.effect("the same report renders to the same bytes", () =>
    Effect.gen(function*() {
      const a = yield* render
      const b = yield* render
      assert.isTrue(Buffer.from(a).equals(Buffer.from(b)))
    }).pipe(Effect.provide(adapters)))
})

// ---------------------------------------------------------------- digests

describe("digests", () => {
  it.effect("sha256 is lowercase hex of the bytes, a string's being its UTF-8", () =>
    Effect.gen(function*() {
      const { sha256 } = yield* Digests
      const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
      assert.strictEqual(sha256("abc"), abc)
      assert.strictEqual(sha256(new TextEncoder().encode("abc")), abc)
      assert.strictEqual(sha256(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
      assert.strictEqual(sha256("€"), sha256(new Uint8Array([0xe2, 0x82, 0xac])))
    }).pipe(Effect.provide(adapters)))

  it.effect("canonical JSON: the RFC 8785 example", () =>
    Effect.gen(function*() {
      const { canonicalJson } = yield* Digests
      const input = JSON.parse(String.raw`{
        "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
        "literals": [null, true, false]
      }`)
      assert.strictEqual(
        canonicalJson(input),
        String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
      )
    }).pipe(Effect.provide(adapters)))

  it.effect("canonical JSON: keys sorted by UTF-16 code units at every depth, ECMAScript numbers", () =>
    Effect.gen(function*() {
      const { canonicalJson } = yield* Digests
      const keys = JSON.parse(String.raw`{"\u20ac":"Euro","\r":"CR","\ufb33":"Hebrew","1":"One","\ud83d\ude00":"Smiley","\u0080":"Control","\u00f6":"Latin"}`)
      assert.strictEqual(
        canonicalJson(keys),
        `{"\\r":"CR","1":"One","\u0080":"Control","\u00f6":"Latin","\u20ac":"Euro","\ud83d\ude00":"Smiley","\ufb33":"Hebrew"}`
      )
      assert.strictEqual(canonicalJson({ b: { d: 1, c: [{ z: 1, a: 2 }] }, a: "x" }), `{"a":"x","b":{"c":[{"a":2,"z":1}],"d":1}}`)
      assert.strictEqual(
        canonicalJson([1e21, -0, 1e-7, 0.000001, 9007199254740992, -1.5e-10, 100, 123456789012345680000]),
        "[1e+21,0,1e-7,0.000001,9007199254740992,-1.5e-10,100,123456789012345680000]"
      )
      assert.strictEqual(canonicalJson("\u2028é\u001f"), `"\u2028é\\u001f"`)
    }).pipe(Effect.provide(adapters)))

  it.effect("canonical JSON of any JSON data is the text of the RFC 8785 library", () =>
    Effect.gen(function*() {
      const { canonicalJson } = yield* Digests
      // Members left undefined are dropped, as a row's unset optional fields are.
      const withUndefined = fc.dictionary(fc.string({ unit: "binary" }), fc.option(fc.jsonValue({ stringUnit: "binary" }), { nil: undefined }))
      const data = fc.oneof(fc.jsonValue({ stringUnit: "binary" }), fc.jsonValue(), withUndefined)
      fc.assert(fc.property(data, (value) => canonicalJson(value) === canonicalize(value)), { numRuns: 2000 })
    }).pipe(Effect.provide(adapters)))

  it.effect("canonical JSON of any other value the library encodes as it is (dates, boxed values, holes, functions) is its text", () =>
    Effect.gen(function*() {
      const { canonicalJson } = yield* Digests
      const anything = fc.anything({
        withBoxedValues: true,
        withDate: true,
        withMap: true,
        withSet: true,
        withNullPrototype: true,
        withObjectString: true,
        withSparseArray: true,
        withTypedArray: true,
        withUnicodeString: true
      })
      const odd = fc.constantFrom(() => 1, Symbol("s"), new Date(Number.NaN), { toJSON: () => ({ b: 1, a: undefined }) })
      const value = fc.oneof(anything, fc.array(fc.oneof(anything, odd)), fc.dictionary(fc.string(), fc.oneof(anything, odd)))
      const library = (v: unknown) => {
        try {
          return canonicalize(v)
        } catch {
          return undefined
        }
      }
      fc.assert(
        fc.property(value, (v) => {
          const text = library(v)
          // What the library refuses, or writes `undefined` into, is made JSON first (the cases below).
          return text === undefined || text.includes("undefined") || canonicalJson(v) === text
        }),
        { numRuns: 2000 }
      )
      assert.strictEqual(canonicalJson([1, () => 1]), canonicalize([1, () => 1]))
    }).pipe(Effect.provide(adapters)))

  it.effect("canonical JSON drops what JSON drops and always answers a string", () =>
    Effect.gen(function*() {
      const { canonicalJson } = yield* Digests
      assert.strictEqual(canonicalJson({ b: undefined, a: 1, f: () => 1 }), `{"a":1}`)
      assert.strictEqual(canonicalJson([undefined, 1]), "[null,1]")
      assert.strictEqual(canonicalJson({ at: new Date("2026-01-01T00:00:00.000Z") }), `{"at":"2026-01-01T00:00:00.000Z"}`)
      assert.strictEqual(canonicalJson({}), "{}")
      assert.strictEqual(canonicalJson(undefined), "null")
      assert.strictEqual(canonicalJson({ n: Number.NaN }), `{"n":null}`)
      // what UTF-8 storage gives back for a lone surrogate
      assert.strictEqual(canonicalJson({ ["k\ud800"]: "v\udc00" }), `{"k\ufffd":"v\ufffd"}`)
    }).pipe(Effect.provide(adapters)))
  it.effect("the engine suites hash the consent log as production does: the same canonical JSON and SHA-256 of any value", () =>
    Effect.gen(function*() {
      const production = yield* Digests
      const suites = yield* Effect.provide(Digests, engineDigests)
      const value = fc.oneof(
        fc.jsonValue({ stringUnit: "binary" }),
        fc.anything({ withBoxedValues: true, withDate: true, withNullPrototype: true, withSparseArray: true, withUnicodeString: true })
      )
      fc.assert(
        fc.property(value, (v) => {
          const text = production.canonicalJson(v)
          return suites.canonicalJson(v) === text && suites.sha256(text) === production.sha256(text)
        }),
        { numRuns: 1000 }
      )
      const bytes = new Uint8Array([0, 1, 0xff, 0xe2, 0x82, 0xac])
      assert.strictEqual(suites.sha256(bytes), production.sha256(bytes))
    }).pipe(Effect.provide(adapters)))
})
