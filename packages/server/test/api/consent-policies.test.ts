import { describe, expect, it } from "vitest"
import { expect400, expect403, expect404, expect409 } from "./helpers.js"
import { type TestTenant, useServer } from "./fixture.js"

/**
 * Consent policies: one per organization and regulation, behind `consents_api`, their fields
 * checked as the contract says, and read on every consent write through a copy this process
 * drops as soon as a policy changes.
 */

const { op, tenant } = useServer()

const FULL = { consents_api: true }
const base = (t: TestTenant, extra: Record<string, unknown> = {}) => ({
  organization_id: t.org.id,
  consent_duration: 13,
  consent_duration_unit: "months",
  ...extra
})
const create = (t: TestTenant, extra: Record<string, unknown> = {}) => t.call("POST", "/v1/consents/policies", { body: base(t, extra) })

describe("consents/policies", () => {
  it("create, get, find, patch and remove, with the defaults", async () => {
    const t = await tenant(FULL)
    const created = await create(t, { regulation: "ccpa" })
    expect(created.status, created.text).toBe(201)
    expect(created.body).toMatchObject({
      organization_id: t.org.id,
      regulation: "ccpa",
      consent_duration: 13,
      consent_duration_unit: "months",
      recollect_on_new_content: false,
      gpc_purpose_ids: [],
      essential_purpose_ids: [],
      version: 1
    })
    const id = created.body.id as string
    expect((await t.call("GET", `/v1/consents/policies/${id}`)).body).toStrictEqual(created.body)
    const found = await t.call("GET", "/v1/consents/policies?regulation=ccpa")
    expect(found.status, found.text).toBe(200)
    expect(found.body.data.map((p: { id: string }) => p.id)).toStrictEqual([id])
    const patched = await t.call("PATCH", `/v1/consents/policies/${id}`, {
      body: { denied_consent_duration: 30, denied_consent_duration_unit: "days", essential_purpose_ids: ["essential"], gpc_purpose_ids: ["ads"] }
    })
    expect(patched.status, patched.text).toBe(200)
    expect(patched.body).toMatchObject({ denied_consent_duration: 30, denied_consent_duration_unit: "days", essential_purpose_ids: ["essential"], gpc_purpose_ids: ["ads"], version: 2 })
    expect((await t.call("PUT", `/v1/consents/policies/${id}`, { body: base(t) })).status).toBe(405)
    expect((await t.call("DELETE", `/v1/consents/policies/${id}`)).status).toBe(200)
    expect404(await t.call("GET", `/v1/consents/policies/${id}`))
  })

  it("regulation defaults to gdpr; a second policy for one regulation is a 409, another regulation is not", async () => {
    const t = await tenant(FULL)
    const first = await create(t)
    expect(first.status, first.text).toBe(201)
    expect(first.body.regulation).toBe("gdpr")
    expect409(await create(t, { regulation: "gdpr", consent_duration: 6 }))
    expect((await create(t, { regulation: "lgpd" })).status).toBe(201)
    // Another organization has its own.
    const other = await tenant(FULL)
    expect((await create(other)).status).toBe(201)
    const lgpd = (await t.call("GET", "/v1/consents/policies?regulation=lgpd")).body.data[0]
    expect409(await t.call("PATCH", `/v1/consents/policies/${lgpd.id}`, { body: { regulation: "gdpr" } }))
  })

  it("needs consents_api", async () => {
    const t = await tenant({})
    expect403(await create(t))
  })

  it("refuses bad units, durations that are not positive integers, timestamps and purpose lists that are not", async () => {
    const t = await tenant(FULL)
    for (const bad of [
      { consent_duration_unit: "weeks" },
      { consent_duration: 0 },
      { consent_duration: -3 },
      { consent_duration: 1.5 },
      { consent_duration: "13" },
      { denied_consent_duration: 0, denied_consent_duration_unit: "days" },
      { denied_consent_duration_unit: "years", denied_consent_duration: 1 },
      { denied_consent_duration: 3 },
      { denied_consent_duration_unit: "days" },
      { recollect_before: "yesterday" },
      { essential_purpose_ids: "analytics" },
      { gpc_purpose_ids: [1] },
      { recollect_on_new_content: "yes" },
      { unknown_field: true }
    ]) {
      const r = await create(t, bad)
      expect400(r)
    }
    const omitted = await t.call("POST", "/v1/consents/policies", { body: { organization_id: t.org.id, consent_duration: 1 } })
    expect400(omitted)
    expect(omitted.body.errors).toHaveProperty("consent_duration_unit")
  })

  it("notice_text_id must name a notice text of the organization", async () => {
    const t = await tenant(FULL)
    const other = await tenant(FULL)
    const text = await other.call("POST", "/v1/widgets/notices/texts", { body: { organization_id: other.org.id, name: "Banner" } })
    expect(text.status, text.text).toBe(201)
    const theirs = await create(t, { notice_text_id: text.body.id })
    expect400(theirs)
    expect(theirs.body.errors).toHaveProperty("notice_text_id")
    expect400(await create(t, { notice_text_id: "no-such-text" }))
    const own = await t.call("POST", "/v1/widgets/notices/texts", { body: { organization_id: t.org.id, name: "Banner" } })
    const ok = await create(t, { notice_text_id: own.body.id, recollect_on_new_content: true })
    expect(ok.status, ok.text).toBe(201)
    expect400(await t.call("PATCH", `/v1/consents/policies/${ok.body.id}`, { body: { notice_text_id: text.body.id } }))
  })

  it("another organization's policy is not found", async () => {
    const t = await tenant(FULL)
    const other = await tenant(FULL)
    const theirs = await create(other)
    expect404(await t.call("GET", `/v1/consents/policies/${theirs.body.id}`))
    expect404(await t.call("PATCH", `/v1/consents/policies/${theirs.body.id}`, { body: { consent_duration: 1 } }))
    expect((await op.call("GET", `/v1/consents/policies/${theirs.body.id}`)).status).toBe(200)
  })
})
