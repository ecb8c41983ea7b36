import { describe, expect, it } from "vitest"
import { as, call, expect400, type Tenant, unique } from "./helpers.js"
import { type TestTenant, useServer } from "./fixture.js"

/**
 * Global Privacy Control: the browser's `Sec-GPC: 1` (or a body's `gpc: true`) on a consent
 * event, whoever writes it; the user's signal per regulation, which holds until the person
 * overrides it; and what the signal refuses where the regulation's policy names purposes.
 */

const { server, tenant } = useServer({ webhookAllowHosts: ["127.0.0.1"] })

const BACKEND = { consents_api: true, webhooks: true }
const purposes = (...list: Array<[string, boolean]>) => list.map(([id, enabled]) => ({ id, enabled }))
const GPC = { "sec-gpc": "1" }

const event = (t: Tenant, ouid: string, p: Array<{ id: string; enabled: boolean }>, extra: Record<string, unknown> = {}) => ({
  organization_id: t.org.id,
  user: { organization_user_id: ouid },
  consents: { purposes: p },
  ...extra
})

const created = async (r: { status: number; text: string; body: any }) => {
  expect(r.status, r.text).toBe(201)
  return r.body
}

const userOf = async (t: TestTenant, ouid: string, regulation = "gdpr") => {
  const r = await t.call("GET", `/v1/consents/users/${encodeURIComponent(ouid)}?$by_organization_user_id=true&regulation=${regulation}`)
  expect(r.status, r.text).toBe(200)
  return r.body
}

const eventOf = async (t: TestTenant, id: string) => {
  const r = await t.call("GET", `/v1/consents/events/${id}`)
  expect(r.status, r.text).toBe(200)
  return r.body
}

describe("GPC on consent events", () => {
  it("Sec-GPC: 1 sets gpc, whatever the body says; the body alone may set it; neither: false", async () => {
    const t = await tenant(BACKEND)
    const signalled = await created(await t.call("POST", "/v1/consents/events", { body: event(t, unique("u"), purposes(["a", true])), headers: GPC }))
    expect(signalled.gpc).toBe(true)
    const notCleared = await created(
      await t.call("POST", "/v1/consents/events", { body: event(t, unique("u"), purposes(["a", true]), { gpc: false }), headers: GPC })
    )
    expect(notCleared.gpc).toBe(true)
    const byBody = await created(await t.call("POST", "/v1/consents/events", { body: event(t, unique("u"), purposes(["a", true]), { gpc: true }) }))
    expect(byBody.gpc).toBe(true)
    const none = await created(await t.call("POST", "/v1/consents/events", { body: event(t, unique("u"), purposes(["a", true])) }))
    expect(none.gpc).toBe(false)
    // Another value of the header is no signal.
    const zero = await created(
      await t.call("POST", "/v1/consents/events", { body: event(t, unique("u"), purposes(["a", true])), headers: { "sec-gpc": "0" } })
    )
    expect(zero.gpc).toBe(false)
    for (const e of [signalled, notCleared, byBody, none, zero]) {
      expect(e).not.toHaveProperty("gpc_conflict")
      expect(e).not.toHaveProperty("gpc_override")
      expect((await eventOf(t, e.id)).gpc).toBe(e.gpc)
    }
    expect((await t.call("GET", `/v1/consents/events?gpc=true&organization_id=${t.org.id}&$limit=0`)).body.total).toBe(3)
  })

  it("gpc_conflict is output only; gpc and gpc_override must be booleans", async () => {
    const t = await tenant(BACKEND)
    for (const [field, value] of [["gpc_conflict", true], ["gpc", "yes"], ["gpc_override", 1]] as const) {
      const r = await t.call("POST", "/v1/consents/events", { body: event(t, unique("u"), purposes(["a", true]), { [field]: value }) })
      expect400(r)
      expect(Object.keys(r.body.errors ?? {}), r.text).toContain(field)
    }
  })

  it("through the public key and a consent token, the browser's header counts the same", async () => {
    const t = await tenant({ ...BACKEND, store_guest_cmp_consents: true, store_cmp_consents: true })
    const guest = await call(server.url, "POST", "/v1/consents/events", {
      body: { organization_id: t.org.id, user: { id: unique("device") }, consents: { purposes: purposes(["a", true]) } },
      headers: { "x-public-api-key": t.org.public_api_key, ...GPC }
    })
    expect(guest.status, guest.text).toBe(201)
    expect((await eventOf(t, guest.body.id)).gpc).toBe(true)

    const ouid = unique("crm")
    const token = await t.call("POST", "/v1/consents/tokens", { body: { organization_id: t.org.id, organization_user_id: ouid } })
    expect(token.status, token.text).toBe(201)
    const asUser = as(server.url, token.body.id_token)
    const own = await asUser("POST", "/v1/consents/events", {
      body: { organization_id: t.org.id, user: { organization_user_id: ouid }, consents: { purposes: purposes(["a", true]) } },
      headers: GPC
    })
    expect(own.status, own.text).toBe(201)
    expect((await eventOf(t, own.body.id)).gpc).toBe(true)
    expect((await userOf(t, ouid)).gpc).toBe(true)
  })
})

describe("GPC on users", () => {
  it("holds for the regulation from the first event that had it until an event with gpc_override", async () => {
    const t = await tenant(BACKEND)
    const ouid = unique("u")
    await created(await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["a", true])) }))
    expect((await userOf(t, ouid)).gpc).toBe(false)
    await created(await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["a", true])), headers: GPC }))
    expect((await userOf(t, ouid)).gpc).toBe(true)
    // A later event from a device without the signal does not end it.
    await created(await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["b", true])) }))
    expect((await userOf(t, ouid)).gpc).toBe(true)
    // Another regulation has its own.
    expect((await userOf(t, ouid, "ccpa")).gpc).toBe(false)
    await created(await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["b", true]), { gpc_override: true }) }))
    expect((await userOf(t, ouid)).gpc).toBe(false)
    const list = await t.call("GET", `/v1/consents/users?organization_user_id=${ouid}`)
    expect(list.body.data[0].gpc).toBe(false)
  })

  it("is recomputed like the choices when an event is removed", async () => {
    const t = await tenant(BACKEND)
    const ouid = unique("u")
    await created(await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["a", true])) }))
    const signalled = await created(await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["a", true])), headers: GPC }))
    expect((await userOf(t, ouid)).gpc).toBe(true)
    const removed = await t.call("DELETE", `/v1/consents/events/${signalled.id}`)
    expect(removed.status, removed.text).toBe(200)
    expect((await userOf(t, ouid)).gpc).toBe(false)
  })

  it("webhook messages carry the event's gpc and the user's, and the consent log stays valid", async () => {
    const t = await tenant(BACKEND)
    const hook = await t.call("POST", "/v1/webhooks", { body: { organization_id: t.org.id, url: "http://127.0.0.1:9/hook" } })
    expect(hook.status, hook.text).toBe(201)
    const ouid = unique("u")
    await created(await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["a", true])) }))
    await created(await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["a", false])), headers: GPC }))
    const log = await t.call("GET", `/v1/webhooks/deliveries?webhook_id=${hook.body.id}&$sort[created_at]=1&$limit=100`)
    expect(log.status, log.text).toBe(200)
    const payloads = (log.body.data as Array<any>).map((d) => d.payload)
    const createdEvents = payloads.filter((p) => p.type === "event.created")
    expect(createdEvents.map((p) => p.parameters.entity.gpc)).toEqual([false, true])
    const updated = payloads.find((p) => p.type === "user.updated")
    expect(updated.parameters.old_entity.gpc).toBe(false)
    expect(updated.parameters.new_entity.gpc).toBe(true)
    const verify = await t.call("GET", `/v1/consents/log/verify?organization_id=${t.org.id}`)
    expect(verify.status, verify.text).toBe(200)
    expect(verify.body.valid, verify.text).toBe(true)
  })
})

describe("what the signal refuses under the regulation's policy", () => {
  const policy = async (t: TestTenant, body: Record<string, unknown>) => {
    const r = await t.call("POST", "/v1/consents/policies", {
      body: { organization_id: t.org.id, consent_duration: 13, consent_duration_unit: "months", ...body }
    })
    expect(r.status, r.text).toBe(201)
    return r.body
  }
  const choices = (e: any) => Object.fromEntries((e.consents.purposes as Array<any>).map((p) => [p.id, p.enabled]))

  it("records the policy's gpc_purpose_ids refused while the signal holds, added when absent", async () => {
    const t = await tenant(BACKEND)
    await policy(t, { regulation: "gdpr", gpc_purpose_ids: ["ads", "sale"] })
    const ouid = unique("u")
    const first = await created(
      await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["ads", true], ["analytics", true])), headers: GPC })
    )
    expect(choices(first)).toEqual({ ads: false, analytics: true, sale: false })
    expect(first).not.toHaveProperty("gpc_conflict")
    // The user's signal holds: a later event without it is held to it too.
    const second = await created(await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["sale", true])) }))
    expect(second.gpc).toBe(false)
    expect(choices(second)).toEqual({ sale: false, ads: false })
    const user = await userOf(t, ouid)
    expect(user.gpc).toBe(true)
    expect(Object.fromEntries(user.consents.purposes.map((p: any) => [p.id, p.enabled]))).toEqual({ ads: false, analytics: true, sale: false })
  })

  it("a new user's first event: the user starts with the choices as recorded, not as sent", async () => {
    const t = await tenant(BACKEND)
    await policy(t, { regulation: "gdpr", gpc_purpose_ids: ["ads"] })
    const refused = unique("u")
    const first = await created(
      await t.call("POST", "/v1/consents/events", { body: event(t, refused, purposes(["ads", true], ["analytics", true])), headers: GPC })
    )
    expect(choices(first)).toEqual({ ads: false, analytics: true })
    const user = await userOf(t, refused)
    expect(user.gpc).toBe(true)
    expect(user.consents.purposes).toEqual(first.consents.purposes)
    // Overridden at once: the choices as sent, and no signal held.
    const chose = unique("u")
    const overridden = await created(await t.call("POST", "/v1/consents/events", {
      body: event(t, chose, purposes(["ads", true]), { gpc_override: true }),
      headers: GPC
    }))
    expect(overridden.gpc_conflict).toBe(true)
    const chooser = await userOf(t, chose)
    expect(chooser.gpc).toBe(false)
    expect(chooser.consents.purposes).toEqual(purposes(["ads", true]))
  })

  it("gpc_override keeps the choices as sent, marks the conflict and ends the user's signal", async () => {
    const t = await tenant(BACKEND)
    await policy(t, { regulation: "gdpr", gpc_purpose_ids: ["ads"] })
    const ouid = unique("u")
    await created(await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["ads", true])), headers: GPC }))
    const chosen = await created(
      await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["ads", true]), { gpc_override: true }), headers: GPC })
    )
    expect(choices(chosen)).toEqual({ ads: true })
    expect(chosen.gpc).toBe(true)
    expect(chosen.gpc_conflict).toBe(true)
    expect((await eventOf(t, chosen.id)).gpc_conflict).toBe(true)
    expect((await t.call("GET", `/v1/consents/events?gpc_conflict=true&organization_id=${t.org.id}&$limit=0`)).body.total).toBe(1)
    const user = await userOf(t, ouid)
    expect(user.gpc).toBe(false)
    expect(user.consents.purposes).toEqual(purposes(["ads", true]))
    // Ended: a later event without the signal is recorded as sent.
    const later = await created(await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["ads", true])) }))
    expect(choices(later)).toEqual({ ads: true })
  })

  it("refuses nothing without a policy, or under another regulation's", async () => {
    const t = await tenant(BACKEND)
    const none = await created(await t.call("POST", "/v1/consents/events", { body: event(t, unique("u"), purposes(["ads", true])), headers: GPC }))
    expect(choices(none)).toEqual({ ads: true })
    await policy(t, { regulation: "ccpa", gpc_purpose_ids: ["ads"] })
    const gdpr = await created(await t.call("POST", "/v1/consents/events", { body: event(t, unique("u"), purposes(["ads", true])), headers: GPC }))
    expect(choices(gdpr)).toEqual({ ads: true })
    const ccpa = await created(
      await t.call("POST", "/v1/consents/events", { body: event(t, unique("u"), purposes(["ads", true]), { regulation: "ccpa" }), headers: GPC })
    )
    expect(choices(ccpa)).toEqual({ ads: false })
  })

  it("a policy's change applies to the next event", async () => {
    const t = await tenant(BACKEND)
    const p = await policy(t, { regulation: "gdpr", gpc_purpose_ids: [] })
    const ouid = unique("u")
    expect(choices(await created(await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["ads", true])), headers: GPC }))))
      .toEqual({ ads: true })
    const patched = await t.call("PATCH", `/v1/consents/policies/${p.id}`, { body: { gpc_purpose_ids: ["ads"] } })
    expect(patched.status, patched.text).toBe(200)
    expect(choices(await created(await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["ads", true])) }))))
      .toEqual({ ads: false })
  })
})
