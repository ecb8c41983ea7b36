import { describe, expect, it } from "vitest"
import { approvedContent, expect400 } from "./helpers.js"
import { type TestTenant, useServer } from "./fixture.js"

/**
 * A user's `consent_state` and `expires_at` for the regulation shown, computed when read from
 * the organization's policy for it: a policy's change applies at once, with nothing rewritten.
 */

const { server, op, tenant } = useServer()

const FULL = { consents_api: true }
const DAY = 86_400_000
const ago = (ms: number) => new Date(server.clock.millis - ms).toISOString()
const after = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString()

const event = async (t: TestTenant, user: string, created_at: string, purposes: Array<[string, boolean]>, extra: Record<string, unknown> = {}) => {
  const r = await t.call("POST", "/v1/consents/events", {
    body: {
      organization_id: t.org.id,
      created_at,
      user: { organization_user_id: user },
      consents: { purposes: purposes.map(([id, enabled]) => ({ id, enabled })) },
      ...extra
    }
  })
  expect(r.status, r.text).toBe(201)
  return r.body
}
const read = async (t: TestTenant, user: string, regulation = "gdpr") => {
  const r = await t.call("GET", `/v1/consents/users/${user}?$by_organization_user_id=true&regulation=${regulation}`)
  expect(r.status, r.text).toBe(200)
  return r.body
}
const policy = async (t: TestTenant, body: Record<string, unknown>) => {
  const r = await t.call("POST", "/v1/consents/policies", { body: { organization_id: t.org.id, ...body } })
  expect(r.status, r.text).toBe(201)
  return r.body
}

describe("a user's consent state", () => {
  it("without a policy: none, given or refused, and no expires_at", async () => {
    const t = await tenant(FULL)
    await event(t, "u-given", ago(DAY), [["analytics", true]])
    await event(t, "u-refused", ago(DAY), [["analytics", false]])
    const given = await read(t, "u-given")
    expect(given.consent_state).toBe("given")
    expect(given).not.toHaveProperty("expires_at")
    expect((await read(t, "u-refused")).consent_state).toBe("refused")
    expect((await read(t, "u-given", "ccpa")).consent_state).toBe("none")
    // Output only.
    expect400(await t.call("PATCH", `/v1/consents/users/${given.id}`, { body: { consent_state: "given" } }))
  })

  it("expires after the consent duration, a refusal after the denied one; essential purposes alone are a refusal", async () => {
    const t = await tenant(FULL)
    await policy(t, {
      consent_duration: 2,
      consent_duration_unit: "days",
      denied_consent_duration: 1,
      denied_consent_duration_unit: "days",
      essential_purpose_ids: ["essential"]
    })
    const recent = ago(DAY + 3_600_000)
    await event(t, "g", recent, [["analytics", true]])
    await event(t, "r", recent, [["essential", true], ["analytics", false]])
    await event(t, "old", ago(3 * DAY), [["analytics", true]])
    expect(await read(t, "g")).toMatchObject({ consent_state: "given", expires_at: after(recent, 2 * DAY) })
    expect(await read(t, "r")).toMatchObject({ consent_state: "expired", expires_at: after(recent, DAY) })
    expect((await read(t, "old")).consent_state).toBe("expired")
    expect((await read(t, "g", "ccpa"))).not.toHaveProperty("expires_at")
    // A newer event starts a new period.
    await event(t, "old", ago(1000), [["analytics", true]])
    expect(await read(t, "old")).toMatchObject({ consent_state: "given", expires_at: after(ago(1000), 2 * DAY) })
    // The page of a find shows the same.
    const page = await t.call("GET", "/v1/consents/users?$sort[organization_user_id]=1")
    expect(page.body.data.map((u: { organization_user_id: string; consent_state: string }) => [u.organization_user_id, u.consent_state]))
      .toStrictEqual([["g", "given"], ["old", "given"], ["r", "expired"]])
  })

  it("a policy's change applies at once to every user; removing it leaves none, given or refused", async () => {
    const t = await tenant(FULL)
    const p = await policy(t, { consent_duration: 1, consent_duration_unit: "days" })
    const at = ago(2 * DAY)
    await event(t, "u", at, [["analytics", true]])
    expect((await read(t, "u")).consent_state).toBe("expired")
    const patched = await t.call("PATCH", `/v1/consents/policies/${p.id}`, { body: { consent_duration: 1, consent_duration_unit: "months" } })
    expect(patched.status, patched.text).toBe(200)
    const u = await read(t, "u")
    expect(u.consent_state).toBe("given")
    expect(Date.parse(u.expires_at)).toBeGreaterThan(server.clock.millis)
    const cutoff = await t.call("PATCH", `/v1/consents/policies/${p.id}`, { body: { recollect_before: ago(DAY) } })
    expect(cutoff.status, cutoff.text).toBe(200)
    expect((await read(t, "u")).consent_state).toBe("recollect")
    expect((await t.call("DELETE", `/v1/consents/policies/${p.id}`)).status).toBe(200)
    const without = await read(t, "u")
    expect(without.consent_state).toBe("given")
    expect(without).not.toHaveProperty("expires_at")
  })

  it("recollect when the policy's notice text gets a newer approved content than the last event names", async () => {
    const t = await tenant(FULL)
    const text = await t.call("POST", "/v1/widgets/notices/texts", { body: { organization_id: t.org.id, name: "Banner" } })
    const content = async (words: string) => (await approvedContent(op, t, words, text.body.id)).id as string
    const v1 = await content("We use cookies.")
    await policy(t, { consent_duration: 13, consent_duration_unit: "months", notice_text_id: text.body.id, recollect_on_new_content: true })
    await event(t, "named", ago(1000), [["analytics", true]], { notice_text_content_id: v1 })
    await event(t, "unnamed", ago(1000), [["analytics", true]])
    expect((await read(t, "named")).consent_state).toBe("given")
    // An event naming no content of the text counts as older than every approved one.
    expect((await read(t, "unnamed")).consent_state).toBe("recollect")
    await content("We use cookies, and now more of them.")
    expect((await read(t, "named")).consent_state).toBe("recollect")
  })
})
