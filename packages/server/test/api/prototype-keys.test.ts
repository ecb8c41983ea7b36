import { describe, expect, it } from "vitest"
import { useServer } from "./fixture.js"

/**
 * Values that become keys of a map (regulations, purpose ids, vendor ids, metadata keys) are
 * just values, whatever their name: one that is also the name of a property every JavaScript
 * object inherits must behave like `gdpr` or `analytics`.
 */

const { tenant } = useServer({ webhookAllowHosts: ["127.0.0.1"] })

const consentTenant = () => tenant({ consents_api: true, webhooks: true })

const names = ["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf", "__defineGetter__"]

/** Regulations are lower-case codes: a camel-case name is used as a key elsewhere, under `constructor`. */
const regulationFor = (name: string) => (name === name.toLowerCase() ? name : "constructor")

describe("prototype names as keys", () => {
  for (const name of names) {
    it(`"${name}" as regulation, purpose id, vendor id and metadata key: events, users, views, webhooks`, async () => {
      const t = await consentTenant()
      const regulation = regulationFor(name)
      const hook = await t.call("POST", "/v1/webhooks", {
        body: { organization_id: t.org.id, url: "http://127.0.0.1:9/hook", regulations: [regulation] }
      })
      expect(hook.status, hook.text).toBe(201)
      expect(hook.body.regulations).toEqual([regulation])
      const flat = await t.call("POST", "/v1/webhooks", {
        body: { organization_id: t.org.id, url: "http://127.0.0.1:9/flat", regulations: [regulation], flatten: true }
      })
      expect(flat.status, flat.text).toBe(201)

      const body = (enabled: boolean) => ({
        organization_id: t.org.id,
        regulation,
        metadata: { [name]: "m" },
        user: { organization_user_id: "proto-user", metadata: { [name]: 1 } },
        consents: {
          purposes: [{ id: name, enabled, metadata: { [name]: true } }, { id: "ads", enabled: true }],
          vendors: { enabled: [name], disabled_li: [name] }
        }
      })
      // The user exists with another regulation's status first, so the event's regulation is new to it.
      const before = await t.call("POST", "/v1/consents/events", {
        body: { organization_id: t.org.id, user: { organization_user_id: "proto-user" }, consents: { purposes: [{ id: "ads", enabled: false }] } }
      })
      expect(before.status, before.text).toBe(201)
      const unseen = await t.call("GET", `/v1/consents/users/${before.body.user.id}?regulation=${encodeURIComponent(regulation)}`)
      expect(unseen.status, unseen.text).toBe(200)
      expect(unseen.body).toMatchObject({ regulation, consents: { purposes: [], vendors: { enabled: [], disabled: [], enabled_li: [], disabled_li: [] } } })
      expect(unseen.body.consents.tcfcs).toBeUndefined()
      const first = await t.call("POST", "/v1/consents/events", { body: body(true) })
      expect(first.status, first.text).toBe(201)
      expect(first.body.regulation).toBe(regulation)
      expect(first.body.metadata).toEqual(JSON.parse(JSON.stringify({ [name]: "m" })))
      // The second event merges on top of the stored status of that regulation.
      const second = await t.call("POST", "/v1/consents/events", { body: body(false) })
      expect(second.status, second.text).toBe(201)

      const userId = first.body.user.id
      const seen = await t.call("GET", `/v1/consents/users/${userId}?regulation=${encodeURIComponent(regulation)}`)
      expect(seen.status, seen.text).toBe(200)
      expect(seen.body.regulation).toBe(regulation)
      expect(seen.body.consents.purposes.map((p: any) => [p.id, p.enabled])).toEqual([[name, false], ["ads", true]])
      expect(seen.body.consents.vendors).toEqual({ enabled: [name], disabled: [], enabled_li: [], disabled_li: [name] })
      // The gdpr status is untouched.
      const gdpr = await t.call("GET", `/v1/consents/users/${userId}`)
      expect(gdpr.status, gdpr.text).toBe(200)
      expect(gdpr.body.consents.purposes).toEqual([{ id: "ads", enabled: false }])
      const listed = await t.call("GET", `/v1/consents/users?regulation=${encodeURIComponent(regulation)}&organization_user_id=proto-user`)
      expect(listed.status, listed.text).toBe(200)
      expect(listed.body.data.map((u: any) => u.consents.purposes.length)).toEqual([2])
      const events = await t.call("GET", `/v1/consents/events?regulation=${encodeURIComponent(regulation)}`)
      expect(events.status, events.text).toBe(200)
      expect(events.body.total).toBe(2)

      // A user's patch with choices under that regulation, then its removal.
      const patched = await t.call("PATCH", `/v1/consents/users/${userId}`, {
        body: { regulation, consents: { purposes: [{ id: name, enabled: true }] } }
      })
      expect(patched.status, patched.text).toBe(200)
      expect(patched.body.consents.purposes.map((p: any) => [p.id, p.enabled])).toEqual([[name, true], ["ads", true]])

      const log = await t.call("GET", `/v1/webhooks/deliveries?webhook_id=${hook.body.id}&$sort[created_at]=1&$limit=1000`)
      expect(log.status, log.text).toBe(200)
      expect(log.body.data.map((d: any) => `${d.event_type}/${d.regulation}`).sort()).toEqual([
        `event.created/${regulation}`,
        `user.updated/${regulation}`,
        `event.created/${regulation}`,
        `user.updated/${regulation}`,
        `event.created/${regulation}`,
        `user.updated/${regulation}`
      ].sort())
      const flatLog = await t.call("GET", `/v1/webhooks/deliveries?webhook_id=${flat.body.id}&event_type=event.created&$sort[created_at]=1`)
      expect(flatLog.status, flatLog.text).toBe(200)
      const payload = flatLog.body.data[0].payload
      expect(payload.regulation).toBe(regulation)
      expect(payload[`parameters__entity__consents__purposes__${name}__enabled`]).toBe(true)
      expect(payload[`parameters__entity__metadata__${name}`]).toBe("m")

      const removed = await t.call("DELETE", `/v1/consents/users/${userId}?regulation=${encodeURIComponent(regulation)}`)
      expect(removed.status, removed.text).toBe(200)
      const gone = await t.call("GET", `/v1/webhooks/deliveries?webhook_id=${hook.body.id}&event_type=user.deleted`)
      expect(gone.body.data.map((d: any) => d.regulation)).toEqual([regulation])
    })
  }

  it("a regulation that is not a lower-case code is a 400, prototype name or not", async () => {
    const t = await consentTenant()
    for (const regulation of ["toString", "hasOwnProperty", "valueOf"]) {
      const r = await t.call("POST", "/v1/consents/events", {
        body: { organization_id: t.org.id, regulation, user: { organization_user_id: "u" }, consents: { purposes: [] } }
      })
      expect(r.status, r.text).toBe(400)
      const v = await t.call("GET", `/v1/consents/users?regulation=${regulation}`)
      expect(v.status, v.text).toBe(400)
    }
  })

  it("a body field named like an inherited property is an unknown field: a 400 that names it", async () => {
    const t = await consentTenant()
    for (const name of ["__proto__", "constructor", "toString"]) {
      const raw = `{"organization_id":${JSON.stringify(t.org.id)},"user":{"organization_user_id":"u"},"consents":{"purposes":[]},${JSON.stringify(name)}:"x"}`
      const r = await t.call("POST", "/v1/consents/events", { rawBody: raw })
      expect(r.status, `${name}: ${r.text}`).toBe(400)
      expect(r.body.message).toContain(name)
    }
    expect((await t.call("GET", "/v1/consents/events")).body.total).toBe(0)
  })
})
