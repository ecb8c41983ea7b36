import {
  dataUri,
  largePng,
  sampleDeclaredDocx,
  sampleDoc,
  sampleDocx,
  sampleGif,
  sampleJpeg,
  sampleOleWithoutWord,
  samplePdf,
  samplePlainZip,
  samplePng,
  sampleText,
  sampleUndeclaredDocx
} from "@cmp/test-support/proof-samples"
import * as crypto from "node:crypto"
import { beforeAll, describe, expect, it } from "vitest"
import { as, call, expect400, expect403, expect404, expect409, expectError, JWT_SECRET, type Reply, unique } from "./helpers.js"
import { type TestTenant, useServer } from "./fixture.js"

/**
 * Proofs of consent through HTTP: files whose type is read from their bytes, kept with their
 * SHA-256 and answered as they were sent; the body limits of the routes that carry them; and
 * consent events naming proofs and the approved notice wording the user saw.
 */

/** Every write of the file comes from one address: the public rate limits have their own file. */
const unlimited = { publicRateLimit: { perKey: 1_000_000, perAddress: 1_000_000 } }
const { server, op, tenant } = useServer({ jwtSecret: JWT_SECRET, ...unlimited })

const FEATURES = { consents_api: true, versions_and_proofs: true }
const MiB = 1024 * 1024
const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
const DOC = "application/msword"
const HEX64 = /^[0-9a-f]{64}$/
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const ANSWER = ["created_at", "id", "media_type", "organization_id", "sha256", "size"]

/** The six kinds of proof, with the extensions their downloads may be named with. */
const KINDS: ReadonlyArray<{ readonly mediaType: string; readonly bytes: Uint8Array; readonly ext: RegExp }> = [
  { mediaType: "application/pdf", bytes: samplePdf(), ext: /^pdf$/ },
  { mediaType: "image/png", bytes: samplePng(), ext: /^png$/ },
  { mediaType: "image/jpeg", bytes: sampleJpeg(), ext: /^jpe?g$/ },
  { mediaType: "image/gif", bytes: sampleGif(), ext: /^gif$/ },
  { mediaType: DOCX, bytes: sampleDocx(), ext: /^docx$/ },
  { mediaType: DOC, bytes: sampleDoc(), ext: /^doc$/ }
]

const sha256 = (bytes: Uint8Array) => crypto.createHash("sha256").update(bytes).digest("hex")
const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

/** A 400 whose `errors` name the field (or something under it, as `proofs.0.file`). */
const expectNamed = (r: Reply, field: string) => {
  expect400(r)
  const keys = Object.keys(r.body.errors)
  expect(
    keys.some((k) => k === field || k.startsWith(`${field}.`)),
    `errors name ${field}: ${JSON.stringify(r.body.errors)}`
  ).toBe(true)
}

const expect413 = (r: Reply) => expectError(r, 413, "PayloadTooLarge", "payload-too-large")

const createProof = (t: TestTenant, file: string) => t.call("POST", "/v1/consents/proofs", { body: { organization_id: t.org.id, file } })

const proofOf = async (t: TestTenant, mediaType: string, bytes: Uint8Array) => {
  const r = await createProof(t, dataUri(mediaType, bytes))
  expect(r.status, r.text).toBe(201)
  return r.body
}

const countProofs = async (t: TestTenant) => {
  const r = await t.call("GET", "/v1/consents/proofs?$limit=0")
  expect(r.status, r.text).toBe(200)
  return r.body.total as number
}

/** A download: the status, the headers and the exact bytes. */
const download = async (token: string, path: string) => {
  const res = await fetch(server.url + path, { headers: { authorization: `Bearer ${token}` } })
  return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) }
}

/** A JSON body of exactly `size` bytes: an object whose `pad` string makes up the rest. */
const bodyOfSize = (fields: Record<string, unknown>, size: number, pad = "file", prefix = "data:image/png;base64,") => {
  const shell = JSON.stringify({ ...fields, [pad]: prefix })
  const body = JSON.stringify({ ...fields, [pad]: prefix + "A".repeat(size - Buffer.byteLength(shell)) })
  expect(Buffer.byteLength(body)).toBe(size)
  return body
}

const purposes = (...list: Array<[string, boolean]>) => list.map(([id, enabled]) => ({ id, enabled }))

const eventBody = (t: TestTenant, extra: Record<string, unknown> = {}) => ({
  organization_id: t.org.id,
  user: { organization_user_id: unique("crm") },
  consents: { purposes: purposes(["analytics", true]) },
  ...extra
})

const createEvent = async (t: TestTenant, extra: Record<string, unknown> = {}) => {
  const r = await t.call("POST", "/v1/consents/events", { body: eventBody(t, extra) })
  expect(r.status, r.text).toBe(201)
  return r.body
}

describe("proofs: the six types", () => {
  let t: TestTenant
  beforeAll(async () => {
    t = await tenant(FEATURES)
  })

  it("each is created (201) with its size, detected type and SHA-256; get shows the file, find never does; /file answers the bytes", async () => {
    const made: Array<any> = []
    for (const kind of KINDS) {
      const file = dataUri(kind.mediaType, kind.bytes)
      expect(file).toBe(`data:${kind.mediaType};base64,${base64(kind.bytes)}`)
      const r = await createProof(t, file)
      expect(r.status, `${kind.mediaType}: ${r.text}`).toBe(201)
      expect(Object.keys(r.body).sort(), kind.mediaType).toEqual(ANSWER)
      expect(r.body).toMatchObject({
        organization_id: t.org.id,
        size: kind.bytes.length,
        media_type: kind.mediaType,
        sha256: sha256(kind.bytes)
      })
      expect(r.body.sha256).toMatch(HEX64)
      expect(r.body.created_at).toMatch(ISO)
      expect(typeof r.body.id).toBe("string")

      const got = await t.call("GET", `/v1/consents/proofs/${r.body.id}`)
      expect(got.status, got.text).toBe(200)
      expect(got.body).toEqual({ ...r.body, file })

      const d = await download(t.token, `/v1/consents/proofs/${r.body.id}/file`)
      expect(d.status, kind.mediaType).toBe(200)
      expect(d.headers.get("content-type"), kind.mediaType).toBe(kind.mediaType)
      const disposition = /^attachment; filename="([^"]+)\.([a-z]+)"$/.exec(d.headers.get("content-disposition") ?? "")
      expect(disposition, `${kind.mediaType}: ${d.headers.get("content-disposition")}`).not.toBeNull()
      expect(disposition![1]).toBe(r.body.id)
      expect(disposition![2]).toMatch(kind.ext)
      // The file is shown as a download that can run nothing.
      expect(d.headers.get("content-security-policy") ?? "").toMatch(/(^|;)\s*sandbox\s*(;|$)/)
      expect(d.headers.get("x-content-type-options")).toBe("nosniff")
      expect(Buffer.from(d.bytes).equals(Buffer.from(kind.bytes)), kind.mediaType).toBe(true)
      made.push(r.body)
    }

    const found = await t.call("GET", "/v1/consents/proofs?$limit=100")
    expect(found.status, found.text).toBe(200)
    expect(found.body.total).toBe(KINDS.length)
    for (const p of found.body.data) expect(p).not.toHaveProperty("file")
    const byId = Object.fromEntries(found.body.data.map((p: any) => [p.id, p]))
    for (const p of made) expect(byId[p.id]).toEqual(p)
    // Not even when asked for.
    const selected = await t.call("GET", "/v1/consents/proofs?$select[]=file&$select[]=id")
    if (selected.status === 200) for (const p of selected.body.data) expect(p).not.toHaveProperty("file")
    else expect400(selected)
  })

  it("exactly 5 MiB decoded is taken", async () => {
    const bytes = largePng(5 * MiB)
    expect(bytes.length).toBe(5 * MiB)
    const p = await proofOf(t, "image/png", bytes)
    expect(p).toMatchObject({ size: 5 * MiB, media_type: "image/png", sha256: sha256(bytes) })
    const d = await download(t.token, `/v1/consents/proofs/${p.id}/file`)
    expect(d.status).toBe(200)
    expect(sha256(d.bytes)).toBe(p.sha256)
  }, 60_000)
})

describe("proofs: what is refused", () => {
  let t: TestTenant
  beforeAll(async () => {
    t = await tenant(FEATURES)
  })

  it("a type read from the bytes that differs from the declared one, or no proof type at all, is 400 naming file", async () => {
    const before = await countProofs(t)
    const refused: Array<[string, string]> = [
      ["PNG bytes declared as PDF", dataUri("application/pdf", samplePng())],
      ["PDF bytes declared as PNG", dataUri("image/png", samplePdf())],
      ["JPEG bytes declared as GIF", dataUri("image/gif", sampleJpeg())],
      ["DOC bytes declared as DOCX", dataUri(DOCX, sampleDoc())],
      ["DOCX bytes declared as DOC", dataUri(DOC, sampleDocx())],
      ["text declared as text", dataUri("text/plain", sampleText())],
      ["text declared as PDF", dataUri("application/pdf", sampleText())],
      ["a plain ZIP declared as DOCX", dataUri(DOCX, samplePlainZip())],
      ["a plain ZIP declared as a ZIP", dataUri("application/zip", samplePlainZip())],
      ["an OLE file without a Word stream declared as DOC", dataUri(DOC, sampleOleWithoutWord())],
      ["a PDF declared as something else", dataUri("application/octet-stream", samplePdf())],
      ["nothing", dataUri("image/png", new Uint8Array(0))]
    ]
    for (const [what, file] of refused) {
      const r = await createProof(t, file)
      expect(r.status, `${what}: ${r.text}`).toBe(400)
      expectNamed(r, "file")
    }
    expect(await countProofs(t)).toBe(before)
  })

  it("a DOCX is a ZIP holding word/document.xml that its [Content_Types].xml names a Word document: declaring one is not enough (400)", async () => {
    const before = await countProofs(t)
    for (const [what, bytes] of [["declared, not held", sampleDeclaredDocx()], ["held, not declared", sampleUndeclaredDocx()]] as const) {
      const r = await createProof(t, dataUri(DOCX, bytes))
      expect(r.status, `${what}: ${r.text}`).toBe(400)
      expectNamed(r, "file")
    }
    expect(await countProofs(t)).toBe(before)
    const word = await createProof(t, dataUri(DOCX, sampleDocx()))
    expect(word.status, word.text).toBe(201)
    expect(word.body.media_type).toBe(DOCX)
  })

  it("a data URI that is not base64, or not a data URI, is 400 naming file", async () => {
    const before = await countProofs(t)
    for (const file of [
      `data:image/png,${encodeURIComponent(Buffer.from(samplePng()).toString("latin1"))}`,
      "data:image/png;base64,***not base64***",
      `data:image/png;base64,${base64(samplePng())}!`,
      `data:;base64,${base64(samplePng())}`,
      base64(samplePng()),
      `https://example.com/proof.png`,
      ""
    ]) {
      const r = await createProof(t, file)
      expect(r.status, `${file.slice(0, 40)}: ${r.text}`).toBe(400)
      expectNamed(r, "file")
    }
    expectNamed(await t.call("POST", "/v1/consents/proofs", { body: { organization_id: t.org.id } }), "file")
    expect(await countProofs(t)).toBe(before)
  })

  it("5 MiB + 1 byte decoded is 400 naming file", async () => {
    const r = await createProof(t, dataUri("image/png", largePng(5 * MiB + 1)))
    expectNamed(r, "file")
  }, 60_000)
})

describe("proofs: body limits", () => {
  let t: TestTenant
  beforeAll(async () => {
    t = await tenant(FEATURES)
  })

  it("a 12 MiB consent event with two inline proofs is taken; the same body on another route is 413", async () => {
    const first = largePng(Math.floor(4.5 * MiB))
    const second = largePng(Math.floor(4.5 * MiB) - 1)
    const body = JSON.stringify(
      eventBody(t, { proofs: [{ file: dataUri("image/png", first) }, { file: dataUri("image/png", second) }] })
    )
    expect(Buffer.byteLength(body)).toBeGreaterThan(12 * MiB)
    expect(Buffer.byteLength(body)).toBeLessThan(16 * MiB)
    const r = await call(server.url, "POST", "/v1/consents/events", { token: t.token, rawBody: body })
    expect(r.status, r.text.slice(0, 500)).toBe(201)
    expect(r.body.proofs_id).toHaveLength(2)
    const sizes = []
    for (const id of r.body.proofs_id) {
      const p = await t.call("GET", `/v1/consents/proofs/${id}`)
      expect(p.status, p.text.slice(0, 300)).toBe(200)
      sizes.push([p.body.size, p.body.sha256])
    }
    expect(sizes).toEqual([
      [first.length, sha256(first)],
      [second.length, sha256(second)]
    ])

    // Every other route keeps 1 MiB.
    expect413(await call(server.url, "POST", "/v1/properties", { token: t.token, rawBody: body }))
    expect413(await call(server.url, "POST", "/v1/consents/users", { token: t.token, rawBody: body }))
  }, 60_000)

  it("over 16 MiB on proofs (and on events) is 413; exactly 16 MiB is read, and refused for its decoded size", async () => {
    const before = await countProofs(t)
    expect413(await call(server.url, "POST", "/v1/consents/proofs", {
      token: t.token,
      rawBody: bodyOfSize({ organization_id: t.org.id }, 16 * MiB + 1)
    }))
    expect413(await call(server.url, "POST", "/v1/consents/events", {
      token: t.token,
      rawBody: bodyOfSize(eventBody(t), 16 * MiB + 1, "metadata", "")
    }))
    const exact = await call(server.url, "POST", "/v1/consents/proofs", {
      token: t.token,
      rawBody: bodyOfSize({ organization_id: t.org.id }, 16 * MiB)
    })
    expectNamed(exact, "file")
    expect(await countProofs(t)).toBe(before)
  }, 60_000)
})

describe("proofs: who may", () => {
  it("needs versions_and_proofs (403 without), for proofs and for events naming proofs", async () => {
    const t = await tenant({ consents_api: true })
    expect403(await createProof(t, dataUri("image/png", samplePng())))
    expect403(await t.call("GET", "/v1/consents/proofs"))
    expect403(await t.call("POST", "/v1/consents/events", { body: eventBody(t, { proofs: [{ file: dataUri("image/png", samplePng()) }] }) }))
    expect403(await t.call("POST", "/v1/consents/events", { body: eventBody(t, { proofs_id: ["anything"] }) }))
    // Events without proofs are not concerned.
    const e = await createEvent(t)
    expect(e).toMatchObject({ proofs_id: [], notice_text_content_id: null })
    expect403(await t.call("PATCH", `/v1/consents/events/${e.id}`, { body: { proofs: [{ file: dataUri("image/png", samplePng()) }] } }))
  })

  it("another organization's proof is 404 on get, /file and remove, and is not listed", async () => {
    const a = await tenant(FEATURES)
    const b = await tenant(FEATURES)
    const p = await proofOf(a, "application/pdf", samplePdf())
    expect404(await b.call("GET", `/v1/consents/proofs/${p.id}`))
    expect404(await b.call("GET", `/v1/consents/proofs/${p.id}/file`))
    expect404(await b.call("DELETE", `/v1/consents/proofs/${p.id}`))
    expect((await b.call("GET", "/v1/consents/proofs")).body.total).toBe(0)
    expect403(await b.call("POST", "/v1/consents/proofs", { body: { organization_id: a.org.id, file: dataUri("image/png", samplePng()) } }))
    expect403(await b.call("GET", `/v1/consents/proofs?organization_id=${a.org.id}`))
    // Still there for its own organization, and for the operator.
    expect((await a.call("GET", `/v1/consents/proofs/${p.id}`)).status).toBe(200)
    const byOperator = await op.call("GET", `/v1/consents/proofs/${p.id}?organization_id=${a.org.id}`)
    expect(byOperator.status, byOperator.text).toBe(200)
    expect(byOperator.body.sha256).toBe(sha256(samplePdf()))
  })

  it("a proof an event names cannot be removed (409) until the event is gone; then remove answers it (200)", async () => {
    const t = await tenant(FEATURES)
    const p = await proofOf(t, "image/gif", sampleGif())
    const e = await createEvent(t, { proofs_id: [p.id] })
    expect409(await t.call("DELETE", `/v1/consents/proofs/${p.id}`))
    expect((await t.call("GET", `/v1/consents/proofs/${p.id}`)).status).toBe(200)
    expect((await t.call("DELETE", `/v1/consents/events/${e.id}`)).status).toBe(200)
    const removed = await t.call("DELETE", `/v1/consents/proofs/${p.id}`)
    expect(removed.status, removed.text).toBe(200)
    expect(removed.body).toMatchObject({ id: p.id, organization_id: t.org.id, media_type: "image/gif", sha256: p.sha256, size: p.size })
    expect404(await t.call("GET", `/v1/consents/proofs/${p.id}`))
    expect404(await t.call("GET", `/v1/consents/proofs/${p.id}/file`))
    expect404(await t.call("DELETE", `/v1/consents/proofs/${p.id}`))
  })
})

describe("consent events with proofs", () => {
  let t: TestTenant
  let other: TestTenant
  beforeAll(async () => {
    t = await tenant(FEATURES)
    other = await tenant(FEATURES)
  })

  it("an event shows proofs_id ([] when none) and notice_text_content_id (null when none)", async () => {
    const e = await createEvent(t)
    expect(e.proofs_id).toEqual([])
    expect(e.notice_text_content_id).toBeNull()
    const got = await t.call("GET", `/v1/consents/events/${e.id}`)
    expect(got.body).toMatchObject({ proofs_id: [], notice_text_content_id: null })
    const listed = await t.call("GET", `/v1/consents/events?id=${e.id}`)
    expect(listed.body.data[0]).toMatchObject({ proofs_id: [], notice_text_content_id: null })
  })

  it("proofs_id naming the organization's proofs is taken and shown", async () => {
    const p1 = await proofOf(t, "application/pdf", samplePdf())
    const p2 = await proofOf(t, "image/jpeg", sampleJpeg())
    const e = await createEvent(t, { proofs_id: [p1.id, p2.id] })
    expect(e.proofs_id).toEqual([p1.id, p2.id])
    expect((await t.call("GET", `/v1/consents/events/${e.id}`)).body.proofs_id).toEqual([p1.id, p2.id])
  })

  it("proofs_id naming another organization's proof or an unknown one is 400 naming proofs_id, and records nothing", async () => {
    const mine = await proofOf(t, "image/png", samplePng())
    const theirs = await proofOf(other, "image/png", samplePng())
    const ouid = unique("crm")
    for (const ids of [[theirs.id], [mine.id, theirs.id], ["no-such-proof"]]) {
      const r = await t.call("POST", "/v1/consents/events", { body: { ...eventBody(t), user: { organization_user_id: ouid }, proofs_id: ids } })
      expectNamed(r, "proofs_id")
    }
    expect((await t.call("GET", `/v1/consents/events?organization_user_id=${ouid}`)).body.total).toBe(0)
    const e = await createEvent(t)
    expectNamed(await t.call("PATCH", `/v1/consents/events/${e.id}`, { body: { proofs_id: [theirs.id] } }), "proofs_id")
    expect((await t.call("GET", `/v1/consents/events/${e.id}`)).body.proofs_id).toEqual([])
  })

  it("inline proofs are created with the event, their ids appended to proofs_id", async () => {
    const named = await proofOf(t, "image/gif", sampleGif())
    const before = await countProofs(t)
    const e = await createEvent(t, {
      proofs_id: [named.id],
      proofs: [{ file: dataUri("image/png", samplePng()) }, { file: dataUri("application/pdf", samplePdf()) }]
    })
    expect(e).not.toHaveProperty("proofs")
    expect(e.proofs_id).toHaveLength(3)
    expect(e.proofs_id[0]).toBe(named.id)
    const made = []
    for (const id of e.proofs_id.slice(1)) {
      const p = await t.call("GET", `/v1/consents/proofs/${id}`)
      expect(p.status, p.text).toBe(200)
      made.push([p.body.organization_id, p.body.media_type, p.body.sha256, p.body.file])
    }
    expect(made).toEqual([
      [t.org.id, "image/png", sha256(samplePng()), dataUri("image/png", samplePng())],
      [t.org.id, "application/pdf", sha256(samplePdf()), dataUri("application/pdf", samplePdf())]
    ])
    expect(await countProofs(t)).toBe(before + 2)
  })

  it("an inline proof that is refused refuses the event: nothing is recorded", async () => {
    const before = await countProofs(t)
    const ouid = unique("crm")
    const r = await t.call("POST", "/v1/consents/events", {
      body: {
        ...eventBody(t),
        user: { organization_user_id: ouid },
        proofs: [{ file: dataUri("image/png", samplePng()) }, { file: dataUri("application/pdf", sampleText()) }]
      }
    })
    expectNamed(r, "proofs")
    expect(await countProofs(t)).toBe(before)
    expect((await t.call("GET", `/v1/consents/events?organization_user_id=${ouid}`)).body.total).toBe(0)
  })

  it("a patch adds proofs by id and inline", async () => {
    const e = await createEvent(t)
    const p = await proofOf(t, "image/png", samplePng())
    const patched = await t.call("PATCH", `/v1/consents/events/${e.id}`, { body: { proofs_id: [p.id] } })
    expect(patched.status, patched.text).toBe(200)
    expect(patched.body.proofs_id).toEqual([p.id])
    const inline = await t.call("PATCH", `/v1/consents/events/${e.id}`, { body: { proofs: [{ file: dataUri(DOCX, sampleDocx()) }] } })
    expect(inline.status, inline.text).toBe(200)
    expect(inline.body.proofs_id).toHaveLength(2)
    expect(inline.body.proofs_id[0]).toBe(p.id)
    const made = await t.call("GET", `/v1/consents/proofs/${inline.body.proofs_id[1]}`)
    expect(made.body).toMatchObject({ media_type: DOCX, sha256: sha256(sampleDocx()) })
    expect((await t.call("GET", `/v1/consents/events/${e.id}`)).body.proofs_id).toEqual(inline.body.proofs_id)
  })
})

describe("consent events naming the notice wording", () => {
  let t: TestTenant
  beforeAll(async () => {
    t = await tenant(FEATURES)
  })

  const newContent = async (x: TestTenant, content: string) => {
    const text = await x.call("POST", "/v1/widgets/notices/texts", { body: { organization_id: x.org.id, name: unique("Banner") } })
    expect(text.status, text.text).toBe(201)
    const c = await x.call("POST", "/v1/widgets/notices/texts-contents", { body: { organization_id: x.org.id, text_id: text.body.id, content } })
    expect(c.status, c.text).toBe(201)
    return c.body
  }
  const approve = async (id: string) => {
    const r = await op.call("PATCH", `/v1/widgets/notices/texts-contents/${id}`, { body: { status: "approved" } })
    expect(r.status, r.text).toBe(200)
    return r.body
  }

  it("an approved content of the organization is taken and shown, on create and patch", async () => {
    const c = await approve((await newContent(t, "We use cookies to measure the audience.")).id)
    const e = await createEvent(t, { notice_text_content_id: c.id })
    expect(e.notice_text_content_id).toBe(c.id)
    expect((await t.call("GET", `/v1/consents/events/${e.id}`)).body.notice_text_content_id).toBe(c.id)
    const later = await createEvent(t)
    const patched = await t.call("PATCH", `/v1/consents/events/${later.id}`, { body: { notice_text_content_id: c.id } })
    expect(patched.status, patched.text).toBe(200)
    expect(patched.body.notice_text_content_id).toBe(c.id)
  })

  it("a submitted content, another organization's approved one, or an unknown id is 400 naming notice_text_content_id", async () => {
    const submitted = await newContent(t, "Not yet reviewed.")
    expect(submitted.status).toBe("submitted")
    const other = await tenant(FEATURES)
    const theirs = await approve((await newContent(other, "Their wording.")).id)
    const ouid = unique("crm")
    for (const id of [submitted.id, theirs.id, "no-such-content"]) {
      const r = await t.call("POST", "/v1/consents/events", { body: { ...eventBody(t), user: { organization_user_id: ouid }, notice_text_content_id: id } })
      expectNamed(r, "notice_text_content_id")
    }
    expect((await t.call("GET", `/v1/consents/events?organization_user_id=${ouid}`)).body.total).toBe(0)
    const e = await createEvent(t)
    expectNamed(await t.call("PATCH", `/v1/consents/events/${e.id}`, { body: { notice_text_content_id: submitted.id } }), "notice_text_content_id")
    // Rejected is not approved either.
    const rejected = await newContent(t, "Rejected wording.")
    const r = await op.call("PATCH", `/v1/widgets/notices/texts-contents/${rejected.id}`, { body: { status: "rejected" } })
    expect(r.status, r.text).toBe(200)
    expectNamed(await t.call("PATCH", `/v1/consents/events/${e.id}`, { body: { notice_text_content_id: rejected.id } }), "notice_text_content_id")
  })
})

describe("proofs from browsers and apps", () => {
  const GUEST = { store_guest_cmp_consents: true, store_cmp_consents: true }

  it("a public key write may send inline proofs (201, the proof exists), never proofs_id (403)", async () => {
    const t = await tenant({ ...FEATURES, ...GUEST })
    const headers = { "x-public-api-key": t.org.public_api_key as string }
    const guest = (extra: Record<string, unknown>) => ({
      organization_id: t.org.id,
      user: { id: unique("device") },
      consents: { purposes: purposes(["analytics", true]) },
      ...extra
    })
    const r = await call(server.url, "POST", "/v1/consents/events", {
      headers,
      body: guest({ proofs: [{ file: dataUri("image/png", samplePng()) }] })
    })
    expect(r.status, r.text).toBe(201)
    expect(r.body).not.toHaveProperty("proofs_id")
    const e = await t.call("GET", `/v1/consents/events/${r.body.id}`)
    expect(e.body.proofs_id).toHaveLength(1)
    const p = await t.call("GET", `/v1/consents/proofs/${e.body.proofs_id[0]}`)
    expect(p.status, p.text).toBe(200)
    expect(p.body).toMatchObject({ organization_id: t.org.id, media_type: "image/png", sha256: sha256(samplePng()) })

    const own = await proofOf(t, "image/png", samplePng())
    const events = (await t.call("GET", "/v1/consents/events?$limit=0")).body.total
    expect403(await call(server.url, "POST", "/v1/consents/events", { headers, body: guest({ proofs_id: [own.id] }) }))
    expect((await t.call("GET", "/v1/consents/events?$limit=0")).body.total).toBe(events)
  })

  it("a public key write keeps its 64 KiB: a larger inline proof is 413", async () => {
    const t = await tenant({ ...FEATURES, ...GUEST })
    const events = (await t.call("GET", "/v1/consents/events?$limit=0")).body.total
    const r = await call(server.url, "POST", "/v1/consents/events", {
      headers: { "x-public-api-key": t.org.public_api_key as string },
      body: {
        organization_id: t.org.id,
        user: { id: unique("device") },
        consents: { purposes: purposes(["analytics", true]) },
        proofs: [{ file: dataUri("image/png", largePng(64 * 1024)) }]
      }
    })
    expect413(r)
    expect((await t.call("GET", "/v1/consents/events?$limit=0")).body.total).toBe(events)
    expect(await countProofs(t)).toBe(0)
  })

  it("a public key write of an organization without versions_and_proofs may not send proofs (403)", async () => {
    const t = await tenant({ consents_api: true, ...GUEST })
    const r = await call(server.url, "POST", "/v1/consents/events", {
      headers: { "x-public-api-key": t.org.public_api_key as string },
      body: {
        organization_id: t.org.id,
        user: { id: unique("device") },
        consents: { purposes: purposes(["analytics", true]) },
        proofs: [{ file: dataUri("image/png", samplePng()) }]
      }
    })
    expect403(r)
  })

  it("a consent token write may send inline proofs, never proofs_id (403)", async () => {
    const t = await tenant({ ...FEATURES, ...GUEST })
    const ouid = unique("crm")
    const token = await t.call("POST", "/v1/consents/tokens", { body: { organization_id: t.org.id, organization_user_id: ouid } })
    expect(token.status, token.text).toBe(201)
    const asUser = as(server.url, token.body.id_token as string)
    const body = (extra: Record<string, unknown>) => ({
      organization_id: t.org.id,
      user: { organization_user_id: ouid },
      consents: { purposes: purposes(["analytics", true]) },
      ...extra
    })
    const r = await asUser("POST", "/v1/consents/events", { body: body({ proofs: [{ file: dataUri("application/pdf", samplePdf()) }] }) })
    expect(r.status, r.text).toBe(201)
    const e = await t.call("GET", `/v1/consents/events/${r.body.id}`)
    expect(e.body.proofs_id).toHaveLength(1)
    const p = await t.call("GET", `/v1/consents/proofs/${e.body.proofs_id[0]}`)
    expect(p.body).toMatchObject({ media_type: "application/pdf", sha256: sha256(samplePdf()) })
    const own = await proofOf(t, "image/png", samplePng())
    expect403(await asUser("POST", "/v1/consents/events", { body: body({ proofs_id: [own.id] }) }))
  })
})
