import { TC_STRING } from "@cmp/test-support/consent-strings"
import { beforeAll, describe, expect, it } from "vitest"
import { as, expect400, expect403, expect404, expect409, type Tenant, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * Consent events and users through HTTP: the effective status per regulation, the pending
 * rules of spec section 6, and the outbox messages each change queues for the webhooks.
 */

const { server, op, tenant } = useServer({ webhookAllowHosts: ["127.0.0.1"] })

/** A tenant with the consents API (and webhooks) switched on by the operator. */
const consentTenant = (features: Record<string, boolean> = { consents_api: true, webhooks: true }) => tenant(features)

/** Purposes compared by id: their order is not part of the effective status. */
const byId = (list: Array<{ id: string }>) => [...list].sort((a, b) => a.id.localeCompare(b.id))

const purposes = (...list: Array<[string, boolean]>) => list.map(([id, enabled]) => ({ id, enabled }))

const event = (t: Tenant, ouid: string, p: Array<{ id: string; enabled: boolean }>, extra: Record<string, unknown> = {}) => ({
  organization_id: t.org.id,
  user: { organization_user_id: ouid },
  consents: { purposes: p },
  ...extra
})

const deliveries = async (t: Tenant & { call: ReturnType<typeof as> }, webhookId: string) => {
  const r = await t.call("GET", `/v1/webhooks/deliveries?webhook_id=${webhookId}&$sort[created_at]=1&$limit=1000`)
  expect(r.status, r.text).toBe(200)
  return r.body.data as Array<any>
}

const hook = async (t: Tenant & { call: ReturnType<typeof as> }, body: Record<string, unknown> = {}) => {
  const r = await t.call("POST", "/v1/webhooks", { body: { organization_id: t.org.id, url: "http://127.0.0.1:9/hook", ...body } })
  expect(r.status, r.text).toBe(201)
  return r.body
}

describe("consents: gating", () => {
  it("needs the consents_api premium feature (403 until the operator enables it)", async () => {
    const t = await op.tenant()
    const asT = as(server.url, t.token)
    expect403(await asT("POST", "/v1/consents/events", { body: event(t, "u1", purposes(["p1", true])) }))
    expect403(await asT("GET", "/v1/consents/users"))
    expect403(await asT("POST", "/v1/webhooks", { body: { organization_id: t.org.id, url: "https://example.com/h" } }))
  })

  it("consent requests do not count against api_requests", async () => {
    const t = await consentTenant()
    const quota = await op.quotaOf(t.org.id)
    // Re-login after the quota change so the counter reads the new limit.
    expect((await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { api_requests: 2 } })).status).toBe(200)
    server.clock.advance(6_000)
    for (let i = 0; i < 6; i++) {
      const r = await t.call("POST", "/v1/consents/events", { body: event(t, `q${i}`, purposes(["p1", true])) })
      expect(r.status, r.text).toBe(201)
    }
    expect((await t.call("GET", "/v1/keys")).status).toBe(200)
    expect((await t.call("GET", "/v1/keys")).status).toBe(200)
    expect((await t.call("GET", "/v1/keys")).status).toBe(429)
  })
})

describe("consents: effective status", () => {
  let t: Awaited<ReturnType<typeof consentTenant>>
  beforeAll(async () => {
    t = await consentTenant()
  })

  it("the first event naming an unknown user creates it; later events merge in created_at order", async () => {
    const ouid = unique("user")
    const e1 = await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["p1", true], ["p2", true])) })
    expect(e1.status, e1.text).toBe(201)
    expect(e1.body).toMatchObject({ status: "confirmed", regulation: "gdpr", organization_id: t.org.id, version: 1 })
    const userId = e1.body.user.id
    expect(e1.body.user.organization_user_id).toBe(ouid)

    server.clock.advance(1000)
    const e2 = await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["p2", false], ["p3", true])) })
    expect(e2.body.user.id).toBe(userId)

    const user = await t.call("GET", `/v1/consents/users/${userId}`)
    expect(user.status).toBe(200)
    expect(user.body.organization_user_id).toBe(ouid)
    expect(user.body.regulation).toBe("gdpr")
    expect(user.body.consents.purposes).toEqual(purposes(["p1", true], ["p2", false], ["p3", true]))

    // An import of an older event does not override a newer choice.
    const old = await t.call("POST", "/v1/consents/events", {
      body: event(t, ouid, purposes(["p3", false], ["p4", true]), { created_at: "2020-01-01T00:00:00.000Z" })
    })
    expect(old.status, old.text).toBe(201)
    expect(old.body.created_at).toBe("2020-01-01T00:00:00.000Z")
    const after = await t.call("GET", `/v1/consents/users/${userId}`)
    expect(byId(after.body.consents.purposes)).toEqual(byId(purposes(["p4", true], ["p1", true], ["p2", false], ["p3", true])))

    // Deleting an event recomputes the user from the events that remain.
    expect((await t.call("DELETE", `/v1/consents/events/${e2.body.id}`)).status).toBe(200)
    const recomputed = await t.call("GET", `/v1/consents/users/${userId}`)
    expect(byId(recomputed.body.consents.purposes)).toEqual(byId(purposes(["p4", true], ["p1", true], ["p2", true], ["p3", false])))

    // The organization's own id finds the user too; an unknown one is 404.
    const byOwn = await t.call("GET", `/v1/consents/users/${encodeURIComponent(ouid)}?$by_organization_user_id=true`)
    expect(byOwn.status, byOwn.text).toBe(200)
    expect(byOwn.body.id).toBe(userId)
    expect404(await t.call("GET", `/v1/consents/users/nobody?$by_organization_user_id=true`))
    // Events of a user can be listed by its id.
    const mine = await t.call("GET", `/v1/consents/events?user_id=${userId}`)
    expect(mine.body.total).toBe(2)
  })

  it("regulations are kept apart", async () => {
    const ouid = unique("user")
    await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["p1", true])) })
    const ccpa = await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["p1", false]), { regulation: "ccpa" }) })
    const user = await t.call("GET", `/v1/consents/users/${ccpa.body.user.id}`)
    expect(user.body.regulation).toBe("gdpr")
    expect(user.body.consents.purposes).toEqual(purposes(["p1", true]))
    const asCcpa = await t.call("GET", `/v1/consents/users/${ccpa.body.user.id}?regulation=ccpa`)
    expect(asCcpa.body).toMatchObject({ id: user.body.id, regulation: "ccpa", version: user.body.version })
    expect(asCcpa.body.consents.purposes).toEqual(purposes(["p1", false]))
    // A regulation the user never chose for: nothing chosen, every list present.
    const none = await t.call("GET", `/v1/consents/users/${ccpa.body.user.id}?regulation=lgpd`)
    expect(none.body.regulation).toBe("lgpd")
    expect(none.body.consents).toEqual({ purposes: [], vendors: { enabled: [], disabled: [], enabled_li: [], disabled_li: [] } })
  })

  it("pending events count only once confirmed; confirmed is final", async () => {
    const ouid = unique("user")
    const first = await t.call("POST", "/v1/consents/events", { body: event(t, ouid, purposes(["p1", true])) })
    const userId = first.body.user.id
    server.clock.advance(1000)
    const pending = await t.call("POST", "/v1/consents/events", {
      body: event(t, ouid, purposes(["p1", false]), { status: "pending_approval" })
    })
    expect(pending.body.status).toBe("pending_approval")
    expect((await t.call("GET", `/v1/consents/users/${userId}`)).body.consents.purposes).toEqual(purposes(["p1", true]))
    const confirmed = await t.call("PATCH", `/v1/consents/events/${pending.body.id}`, { body: { status: "confirmed" } })
    expect(confirmed.status, confirmed.text).toBe(200)
    expect((await t.call("GET", `/v1/consents/users/${userId}`)).body.consents.purposes).toEqual(purposes(["p1", false]))
    const back = await t.call("PATCH", `/v1/consents/events/${pending.body.id}`, { body: { status: "pending_approval" } })
    expect400(back)
    expect(back.body.errors).toHaveProperty("status")
  })

  it("a client-chosen event id that exists is 409; a user needs an id or organization_user_id", async () => {
    const id = unique("evt")
    expect((await t.call("POST", "/v1/consents/events", { body: { ...event(t, unique("u"), purposes(["p", true])), id } })).status).toBe(201)
    expect409(await t.call("POST", "/v1/consents/events", { body: { ...event(t, unique("u"), purposes(["p", true])), id } }))
    expect400(await t.call("POST", "/v1/consents/events", { body: { organization_id: t.org.id, user: {}, consents: {} } }))
  })

  it("users: create with initial consents, stale version is 409, remove erases the events", async () => {
    const ouid = unique("user")
    const u = await t.call("POST", "/v1/consents/users", {
      body: { organization_id: t.org.id, organization_user_id: ouid, consents: { purposes: purposes(["p1", true]) } }
    })
    expect(u.status, u.text).toBe(201)
    expect(u.body.consents.purposes).toEqual(purposes(["p1", true]))
    expect((await t.call("GET", `/v1/consents/events?user_id=${u.body.id}`)).body.total).toBe(1)
    expect409(await t.call("POST", "/v1/consents/users", { body: { organization_id: t.org.id, organization_user_id: ouid } }))
    const patched = await t.call("PATCH", `/v1/consents/users/${u.body.id}`, { body: { country: "FR", version: 1 } })
    expect(patched.body).toMatchObject({ country: "FR", version: 2 })
    expect409(await t.call("PATCH", `/v1/consents/users/${u.body.id}`, { body: { country: "DE", version: 1 } }))
    expect((await t.call("DELETE", `/v1/consents/users/${u.body.id}`)).status).toBe(200)
    expect((await t.call("GET", `/v1/consents/events?user_id=${u.body.id}`)).body.total).toBe(0)
  })

  it("the totals of users, events and messages follow every create and an erasure, as a find counting rows one by one does", async () => {
    const t = await consentTenant()
    const w = await hook(t)
    const totals = async (path: string) => {
      // A condition on created_at is not one the kept counts answer: those rows are counted one by one.
      const kept = await t.call("GET", `${path}$limit=1000`)
      const read = await t.call("GET", `${path}created_at[$gte]=1970-01-01T00:00:00.000Z&$limit=1`)
      expect(kept.status, kept.text).toBe(200)
      expect(read.body.total).toBe(kept.body.total)
      expect(kept.body.data.length).toBe(kept.body.total)
      return kept.body.total as number
    }
    const [u1, u2] = [unique("u"), unique("u")]
    const first = await t.call("POST", "/v1/consents/events", { body: event(t, u1, purposes(["p", true])) })
    await t.call("POST", "/v1/consents/events", { body: event(t, u1, purposes(["p", false])) })
    await t.call("POST", "/v1/consents/events", { body: event(t, u2, purposes(["p", true])) })
    expect([await totals("/v1/consents/users?"), await totals("/v1/consents/events?")]).toEqual([2, 3])
    const messages = await totals(`/v1/webhooks/deliveries?webhook_id=${w.id}&`)
    expect(messages).toBe((await deliveries(t, w.id)).length)
    expect((await t.call("DELETE", `/v1/consents/users/${first.body.user.id}`)).status).toBe(200)
    expect([await totals("/v1/consents/users?"), await totals("/v1/consents/events?")]).toEqual([1, 1])
    // The erasure's user.deleted message is one more.
    expect(await totals(`/v1/webhooks/deliveries?webhook_id=${w.id}&`)).toBe(messages + 1)
  })

  it("another organization sees none of it", async () => {
    const b = await consentTenant()
    const mine = await t.call("POST", "/v1/consents/events", { body: event(t, unique("u"), purposes(["p", true])) })
    expect404(await b.call("GET", `/v1/consents/events/${mine.body.id}`))
    expect404(await b.call("GET", `/v1/consents/users/${mine.body.user.id}`))
    expect404(await b.call("PATCH", `/v1/consents/events/${mine.body.id}`, { body: { status: "confirmed" } }))
    expect404(await b.call("DELETE", `/v1/consents/users/${mine.body.user.id}`))
    expect403(await b.call("GET", `/v1/consents/events?organization_id=${t.org.id}`))
    expect403(await b.call("POST", "/v1/consents/events", { body: event(t, "x", purposes(["p", true])) }))
    const list = await b.call("GET", "/v1/consents/events")
    expect(list.body.data.every((e: any) => e.organization_id === b.org.id)).toBe(true)
  })
})

describe("consent users: one regulation at a time", () => {
  const empty = { purposes: [], vendors: { enabled: [], disabled: [], enabled_li: [], disabled_li: [] } }

  it("find shows every user in the regulation asked for (a view, not a filter)", async () => {
    const t = await consentTenant()
    const g = await t.call("POST", "/v1/consents/events", { body: event(t, unique("g"), purposes(["p", true])) })
    const c = await t.call("POST", "/v1/consents/events", {
      body: event(t, unique("c"), purposes(["p", false]), { regulation: "ccpa", consents: { purposes: purposes(["p", false]), vendors: { enabled_li: ["v9"] }, tcfcs: TC_STRING } })
    })
    const byId = (list: Array<any>) => Object.fromEntries(list.map((u) => [u.id, u]))
    const gdpr = await t.call("GET", "/v1/consents/users?$sort[created_at]=1")
    expect(gdpr.status, gdpr.text).toBe(200)
    expect(gdpr.body.total).toBe(2)
    expect(byId(gdpr.body.data)[g.body.user.id]).toMatchObject({ regulation: "gdpr", consents: { ...empty, purposes: purposes(["p", true]) } })
    expect(byId(gdpr.body.data)[c.body.user.id]).toMatchObject({ regulation: "gdpr", consents: empty })
    const ccpa = await t.call("GET", "/v1/consents/users?regulation=ccpa")
    expect(ccpa.body.total).toBe(2)
    expect(byId(ccpa.body.data)[g.body.user.id]).toMatchObject({ regulation: "ccpa", consents: empty })
    expect(byId(ccpa.body.data)[c.body.user.id].consents).toEqual({
      purposes: purposes(["p", false]),
      vendors: { enabled: [], disabled: [], enabled_li: ["v9"], disabled_li: [] },
      tcfcs: TC_STRING
    })
    // The view combines with real filters, $select and the look-up by the organization's own id.
    const one = await t.call("GET", `/v1/consents/users?regulation=ccpa&id=${c.body.user.id}&$select[]=consents`)
    expect(one.body.data).toEqual([{ id: c.body.user.id, consents: byId(ccpa.body.data)[c.body.user.id].consents }])
    const own = await t.call("GET", `/v1/consents/users/${c.body.user.organization_user_id}?$by_organization_user_id=true&regulation=ccpa`)
    expect(own.status, own.text).toBe(200)
    expect(own.body.consents.purposes).toEqual(purposes(["p", false]))
  })

  it("regulation takes equality only: operators, $sort, $select, $or and bad codes are 400", async () => {
    const t = await consentTenant()
    for (const q of [
      "regulation[$in][]=gdpr",
      "regulation[$ne]=gdpr",
      "regulation[]=gdpr&regulation[]=ccpa",
      "$sort[regulation]=1",
      "$select[]=regulation",
      "$or[0][regulation]=gdpr&$or[1][id]=x",
      "regulation=NOT%20A%20CODE"
    ]) {
      const r = await t.call("GET", `/v1/consents/users?${q}`)
      expect400(r)
      expect(JSON.stringify(r.body.errors), q).toMatch(/regulation/)
    }
    expect400(await t.call("GET", "/v1/consents/users/anyone?regulation[$in][]=gdpr"))
  })

  it("create and patch record their choices as one confirmed event of the regulation in the body", async () => {
    const t = await consentTenant()
    const w = await hook(t, { regulations: ["gdpr", "ccpa"] })
    const created = await t.call("POST", "/v1/consents/users", {
      body: { organization_id: t.org.id, organization_user_id: unique("u"), regulation: "ccpa", consents: { purposes: purposes(["ads", false]) } }
    })
    expect(created.status, created.text).toBe(201)
    expect(created.body).toMatchObject({ regulation: "ccpa", consents: { ...empty, purposes: purposes(["ads", false]) }, version: 1 })
    const id = created.body.id
    const ccpaEvents = await t.call("GET", `/v1/consents/events?user_id=${id}`)
    expect(ccpaEvents.body.data.map((e: any) => [e.regulation, e.status])).toEqual([["ccpa", "confirmed"]])
    expect((await t.call("GET", `/v1/consents/users/${id}`)).body).toMatchObject({ regulation: "gdpr", consents: empty })

    server.clock.advance(1000)
    const patched = await t.call("PATCH", `/v1/consents/users/${id}`, {
      body: { regulation: "gdpr", consents: { purposes: purposes(["ads", true]) }, country: "FR", version: 1 }
    })
    expect(patched.status, patched.text).toBe(200)
    // One write: the version moves by one, the answer shows the regulation the body named.
    expect(patched.body).toMatchObject({ regulation: "gdpr", country: "FR", version: 2, consents: { purposes: purposes(["ads", true]) } })
    const all = await t.call("GET", `/v1/consents/events?user_id=${id}&$sort[created_at]=1`)
    expect(all.body.data.map((e: any) => [e.regulation, e.status])).toEqual([["ccpa", "confirmed"], ["gdpr", "confirmed"]])
    const gdprEvent = all.body.data[1]
    expect(gdprEvent.consents).toEqual({ purposes: purposes(["ads", true]) })
    // The ccpa status is untouched.
    expect((await t.call("GET", `/v1/consents/users/${id}?regulation=ccpa`)).body.consents.purposes).toEqual(purposes(["ads", false]))

    const log = await deliveries(t, w.id)
    expect(log.map((d) => `${d.event_type}/${d.regulation}`)).toEqual([
      "user.created/ccpa",
      "event.created/ccpa",
      "event.created/gdpr",
      "user.updated/gdpr",
      // The country concerns every regulation the user has a status for.
      "user.updated/ccpa"
    ])
    const userCreated = log[0].payload.parameters.entity
    expect(userCreated).toEqual(created.body)
    const gdprUpdate = log[3].payload.parameters
    expect(gdprUpdate.source).toEqual(gdprEvent)
    expect(gdprUpdate.old_entity).toMatchObject({ regulation: "gdpr", consents: empty, version: 1 })
    expect(gdprUpdate.new_entity).toEqual(patched.body)
    expect(log[4].payload.parameters.new_entity).toMatchObject({ regulation: "ccpa", country: "FR", consents: { purposes: purposes(["ads", false]) } })

    // A patch naming a regulation without choices only chooses the view of its answer.
    const view = await t.call("PATCH", `/v1/consents/users/${id}`, { body: { regulation: "ccpa", metadata: { a: 1 } } })
    expect(view.body).toMatchObject({ regulation: "ccpa", version: 3, consents: { purposes: purposes(["ads", false]) } })
    expect((await t.call("GET", `/v1/consents/events?user_id=${id}`)).body.total).toBe(2)
    // Removing the user tells every regulation it had.
    expect((await t.call("DELETE", `/v1/consents/users/${id}?regulation=ccpa`)).body.regulation).toBe("ccpa")
    const tail = (await deliveries(t, w.id)).slice(-2).map((d) => `${d.event_type}/${d.regulation}`).sort()
    expect(tail).toEqual(["user.deleted/ccpa", "user.deleted/gdpr"])
  })
})

describe("outbox: which messages each change queues (spec section 6)", () => {
  it("a pending event: event.created always, user.created only for a new user, user.updated only on confirmation", async () => {
    const t = await consentTenant()
    const w = await hook(t)
    expect(w.signing_secret).toMatch(/^whsec_/)
    expect((await t.call("GET", `/v1/webhooks/${w.id}`)).body.signing_secret).toBeUndefined()
    const ouid = unique("user")

    const created = await t.call("POST", "/v1/consents/events", {
      body: event(t, ouid, purposes(["p1", true]), { status: "pending_approval" })
    })
    let log = await deliveries(t, w.id)
    expect(log.map((d) => d.event_type)).toEqual(["event.created", "user.created"])
    expect(log.every((d) => d.status === "pending" && d.regulation === "gdpr")).toBe(true)
    // `source` names who recorded it: here the tenant's client key.
    expect(log[0].payload).toEqual({
      type: "event.created",
      regulation: "gdpr",
      parameters: { source: { type: "api-key", id: t.key.id }, entity: created.body }
    })

    const pending2 = await t.call("POST", "/v1/consents/events", {
      body: event(t, ouid, purposes(["p1", false]), { status: "pending_approval" })
    })
    log = await deliveries(t, w.id)
    expect(log.map((d) => d.event_type)).toEqual(["event.created", "user.created", "event.created"])

    const userBefore = (await t.call("GET", `/v1/consents/users/${created.body.user.id}`)).body
    server.clock.advance(1000)
    const confirmed = await t.call("PATCH", `/v1/consents/events/${pending2.body.id}`, { body: { status: "confirmed" } })
    log = await deliveries(t, w.id)
    expect(log.map((d) => d.event_type)).toEqual(["event.created", "user.created", "event.created", "event.updated", "user.updated"])
    const updated = log[4].payload
    expect(updated.type).toBe("user.updated")
    expect(updated.parameters.source).toEqual(confirmed.body)
    expect(updated.parameters.old_entity).toEqual(userBefore)
    expect(updated.parameters.new_entity.consents.purposes).toEqual(purposes(["p1", false]))

    // Confirming a change that leaves the status as it is sends no user.updated.
    const same = await t.call("POST", "/v1/consents/events", {
      body: event(t, ouid, purposes(["p1", false]), { status: "pending_approval" })
    })
    await t.call("PATCH", `/v1/consents/events/${same.body.id}`, { body: { status: "confirmed" } })
    log = await deliveries(t, w.id)
    expect(log.slice(5).map((d) => d.event_type)).toEqual(["event.created", "event.updated"])

    // Deleting: event.deleted, and user.updated when the status changes; user.deleted.
    await t.call("DELETE", `/v1/consents/events/${pending2.body.id}`)
    await t.call("DELETE", `/v1/consents/events/${same.body.id}`)
    await t.call("DELETE", `/v1/consents/users/${created.body.user.id}`)
    log = await deliveries(t, w.id)
    expect(log.slice(7).map((d) => d.event_type)).toEqual(["event.deleted", "event.deleted", "user.updated", "user.deleted"])
  })

  it("filters by event type (none = all) and by regulation (gdpr unless more are listed)", async () => {
    const t = await consentTenant()
    const onlyUsers = await hook(t, { event_types: ["user.created", "user.updated"] })
    const multi = await hook(t, { regulations: ["gdpr", "ccpa"] })
    const off = await hook(t, { enabled: false })
    await t.call("POST", "/v1/consents/events", { body: event(t, unique("u"), purposes(["p", true])) })
    await t.call("POST", "/v1/consents/events", { body: event(t, unique("u"), purposes(["p", true]), { regulation: "ccpa" }) })
    expect((await deliveries(t, onlyUsers.id)).map((d) => [d.event_type, d.regulation])).toEqual([["user.created", "gdpr"]])
    expect((await deliveries(t, multi.id)).map((d) => [d.event_type, d.regulation])).toEqual([
      ["event.created", "gdpr"],
      ["user.created", "gdpr"],
      ["event.created", "ccpa"],
      ["user.created", "ccpa"]
    ])
    expect(await deliveries(t, off.id)).toEqual([])
  })

  it("flatten: the queued payload is one flat object keyed by path, purposes by id", async () => {
    const t = await consentTenant()
    const flat = await hook(t, { flatten: true, event_types: ["event.created"] })
    const e = await t.call("POST", "/v1/consents/events", { body: event(t, "flat-user", purposes(["analytics", true], ["ads", false])) })
    const [d] = await deliveries(t, flat.id)
    expect(d.payload.type).toBe("event.created")
    expect(d.payload.regulation).toBe("gdpr")
    expect(d.payload.parameters__entity__id).toBe(e.body.id)
    expect(d.payload.parameters__entity__consents__purposes__analytics__enabled).toBe(true)
    expect(d.payload.parameters__entity__consents__purposes__ads__enabled).toBe(false)
    expect(Object.values(d.payload).every((v) => v === null || typeof v !== "object")).toBe(true)
  })

  it("webhook configuration: https only (http for allowed hosts), private addresses refused, secrets write-only", async () => {
    const t = await consentTenant()
    const post = (body: Record<string, unknown>) => t.call("POST", "/v1/webhooks", { body: { organization_id: t.org.id, ...body } })
    expect400(await post({ url: "http://example.com/hook" }))
    expect400(await post({ url: "https://10.0.0.1/hook" }))
    expect400(await post({ url: "https://169.254.169.254/latest/meta-data" }))
    expect400(await post({ url: "https://[::1]/hook" }))
    expect400(await post({ url: "https://localhost/hook" }))
    expect400(await post({ url: "https://user:pw@example.com/hook" }))
    const ok = await post({
      url: "https://example.com/hook",
      auth: { token_url: "https://auth.example.com/token", client_id: "cid", client_secret: "csecret" }
    })
    expect(ok.status, ok.text).toBe(201)
    expect(ok.body.auth).toEqual({ token_url: "https://auth.example.com/token", client_id: "cid" })
    expect(ok.text).not.toContain("csecret")
    const got = await t.call("GET", `/v1/webhooks/${ok.body.id}`)
    expect(got.text).not.toContain("csecret")
    expect(got.text).not.toContain(ok.body.signing_secret)
  })
})
