import { dataUri, samplePdf } from "@cmp/test-support/proof-samples"
import canonicalize from "canonicalize"
import { calculateJwkThumbprint, compactVerify, createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet } from "jose"
import { execFile } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { approvedContent, as, call, expect400, expect401, expect403, expect404, unique } from "./helpers.js"
import { type TestTenant, useServer } from "./fixture.js"

/**
 * Consent receipts (`GET /v1/consents/users/:id/receipt`): what a receipt says of a user's
 * consent for one regulation, the events behind it and how each was expressed, the digests of
 * the notice and the proofs, its JWS verified with `jose` against the published keys, and who
 * may read one.
 */

const unlimited = { publicRateLimit: { perKey: 1_000_000, perAddress: 1_000_000 } }
const { server, op, tenant } = useServer(unlimited)

const FEATURES = { consents_api: true, versions_and_proofs: true, store_cmp_consents: true, store_guest_cmp_consents: true }
const HEX64 = /^[0-9a-f]{64}$/
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const WORDING = "We use cookies to measure the audience of this site and, with your consent, to show you offers."
const RECEIPT_FIELDS = [
  "consent_state", "controller", "created_at", "events", "events_complete", "jurisdiction", "log_head", "organization_user_id",
  "pii_principal_id", "processing", "receipt_id", "record_id", "schema_version", "vendors"
]

const sha256 = (data: Uint8Array | string) => crypto.createHash("sha256").update(data).digest("hex")

/** Each event at its own second, so the merge order is the order written. */
const tick = () => server.clock.advance(1000)


const recorded = async (by: ReturnType<typeof as>, t: TestTenant, organizationUserId: string, extra: Record<string, unknown>) => {
  tick()
  const r = await by("POST", "/v1/consents/events", { body: { organization_id: t.org.id, user: { organization_user_id: organizationUserId }, ...extra } })
  expect(r.status, r.text).toBe(201)
  return r.body
}

const tokenOf = async (t: TestTenant, organizationUserId: string) => {
  const r = await t.call("POST", "/v1/consents/tokens", { body: { organization_id: t.org.id, organization_user_id: organizationUserId } })
  expect(r.status, r.text).toBe(201)
  return as(server.url, r.body.id_token as string)
}

const receiptOf = async (by: ReturnType<typeof as>, path: string) => {
  const r = await by("GET", path)
  expect(r.status, r.text).toBe(200)
  expect(Object.keys(r.body).sort()).toEqual(["jws", "receipt"])
  return r.body as { receipt: Record<string, any>; jws: string }
}

const jwks = async (): Promise<JSONWebKeySet> => {
  const r = await call(server.url, "GET", "/v1/consents/receipts/jwks")
  expect(r.status, r.text).toBe(200)
  expect(r.headers.get("cache-control")).toBe("public, max-age=60")
  return r.body as JSONWebKeySet
}

/** The JWS verifies with `jose` against the published keys, and signs the receipt's RFC 8785 JSON. */
const expectSigned = async (answer: { receipt: unknown; jws: string }, keys: JSONWebKeySet) => {
  const header = decodeProtectedHeader(answer.jws)
  expect(header.alg).toBe("EdDSA")
  const key = keys.keys.find((k) => k.kid === header.kid)
  expect(key, `key ${header.kid} is published`).toBeDefined()
  expect(await calculateJwkThumbprint(key!, "sha256")).toBe(header.kid)
  const verified = await compactVerify(answer.jws, createLocalJWKSet(keys), { algorithms: ["EdDSA"] })
  expect(new TextDecoder().decode(verified.payload)).toBe(canonicalize(answer.receipt))
  return header.kid!
}

describe("GET /v1/consents/users/:id/receipt", () => {
  it("lists the events behind the state, oldest first: given, withdrawn through a consent token, withdrawn by a delegate, refused", async () => {
    const t = await tenant(FEATURES)
    const ouid = unique("customer")
    const content = await approvedContent(op, t, WORDING)
    const pdf = samplePdf("I agree.")
    const e1 = await recorded(t.call, t, ouid, {
      consents: {
        purposes: [{ id: "analytics", enabled: true }, { id: "ads", enabled: true }, { id: "measure", enabled: false, enabled_li: true }],
        vendors: { enabled: ["v1"] }
      },
      notice_text_content_id: content.id,
      proofs: [{ file: dataUri("application/pdf", pdf) }]
    })
    const user = (await t.call("GET", `/v1/consents/users/${ouid}?$by_organization_user_id=true`)).body
    const first = await receiptOf(t.call, `/v1/consents/users/${user.id}/receipt`)
    expect(first.receipt.consent_state).toBe("given")

    const own = await tokenOf(t, ouid)
    const e2 = await recorded(own, t, ouid, { consents: { purposes: [{ id: "analytics", enabled: false }] } })
    const e3 = await recorded(t.call, t, ouid, {
      consents: { purposes: [{ id: "ads", enabled: false }], vendors: { disabled: ["v1"] } },
      delegate: { id: "agent-7", name: "Support" }
    })
    const e4 = await recorded(t.call, t, ouid, { consents: { purposes: [{ id: "analytics", enabled: false }] } })
    // The method is kept, not shown on the event.
    const read = await t.call("GET", `/v1/consents/events/${e2.id}`)
    expect(read.status, read.text).toBe(200)
    expect(Object.keys(read.body)).not.toContain("expression_method")

    const answer = await receiptOf(t.call, `/v1/consents/users/${user.id}/receipt`)
    const r = answer.receipt
    expect(Object.keys(r).sort()).toEqual(RECEIPT_FIELDS)
    expect(r.schema_version).toBe("urn:cmp:consent-receipt:1")
    expect(r.receipt_id).not.toBe(first.receipt.receipt_id)
    expect(r.record_id).toMatch(UUID)
    expect(r.record_id).toBe(first.receipt.record_id)
    expect(r.created_at).toBe(new Date(server.clock.millis).toISOString())
    expect(r.pii_principal_id).toBe(user.id)
    expect(r.organization_user_id).toBe(ouid)
    expect(r.controller).toEqual({ id: t.org.id, name: t.org.name, ...(t.org.website ? { url: t.org.website } : {}) })
    expect(r.jurisdiction).toBe("gdpr")
    expect(r.consent_state).toBe("refused")
    expect(r.processing).toEqual([
      { purpose_id: "analytics", legal_basis: "consent", state: "refused" },
      { purpose_id: "ads", legal_basis: "consent", state: "refused" },
      { purpose_id: "measure", legal_basis: "consent", state: "refused" },
      { purpose_id: "measure", legal_basis: "legitimate_interest", state: "given" }
    ])
    expect(r.vendors).toEqual({ enabled: [], disabled: ["v1"], enabled_li: [], disabled_li: [] })
    expect(r.events_complete).toBe(true)
    expect(r.events).toEqual([
      {
        event_id: e1.id,
        event_time: e1.created_at,
        state: "given",
        expression_method: "api",
        expressed_by: "controller",
        gpc: false,
        notice_text_content_id: content.id,
        notice_sha256: sha256(WORDING),
        proofs_sha256: [sha256(pdf)]
      },
      { event_id: e2.id, event_time: e2.created_at, state: "withdrawn", expression_method: "consent_token", expressed_by: "data_subject", gpc: false, proofs_sha256: [] },
      { event_id: e3.id, event_time: e3.created_at, state: "withdrawn", expression_method: "api", expressed_by: "delegate", gpc: false, proofs_sha256: [] },
      { event_id: e4.id, event_time: e4.created_at, state: "refused", expression_method: "api", expressed_by: "controller", gpc: false, proofs_sha256: [] }
    ])
    // The head of the log as it stands: nothing was written since.
    const verified = await t.call("GET", "/v1/consents/log/verify")
    expect(verified.status, verified.text).toBe(200)
    expect(r.log_head).toMatch(HEX64)
    expect(r.log_head).toBe(verified.body.head)

    const keys = await jwks()
    for (const k of keys.keys) {
      expect(Object.keys(k).sort()).toEqual(["alg", "crv", "kid", "kty", "use", "x"])
      expect(k).toMatchObject({ kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig" })
    }
    await expectSigned(answer, keys)
    await expectSigned(first, keys)

    // The same user by the organization's own id: the same record.
    const byOwnId = await receiptOf(t.call, `/v1/consents/users/${ouid}/receipt?$by_organization_user_id=true&regulation=gdpr`)
    expect(byOwnId.receipt.record_id).toBe(r.record_id)
    expect(byOwnId.receipt.events).toEqual(r.events)
  })

  it("lists only the events that still explain the state, and says older ones were left out", async () => {
    const t = await tenant(FEATURES)
    const ouid = unique("customer")
    await recorded(t.call, t, ouid, { consents: { purposes: [{ id: "analytics", enabled: false }] } })
    const latest = await recorded(t.call, t, ouid, { consents: { purposes: [{ id: "analytics", enabled: true }] } })
    const { receipt } = await receiptOf(t.call, `/v1/consents/users/${ouid}/receipt?$by_organization_user_id=true`)
    expect(receipt.events.map((e: any) => [e.event_id, e.state])).toEqual([[latest.id, "given"]])
    expect(receipt.events_complete).toBe(false)
  })

  it("a user without an event of the regulation has the state none; another regulation is another record", async () => {
    const t = await tenant(FEATURES)
    const ouid = unique("customer")
    await recorded(t.call, t, ouid, { consents: { purposes: [{ id: "analytics", enabled: true }] } })
    const gdpr = await receiptOf(t.call, `/v1/consents/users/${ouid}/receipt?$by_organization_user_id=true`)
    const ccpa = await receiptOf(t.call, `/v1/consents/users/${ouid}/receipt?$by_organization_user_id=true&regulation=ccpa`)
    expect(ccpa.receipt).toMatchObject({ jurisdiction: "ccpa", consent_state: "none", processing: [], events: [], events_complete: true })
    expect(ccpa.receipt.vendors).toEqual({ enabled: [], disabled: [], enabled_li: [], disabled_li: [] })
    expect(ccpa.receipt.record_id).not.toBe(gdpr.receipt.record_id)
    await expectSigned(ccpa, await jwks())
  })

  it("an event through the public key was expressed by the person", async () => {
    const t = await tenant(FEATURES)
    const device = unique("device")
    tick()
    const written = await call(server.url, "POST", "/v1/consents/events", {
      rawBody: JSON.stringify({ organization_id: t.org.id, user: { id: device }, consents: { purposes: [{ id: "analytics", enabled: true }] } }),
      headers: { "x-public-api-key": t.org.public_api_key }
    })
    expect(written.status, written.text).toBe(201)
    const { receipt } = await receiptOf(t.call, `/v1/consents/users/${device}/receipt`)
    expect(receipt.organization_user_id).toBeUndefined()
    expect(receipt.events).toEqual([{
      event_id: written.body.id,
      event_time: written.body.created_at,
      state: "given",
      expression_method: "public_key",
      expressed_by: "data_subject",
      gpc: false,
      proofs_sha256: []
    }])
    // A public key reads no receipt, by header or by query.
    expect401(await call(server.url, "GET", `/v1/consents/users/${device}/receipt`, { headers: { "x-public-api-key": t.org.public_api_key } }))
    expect401(await call(server.url, "GET", `/v1/consents/users/${device}/receipt?public_api_key=${encodeURIComponent(t.org.public_api_key)}`))
  })

  it("a consent token reads its own user's receipt only; another organization's key finds nothing", async () => {
    const t = await tenant(FEATURES)
    const mine = unique("customer")
    const theirs = unique("customer")
    await recorded(t.call, t, mine, { consents: { purposes: [{ id: "analytics", enabled: true }] } })
    const other = await recorded(t.call, t, theirs, { consents: { purposes: [{ id: "analytics", enabled: true }] } })
    const own = await tokenOf(t, mine)
    const user = (await t.call("GET", `/v1/consents/users/${mine}?$by_organization_user_id=true`)).body
    const byId = await receiptOf(own, `/v1/consents/users/${user.id}/receipt`)
    expect(byId.receipt.pii_principal_id).toBe(user.id)
    await receiptOf(own, `/v1/consents/users/${mine}/receipt?$by_organization_user_id=true`)
    expect404(await own("GET", `/v1/consents/users/${other.user.id}/receipt`))
    expect404(await own("GET", `/v1/consents/users/${theirs}/receipt?$by_organization_user_id=true`))

    const stranger = await tenant(FEATURES)
    expect404(await stranger.call("GET", `/v1/consents/users/${user.id}/receipt`))
    expect404(await stranger.call("GET", `/v1/consents/users/${mine}/receipt?$by_organization_user_id=true`))
    // The operator reads any organization's.
    await receiptOf(op.call, `/v1/consents/users/${user.id}/receipt?organization_id=${t.org.id}`)
  })

  it("needs consents_api; a bad regulation or an unknown parameter is a 400", async () => {
    const t = await tenant(FEATURES)
    const ouid = unique("customer")
    const e = await recorded(t.call, t, ouid, { consents: { purposes: [{ id: "analytics", enabled: true }] } })
    expect400(await t.call("GET", `/v1/consents/users/${e.user.id}/receipt?regulation=GDPR`))
    expect400(await t.call("GET", `/v1/consents/users/${e.user.id}/receipt?purpose=analytics`))
    expect400(await t.call("GET", `/v1/consents/users/${e.user.id}/receipt?$by_organization_user_id=maybe`))
    const off = await op.featuresOf(t.org.id)
    expect((await op.call("PATCH", `/v1/premium-features/${off.id}`, { body: { consents_api: false } })).status).toBe(200)
    expect403(await t.call("GET", `/v1/consents/users/${e.user.id}/receipt`))
  })
})

describe("docs/receipts.md", () => {
  it("its offline check runs as written: valid for a served receipt, refused once the receipt is changed", async () => {
    const doc = fs.readFileSync(path.join(import.meta.dirname, "..", "..", "..", "..", "docs", "receipts.md"), "utf8")
    const script = /```js\n([\s\S]*?)```/.exec(doc)?.[1]
    expect(script).toBeDefined()
    const t = await tenant(FEATURES)
    const ouid = unique("customer")
    await recorded(t.call, t, ouid, { consents: { purposes: [{ id: "analytics", enabled: true }] } })
    const answer = await receiptOf(t.call, `/v1/consents/users/${ouid}/receipt?$by_organization_user_id=true`)
    // Inside the package, so `jose` and `canonicalize` resolve as a reader's installation would.
    const dir = fs.mkdtempSync(path.join(import.meta.dirname, "..", "..", ".receipt-doc-"))
    try {
      fs.writeFileSync(path.join(dir, "verify-receipt.mjs"), script!)
      fs.writeFileSync(path.join(dir, "jwks.json"), JSON.stringify(await jwks()))
      const run = () =>
        new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
          execFile(process.execPath, ["verify-receipt.mjs"], { cwd: dir }, (error, stdout, stderr) =>
            resolve({ code: error ? (error as { code?: number }).code ?? 1 : 0, stdout, stderr }))
        })
      fs.writeFileSync(path.join(dir, "receipt.json"), JSON.stringify(answer))
      const valid = await run()
      expect(valid.code, valid.stderr).toBe(0)
      expect(valid.stdout).toBe(`valid, signed by ${decodeProtectedHeader(answer.jws).kid}: given for gdpr since ${answer.receipt.events[0].event_time}\n`)
      fs.writeFileSync(path.join(dir, "receipt.json"), JSON.stringify({ ...answer, receipt: { ...answer.receipt, consent_state: "refused" } }))
      const changed = await run()
      expect(changed.code).not.toBe(0)
      expect(changed.stderr).toContain("the receipt is not what was signed")
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 30_000)
})
