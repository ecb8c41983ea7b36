import { dataUri, samplePdf, samplePng } from "@cmp/test-support/proof-samples"
import canonicalize from "canonicalize"
import * as crypto from "node:crypto"
import { createRequire } from "node:module"
import * as path from "node:path"
import { getDocument } from "pdfjs-dist/legacy/build/pdf.mjs"
import { beforeAll, describe, expect, it } from "vitest"
import { approvedContent, as, client, expect400, expect403, expect404, expect405, expectError, unique } from "./helpers.js"
import { type TestTenant, useServer } from "./fixture.js"

/**
 * Proof reports through HTTP: what a report of one user says (each regulation's status, every
 * event with the notice wording it names, its proofs' digests and the log entries covering it),
 * its SHA-256 over the canonical JSON of that, the monthly quota, and the PDF an auditor reads.
 */

const { server, op, tenant } = useServer()

const FEATURES = { consents_api: true, versions_and_proofs: true }
const HEX64 = /^[0-9a-f]{64}$/
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const ANSWER = ["created_at", "id", "organization_id", "organization_user_id", "pdf_sha256", "regulation", "report", "sha256", "user_id"]
const WORDING = "We use cookies to measure the audience of this site and to show you relevant offers."

const sha256 = (data: Uint8Array | string) => crypto.createHash("sha256").update(data).digest("hex")
const purposes = (...list: Array<[string, boolean]>) => list.map(([id, enabled]) => ({ id, enabled }))

/** The hash the report's `sha256` must be: SHA-256 of its RFC 8785 canonical JSON. */
const reportHash = (report: unknown) => sha256(canonicalize(report)!)

const createReport = (t: TestTenant, body: Record<string, unknown>) =>
  t.call("POST", "/v1/consents/proof-reports", { body: { organization_id: t.org.id, ...body } })

const expectLogEntries = (entries: Array<any>, what: string) => {
  expect(entries.length, `${what}: log entries`).toBeGreaterThan(0)
  for (const l of entries) {
    expect(Object.keys(l).sort(), what).toEqual(["created_at", "hash", "seq", "shard"])
    expect(Number.isInteger(l.shard) && l.shard >= 0 && l.shard < 16, `${what}: shard ${l.shard}`).toBe(true)
    expect(Number.isInteger(l.seq), `${what}: seq ${l.seq}`).toBe(true)
    expect(l.hash, what).toMatch(HEX64)
    expect(l.created_at, what).toMatch(ISO)
  }
}

/** A download: the status, the headers and the exact bytes. */
const download = async (token: string, urlPath: string) => {
  const res = await fetch(server.url + urlPath, { headers: { authorization: `Bearer ${token}` } })
  return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) }
}

const standardFonts = `${path.dirname(createRequire(import.meta.url).resolve("pdfjs-dist/package.json"))}/standard_fonts/`

/** The text of every page, with no whitespace at all: a long value wrapped over two lines reads whole. */
const pdfText = async (bytes: Uint8Array): Promise<string> => {
  const pdf = await getDocument({ data: bytes.slice(), standardFontDataUrl: standardFonts, isEvalSupported: false, verbosity: 0 }).promise
  const pages: Array<string> = []
  for (let i = 1; i <= pdf.numPages; i++) {
    const content = await (await pdf.getPage(i)).getTextContent()
    pages.push(content.items.map((item) => ("str" in item ? item.str : "")).join(""))
  }
  await pdf.destroy()
  return pages.join("").replace(/\s+/g, "")
}
const squeezed = (s: string) => s.replace(/\s+/g, "")


const recordEvent = async (t: TestTenant, organizationUserId: string, extra: Record<string, unknown>) => {
  const r = await t.call("POST", "/v1/consents/events", {
    body: { organization_id: t.org.id, user: { organization_user_id: organizationUserId }, ...extra }
  })
  expect(r.status, r.text).toBe(201)
  return r.body
}

/** A user with two GDPR events (the first naming an approved notice content and a proof) and one CCPA event. */
const userWithHistory = async (t: TestTenant) => {
  const content = await approvedContent(op, t, WORDING)
  const ouid = unique("crm")
  const first = await recordEvent(t, ouid, {
    consents: { purposes: purposes(["analytics", true], ["ads", false]) },
    notice_text_content_id: content.id,
    proofs: [{ file: dataUri("application/pdf", samplePdf()) }],
    metadata: { page: "/checkout" }
  })
  server.clock.advance(1000)
  const second = await recordEvent(t, ouid, {
    consents: { purposes: purposes(["ads", true]), vendors: { enabled: ["v1"] } },
    delegate: { id: "rep-7", name: "Grace" }
  })
  server.clock.advance(1000)
  const ccpa = await recordEvent(t, ouid, { regulation: "ccpa", consents: { purposes: purposes(["sale", false]) } })
  server.clock.advance(1000)
  const userId = first.user.id as string
  const gdprUser = await t.call("GET", `/v1/consents/users/${userId}`)
  const ccpaUser = await t.call("GET", `/v1/consents/users/${userId}?regulation=ccpa`)
  expect(gdprUser.status, gdprUser.text).toBe(200)
  return { content, ouid, userId, first, second, ccpa, gdprUser: gdprUser.body, ccpaUser: ccpaUser.body }
}

describe("proof reports: what a report says", () => {
  let t: TestTenant
  let h: Awaited<ReturnType<typeof userWithHistory>>
  let report: any
  beforeAll(async () => {
    t = await tenant(FEATURES)
    h = await userWithHistory(t)
  })

  it("by user_id: 201 with its fields, and sha256 is the SHA-256 of the canonical JSON of report", async () => {
    const head = await t.call("GET", "/v1/consents/log/verify")
    expect(head.status, head.text).toBe(200)
    const r = await createReport(t, { user_id: h.userId })
    expect(r.status, r.text).toBe(201)
    report = r.body
    expect(Object.keys(report).sort()).toEqual(ANSWER)
    expect(report).toMatchObject({ organization_id: t.org.id, user_id: h.userId, organization_user_id: h.ouid, regulation: null })
    expect(report.created_at).toMatch(ISO)
    expect(report.sha256).toMatch(HEX64)
    expect(report.sha256).toBe(reportHash(report.report))
    expect(report.pdf_sha256).toMatch(HEX64)

    const doc = report.report
    expect(Object.keys(doc).sort()).toEqual(["generated_at", "log_head", "organization", "regulations", "user", "user_log"])
    expect(doc.generated_at).toMatch(ISO)
    expect(doc.organization).toEqual({ id: t.org.id, name: t.org.name })
    expect(doc.user).toEqual({ id: h.userId, organization_user_id: h.ouid, created_at: h.gdprUser.created_at })
    // The head of the log when the report was made: nothing was written since the verification.
    expect(doc.log_head).toMatch(HEX64)
    expect(doc.log_head).toBe(head.body.head)
    expectLogEntries(doc.user_log, "user_log")
  })

  it("each regulation: the user's status and every event, with its notice wording, its proofs' digests and its log entries", async () => {
    const doc = report.report
    const byRegulation = Object.fromEntries(doc.regulations.map((r: any) => [r.regulation, r]))
    expect(Object.keys(byRegulation).sort()).toEqual(["ccpa", "gdpr"])
    expect(byRegulation.gdpr.consents).toEqual(h.gdprUser.consents)
    expect(byRegulation.ccpa.consents).toEqual(h.ccpaUser.consents)

    const gdpr = byRegulation.gdpr.events
    expect(gdpr.map((e: any) => e.id)).toEqual([h.first.id, h.second.id])
    const [first, second] = gdpr
    expect(Object.keys(first).sort()).toEqual(["consents", "created_at", "delegate", "id", "log", "metadata", "notice", "proofs", "status", "updated_at"])
    expect(first).toMatchObject({
      id: h.first.id,
      created_at: h.first.created_at,
      updated_at: h.first.updated_at,
      status: "confirmed",
      consents: h.first.consents,
      metadata: { page: "/checkout" },
      delegate: null
    })
    expect(first.notice).toEqual({ id: h.content.id, text_id: h.content.text_id, content_version: h.content.content_version, content: WORDING })
    expect(h.first.proofs_id).toHaveLength(1)
    expect(first.proofs).toEqual([
      { id: h.first.proofs_id[0], media_type: "application/pdf", size: samplePdf().length, sha256: sha256(samplePdf()), erased: false }
    ])
    expectLogEntries(first.log, "first event")

    expect(second).toMatchObject({ id: h.second.id, status: "confirmed", consents: h.second.consents, notice: null, proofs: [] })
    expect(second.delegate).toMatchObject({ id: "rep-7", name: "Grace" })
    expectLogEntries(second.log, "second event")

    const ccpa = byRegulation.ccpa.events
    expect(ccpa.map((e: any) => e.id)).toEqual([h.ccpa.id])
    expectLogEntries(ccpa[0].log, "ccpa event")
  })

  it("get answers the report as created; find lists it", async () => {
    const got = await t.call("GET", `/v1/consents/proof-reports/${report.id}`)
    expect(got.status, got.text).toBe(200)
    expect(got.body).toEqual(report)
    expect(reportHash(got.body.report)).toBe(got.body.sha256)
    const found = await t.call("GET", "/v1/consents/proof-reports")
    expect(found.status, found.text).toBe(200)
    expect(found.body.data.map((r: any) => r.id)).toContain(report.id)
  })

  it("by organization_user_id: the same user; with a regulation, that regulation alone", async () => {
    const r = await createReport(t, { organization_user_id: h.ouid })
    expect(r.status, r.text).toBe(201)
    expect(r.body).toMatchObject({ user_id: h.userId, organization_user_id: h.ouid, regulation: null })
    expect(r.body.sha256).toBe(reportHash(r.body.report))
    expect(r.body.report.regulations.map((x: any) => x.regulation).sort()).toEqual(["ccpa", "gdpr"])

    const ccpa = await createReport(t, { user_id: h.userId, regulation: "ccpa" })
    expect(ccpa.status, ccpa.text).toBe(201)
    expect(ccpa.body.regulation).toBe("ccpa")
    expect(ccpa.body.report.regulations.map((x: any) => x.regulation)).toEqual(["ccpa"])
    expect(ccpa.body.report.regulations[0].events.map((e: any) => e.id)).toEqual([h.ccpa.id])
    expect(ccpa.body.sha256).toBe(reportHash(ccpa.body.report))
  })

  it("names exactly one of user_id and organization_user_id, of a known user (400 otherwise)", async () => {
    expect400(await createReport(t, {}))
    expect400(await createReport(t, { user_id: h.userId, organization_user_id: h.ouid }))
    expect400(await createReport(t, { user_id: "no-such-user" }))
    expect400(await createReport(t, { organization_user_id: "no-such-user" }))
    // Another organization's user is unknown here.
    const other = await tenant(FEATURES)
    const theirs = await recordEvent(other, unique("crm"), { consents: { purposes: purposes(["p", true]) } })
    expect400(await createReport(t, { user_id: theirs.user.id }))
  })

  it("a report is never changed or removed (405)", async () => {
    expect405(await t.call("PATCH", `/v1/consents/proof-reports/${report.id}`, { body: { regulation: "ccpa" } }))
    expect405(await t.call("PUT", `/v1/consents/proof-reports/${report.id}`, { body: { user_id: h.userId } }))
    expect405(await t.call("DELETE", `/v1/consents/proof-reports/${report.id}`))
    expect((await t.call("GET", `/v1/consents/proof-reports/${report.id}`)).body).toEqual(report)
  })

  it("/pdf: a PDF download whose text holds the report's sha256", async () => {
    const d = await download(t.token, `/v1/consents/proof-reports/${report.id}/pdf`)
    expect(d.status).toBe(200)
    expect(d.headers.get("content-type")).toMatch(/^application\/pdf(;|$)/)
    expect(d.headers.get("content-disposition")).toBe(`attachment; filename="proof-report-${report.id}.pdf"`)
    expect(Buffer.from(d.bytes.subarray(0, 5)).toString("latin1")).toBe("%PDF-")
    const text = await pdfText(d.bytes)
    expect(text).toContain(report.sha256)
  })

  it("/pdf: the PDF rendered when the report was made, the same bytes on every GET, whose SHA-256 is pdf_sha256", async () => {
    const first = await download(t.token, `/v1/consents/proof-reports/${report.id}/pdf`)
    server.clock.advance(60_000)
    const second = await download(t.token, `/v1/consents/proof-reports/${report.id}/pdf`)
    expect(first.status).toBe(200)
    expect(second.status).toBe(200)
    expect(sha256(first.bytes)).toBe(report.pdf_sha256)
    expect(Buffer.from(second.bytes).equals(Buffer.from(first.bytes))).toBe(true)
  })

  it("/pdf: its text holds the organization, the user, the events, the notice wording, the proofs' digests and the log entries", async () => {
    const text = await pdfText((await download(t.token, `/v1/consents/proof-reports/${report.id}/pdf`)).bytes)
    const doc = report.report
    expect(text).toContain(squeezed(t.org.name))
    expect(text).toContain(h.userId)
    expect(text).toContain(h.ouid)
    for (const r of doc.regulations) for (const e of r.events) expect(text).toContain(e.id)
    expect(text).toContain(squeezed(WORDING))
    expect(text).toContain(sha256(samplePdf()))
    // The choices: every purpose an event names.
    for (const purpose of ["analytics", "ads", "sale"]) expect(text).toContain(purpose)
    for (const r of doc.regulations) for (const e of r.events) for (const l of e.log) expect(text).toContain(l.hash)
  })
})

/** Wording and names in six languages, as a report's PDF must show them. */
const LANGUAGES = {
  polish: "Zażółć gęślą jaźń",
  czech: "Příliš žluťoučký kůň úpěl ďábelské ódy",
  greek: "Ελληνικά: Συγκατάθεση",
  romanian: "Consimțământ, țară, șir, Ș Ț",
  bulgarian: "Съгласие за бисквитки",
  german: "Straße, Größe, Übermaß"
}

describe("proof reports: every language on paper", () => {
  it("/pdf: the organization's name, the notice wording, the user's id, the delegate and the metadata read as written", async () => {
    const t = await tenant(FEATURES)
    const renamed = await op.call("PATCH", `/v1/organizations/${t.org.id}`, { body: { name: `${LANGUAGES.polish} ${unique("sp")}` } })
    expect(renamed.status, renamed.text).toBe(200)
    const content = await approvedContent(op, t, `${LANGUAGES.czech}.\n\n${LANGUAGES.greek}.`)
    const ouid = unique("kunde-Größe")
    const e = await recordEvent(t, ouid, {
      consents: { purposes: purposes(["analytics", true]) },
      notice_text_content_id: content.id,
      delegate: { id: "agent-1", name: LANGUAGES.bulgarian },
      metadata: { ro: LANGUAGES.romanian, de: LANGUAGES.german }
    })
    const r = await createReport(t, { user_id: e.user.id })
    expect(r.status, r.text).toBe(201)
    expect(r.body.report.organization.name).toBe(renamed.body.name)
    const d = await download(t.token, `/v1/consents/proof-reports/${r.body.id}/pdf`)
    expect(d.status).toBe(200)
    expect(sha256(d.bytes)).toBe(r.body.pdf_sha256)
    const text = await pdfText(d.bytes)
    for (const [language, words] of Object.entries(LANGUAGES)) expect(text, language).toContain(squeezed(words))
    expect(text).toContain(squeezed(renamed.body.name))
    expect(text).toContain(ouid)
  })
})

/** The longest JSON an event's metadata may be, in bytes. */
const MAX_METADATA = 64 * 1024

/** Metadata of exactly `bytes` bytes of JSON: one value, one long word without spaces. */
const metadataOf = (bytes: number) => ({ k: "x".repeat(bytes - '{"k":""}'.length) })

/**
 * Runs `work` while `GET /healthz` is asked again and again, and answers the slowest of those
 * probes (ms): how long any request waited behind what `work` made the server do.
 */
const slowestProbeDuring = async (work: () => Promise<void>) => {
  let done = false
  let slowest = 0
  let probes = 0
  const probing = (async () => {
    while (!done) {
      const started = performance.now()
      const r = await fetch(`${server.url}/healthz`)
      await r.arrayBuffer()
      slowest = Math.max(slowest, performance.now() - started)
      probes++
    }
  })()
  try {
    await work()
  } finally {
    done = true
    await probing
  }
  expect(probes, "probes answered while the work ran").toBeGreaterThan(0)
  return slowest
}

describe("proof reports: an event's metadata is bounded, and a report never holds the server", () => {
  it("an event's metadata is at most 64 KiB of JSON: one byte more is a 400 naming metadata (create and patch)", async () => {
    const t = await tenant(FEATURES)
    const ouid = unique("crm")
    const kept = await recordEvent(t, ouid, { consents: { purposes: purposes(["p", true]) }, metadata: metadataOf(MAX_METADATA) })
    expect(JSON.stringify(kept.metadata)).toHaveLength(MAX_METADATA)
    // Bytes, not characters: a two-byte character counts twice.
    const wide = { k: "é".repeat((MAX_METADATA - 8) / 2 + 1) }
    for (const metadata of [metadataOf(MAX_METADATA + 1), wide]) {
      const r = await t.call("POST", "/v1/consents/events", {
        body: { organization_id: t.org.id, user: { organization_user_id: ouid }, consents: { purposes: purposes(["p", true]) }, metadata }
      })
      expect400(r)
      expect(Object.keys(r.body.errors)).toContain("metadata")
    }
    const patched = await t.call("PATCH", `/v1/consents/events/${kept.id}`, { body: { metadata: metadataOf(MAX_METADATA + 1) } })
    expect400(patched)
    expect(Object.keys(patched.body.errors)).toContain("metadata")
  })

  it("a consent token's metadata merged under the event's counts: past 64 KiB together, a 400 naming metadata", async () => {
    // A token carries at most 4 KiB and a token's write at most 64 KiB: the two together can pass the bound.
    const t = await tenant({ ...FEATURES, store_cmp_consents: true })
    const ouid = unique("crm")
    const token = await t.call("POST", "/v1/consents/tokens", {
      body: { organization_id: t.org.id, organization_user_id: ouid, metadata: { campaign: "x".repeat(3000) } }
    })
    expect(token.status, token.text).toBe(201)
    const asUser = as(server.url, token.body.id_token as string)
    const write = (metadata: Record<string, unknown>) =>
      asUser("POST", "/v1/consents/events", {
        body: { organization_id: t.org.id, user: { organization_user_id: ouid }, consents: { purposes: purposes(["p", true]) }, metadata }
      })
    const r = await write(metadataOf(MAX_METADATA - 2048))
    expect400(r)
    expect(Object.keys(r.body.errors)).toContain("metadata")
    const small = await write({ page: "/checkout" })
    expect(small.status, small.text).toBe(201)
  })

  it("the largest metadata as one long word: making its report and reading its PDF leave a probe answered promptly; the JSON keeps it whole", async () => {
    const t = await tenant(FEATURES)
    // A first report loads the PDF library: what is measured is a report, not a server's first one.
    const warm = await recordEvent(t, unique("crm"), { consents: { purposes: purposes(["p", true]) } })
    expect((await createReport(t, { user_id: warm.user.id })).status).toBe(201)
    const metadata = metadataOf(MAX_METADATA)
    const e = await recordEvent(t, unique("crm"), { consents: { purposes: purposes(["p", true]) }, metadata })
    let made: any
    let pdf: Awaited<ReturnType<typeof download>> | undefined
    const slowest = await slowestProbeDuring(async () => {
      const r = await createReport(t, { user_id: e.user.id })
      expect(r.status, r.text).toBe(201)
      made = r.body
      pdf = await download(t.token, `/v1/consents/proof-reports/${made.id}/pdf`)
    })
    expect(slowest, "the slowest probe (ms)").toBeLessThan(250)
    expect(made.report.regulations[0].events[0].metadata).toEqual(metadata)
    expect(pdf!.status).toBe(200)
    expect(sha256(pdf!.bytes)).toBe(made.pdf_sha256)
  })

  it("words no line may break between (joined by no-break spaces) in metadata, and a long run of spaces in the wording: making the report leaves a probe answered promptly", async () => {
    const t = await tenant(FEATURES)
    const warm = await recordEvent(t, unique("crm"), { consents: { purposes: purposes(["p", true]) } })
    expect((await createReport(t, { user_id: warm.user.id })).status).toBe(201)
    const wording = `Before${" ".repeat(100_000)}after.`
    const content = await approvedContent(op, t, wording)
    const metadata = { k: "ab\u00a0".repeat(15_000) }
    const e = await recordEvent(t, unique("crm"), { consents: { purposes: purposes(["p", true]) }, notice_text_content_id: content.id, metadata })
    let made: any
    const slowest = await slowestProbeDuring(async () => {
      const r = await createReport(t, { user_id: e.user.id })
      expect(r.status, r.text).toBe(201)
      made = r.body
    })
    expect(slowest, "the slowest probe (ms)").toBeLessThan(250)
    expect(made.report.regulations[0].events[0].metadata).toEqual(metadata)
    expect(made.report.regulations[0].events[0].notice.content).toBe(wording)
    const text = await pdfText((await download(t.token, `/v1/consents/proof-reports/${made.id}/pdf`)).bytes)
    expect(text).toContain("Beforeafter.")
  })
})

describe("proof reports: erasing the user", () => {
  const IP = "203.0.113.77"
  let t: TestTenant
  let ouid: string
  let userId: string
  let made: any
  beforeAll(async () => {
    t = await tenant(FEATURES)
    ouid = unique("crm")
    const e = await recordEvent(t, ouid, {
      consents: { purposes: purposes(["analytics", true]) },
      metadata: { ip: IP },
      proofs: [{ file: dataUri("image/png", samplePng()) }]
    })
    userId = e.user.id
    const r = await createReport(t, { organization_user_id: ouid })
    expect(r.status, r.text).toBe(201)
    made = r.body
    expect((await t.call("GET", `/v1/consents/proof-reports?organization_user_id=${ouid}`)).body.total).toBe(1)
    const erased = await t.call("DELETE", `/v1/consents/users/${userId}`)
    expect(erased.status, erased.text).toBe(200)
  })

  it("get and find show ids, times and digests only: no organization_user_id, no metadata, no choices", async () => {
    const got = await t.call("GET", `/v1/consents/proof-reports/${made.id}`)
    expect(got.status, got.text).toBe(200)
    const found = await t.call("GET", `/v1/consents/proof-reports?user_id=${userId}`)
    expect(found.status, found.text).toBe(200)
    expect(found.body.data).toEqual([got.body])
    for (const body of [got.body, found.body]) {
      expect(JSON.stringify(body)).not.toContain(IP)
      expect(JSON.stringify(body)).not.toContain(ouid)
      expect(JSON.stringify(body)).not.toContain("analytics")
    }
    const r = got.body
    expect(r).toMatchObject({
      id: made.id,
      organization_id: t.org.id,
      user_id: userId,
      organization_user_id: null,
      regulation: null,
      sha256: made.sha256,
      pdf_sha256: made.pdf_sha256,
      created_at: made.created_at
    })
    expect(r.report).toEqual({
      generated_at: made.report.generated_at,
      erased_at: expect.stringMatching(ISO),
      organization: { id: t.org.id },
      user: { id: userId, created_at: made.report.user.created_at },
      log_head: made.report.log_head
    })
  })

  it("its PDF is gone (404), and ?organization_user_id= no longer finds it", async () => {
    const d = await download(t.token, `/v1/consents/proof-reports/${made.id}/pdf`)
    expect(d.status).toBe(404)
    expect(Buffer.from(d.bytes).toString("utf8")).not.toContain(IP)
    const found = await t.call("GET", `/v1/consents/proof-reports?organization_user_id=${ouid}`)
    expect(found.status, found.text).toBe(200)
    expect(found.body.total).toBe(0)
  })

  it("the consent log still verifies", async () => {
    const v = await t.call("GET", "/v1/consents/log/verify")
    expect(v.status, v.text).toBe(200)
    expect(v.body).toMatchObject({ valid: true, first_invalid: null })
  })
})

describe("proof reports: who may, and how many", () => {
  it("needs versions_and_proofs (403 without)", async () => {
    const t = await tenant({ consents_api: true })
    const e = await recordEvent(t, unique("crm"), { consents: { purposes: purposes(["p", true]) } })
    expect403(await createReport(t, { user_id: e.user.id }))
    expect403(await t.call("GET", "/v1/consents/proof-reports"))
  })

  it("another organization's report is 404 (get and /pdf); creating one in another organization is 403", async () => {
    const a = await tenant(FEATURES)
    const b = await tenant(FEATURES)
    const e = await recordEvent(a, unique("crm"), { consents: { purposes: purposes(["p", true]) }, proofs: [{ file: dataUri("image/png", samplePng()) }] })
    const r = await createReport(a, { user_id: e.user.id })
    expect(r.status, r.text).toBe(201)
    expect404(await b.call("GET", `/v1/consents/proof-reports/${r.body.id}`))
    expect404(await b.call("GET", `/v1/consents/proof-reports/${r.body.id}/pdf`))
    expect((await b.call("GET", "/v1/consents/proof-reports")).body.total).toBe(0)
    expect403(await b.call("POST", "/v1/consents/proof-reports", { body: { organization_id: a.org.id, user_id: e.user.id } }))
    expect403(await b.call("GET", `/v1/consents/proof-reports?organization_id=${a.org.id}`))
  })

  it("past consent_proof_reports in the calendar month: 429 with Retry-After until the next month (UTC)", async () => {
    const t = await tenant(FEATURES)
    const quota = await op.quotaOf(t.org.id)
    expect(quota.consent_proof_reports).toBe(10)
    const patched = await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { consent_proof_reports: 2 } })
    expect(patched.status, patched.text).toBe(200)
    // Past the 5 s the usage counter keeps a limit.
    server.clock.advance(6_000)
    const e = await recordEvent(t, unique("crm"), { consents: { purposes: purposes(["p", true]) } })
    for (let i = 0; i < 2; i++) {
      const r = await createReport(t, { user_id: e.user.id })
      expect(r.status, r.text).toBe(201)
    }
    const refused = await createReport(t, { user_id: e.user.id })
    expectError(refused, 429, "TooManyRequests", "too-many-requests")
    const now = new Date(server.clock.millis)
    const nextMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)
    const retryAfter = refused.headers.get("retry-after")
    expect(retryAfter).toMatch(/^\d+$/)
    expect(Math.abs(Number(retryAfter) - (nextMonth - server.clock.millis) / 1000)).toBeLessThanOrEqual(5)
    expect((await t.call("GET", "/v1/consents/proof-reports?$limit=0")).body.total).toBe(2)
    // Reading is not counted.
    expect((await t.call("GET", "/v1/consents/proof-reports")).status).toBe(200)

    // The next month counts afresh (the last test of the file: the jump expires every token).
    server.clock.advance(Number(retryAfter) * 1000 + 1000)
    expect(new Date(server.clock.millis).getUTCMonth()).toBe((now.getUTCMonth() + 1) % 12)
    const again = as(server.url, await client(server.url).login(t.key.id, t.secret))
    const next = await again("POST", "/v1/consents/proof-reports", { body: { organization_id: t.org.id, user_id: e.user.id } })
    expect(next.status, next.text).toBe(201)
  })
})
