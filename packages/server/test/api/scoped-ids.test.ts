import * as fs from "node:fs"
import * as path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { client, expect400, expect404, expect409, memberOf, type Tenant, unique } from "./helpers.js"
import { type Caller, useServer } from "./fixture.js"

/**
 * Ids a client chooses for consent events and users belong to its organization: two
 * organizations may hold the same id, each reading, changing and deleting only its own; a
 * duplicate inside one organization is a conflict; a principal that sees several organizations
 * names one with `?organization_id=` when the id is held by more than one of them.
 */
const vendorList = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, "fixtures", "vendor-list.json"), "utf8"))
const consents = { consents_api: true, webhooks: true }
const { server, op, tenant, tenants: [a, b] } = useServer(
  { webhookAllowHosts: ["127.0.0.1"], tcfVendorList: vendorList },
  { tenants: [consents, consents] }
)
/** A member of both A and B. */
let member: Caller

const consentTenant = () => tenant(consents)

const eventBody = (t: Tenant, id: string, userId: string, purposes: Array<[string, boolean]>) => ({
  id,
  organization_id: t.org.id,
  user: { id: userId },
  consents: { purposes: purposes.map(([p, enabled]) => ({ id: p, enabled })) }
})

const post = async (t: { call: Caller } & Tenant, id: string, userId: string, purposes: Array<[string, boolean]>) => {
  const r = await t.call("POST", "/v1/consents/events", { body: eventBody(t, id, userId, purposes) })
  expect(r.status, r.text).toBe(201)
  return r.body
}

const enc = encodeURIComponent

beforeAll(async () => {
  member = await memberOf(server.url, a, b)
})

describe("client-chosen ids belong to their organization", () => {
  it("two organizations use the same event and user ids, each reading only its own", async () => {
    const eventId = unique("order")
    const userId = unique("cust")
    const hookA = await a.call("POST", "/v1/webhooks", { body: { organization_id: a.org.id, url: "http://127.0.0.1:9/a" } })
    expect(hookA.status, hookA.text).toBe(201)

    const inA = await post(a, eventId, userId, [["analytics", true]])
    // B is not told that A uses these ids: its event with the same ids is simply created.
    const inB = await post(b, eventId, userId, [["analytics", false]])
    expect(inA).toMatchObject({ id: eventId, organization_id: a.org.id, user: { id: userId } })
    expect(inB).toMatchObject({ id: eventId, organization_id: b.org.id, user: { id: userId } })

    const readA = await a.call("GET", `/v1/consents/events/${enc(eventId)}`)
    expect(readA.status, readA.text).toBe(200)
    expect(readA.body).toMatchObject({ organization_id: a.org.id, consents: { purposes: [{ id: "analytics", enabled: true }] } })
    const readB = await b.call("GET", `/v1/consents/events/${enc(eventId)}`)
    expect(readB.body).toMatchObject({ organization_id: b.org.id, consents: { purposes: [{ id: "analytics", enabled: false }] } })

    const userA = await a.call("GET", `/v1/consents/users/${enc(userId)}`)
    expect(userA.status, userA.text).toBe(200)
    expect(userA.body.organization_id).toBe(a.org.id)
    expect(JSON.stringify(userA.body.consents)).toContain('"enabled":true')
    const userB = await b.call("GET", `/v1/consents/users/${enc(userId)}`)
    expect(userB.body.organization_id).toBe(b.org.id)
    expect(JSON.stringify(userB.body.consents)).not.toContain('"enabled":true')

    // Lists and the TC string name the organization's own id.
    const listA = await a.call("GET", `/v1/consents/events?id=${enc(eventId)}`)
    expect(listA.body.data.map((e: any) => e.organization_id)).toEqual([a.org.id])
    const tc = await a.call("GET", `/v1/consents/events/${enc(eventId)}/tcstring`)
    expect(tc.status, tc.text).toBe(200)
    expect(tc.body.id).toBe(eventId)

    // A's webhook heard of A's event and user, named by their ids, and nothing of B's.
    const log = await a.call("GET", `/v1/webhooks/deliveries?webhook_id=${hookA.body.id}&$limit=100`)
    expect(log.status, log.text).toBe(200)
    const created = log.body.data.filter((d: any) => d.event_type === "event.created")
    expect(created).toHaveLength(1)
    const delivery = await a.call("GET", `/v1/webhooks/deliveries/${created[0].id}`)
    expect(delivery.body.payload.parameters.entity).toMatchObject({ id: eventId, organization_id: a.org.id })
  })

  it("a duplicate inside one organization is a conflict", async () => {
    const eventId = unique("order")
    const userId = unique("cust")
    await post(a, eventId, userId, [["ads", true]])
    const again = await a.call("POST", "/v1/consents/events", { body: eventBody(a, eventId, userId, [["ads", false]]) })
    expect409(again)
    expect(again.body.errors).toHaveProperty("id")
    // Still the first event's choices.
    const read = await a.call("GET", `/v1/consents/events/${enc(eventId)}`)
    expect(read.body.consents.purposes).toEqual([{ id: "ads", enabled: true }])
  })

  it("each organization changes and deletes only its own event and user", async () => {
    const eventId = unique("order")
    const userId = unique("cust")
    await post(a, eventId, userId, [["p", true]])
    await post(b, eventId, userId, [["p", true]])

    const patched = await a.call("PATCH", `/v1/consents/events/${enc(eventId)}`, { body: { metadata: { by: "a" } } })
    expect(patched.status, patched.text).toBe(200)
    expect(patched.body).toMatchObject({ organization_id: a.org.id, metadata: { by: "a" } })
    const untouched = await b.call("GET", `/v1/consents/events/${enc(eventId)}`)
    expect(untouched.body.metadata ?? null).toBeNull()
    expect(untouched.body.version).toBe(1)

    const userPatch = await b.call("PATCH", `/v1/consents/users/${enc(userId)}`, { body: { country: "FR" } })
    expect(userPatch.status, userPatch.text).toBe(200)
    expect((await a.call("GET", `/v1/consents/users/${enc(userId)}`)).body.country ?? null).toBeNull()

    // Erasing A's user takes A's events with it, and leaves B's user and events alone.
    expect((await a.call("DELETE", `/v1/consents/users/${enc(userId)}`)).status).toBe(200)
    expect404(await a.call("GET", `/v1/consents/users/${enc(userId)}`))
    expect404(await a.call("GET", `/v1/consents/events/${enc(eventId)}`))
    expect((await b.call("GET", `/v1/consents/users/${enc(userId)}`)).status).toBe(200)
    const bEvents = await b.call("GET", `/v1/consents/events?user_id=${enc(userId)}`)
    expect(bEvents.body.data.map((e: any) => e.id)).toEqual([eventId])

    expect((await b.call("DELETE", `/v1/consents/events/${enc(eventId)}`)).status).toBe(200)
    expect404(await b.call("GET", `/v1/consents/events/${enc(eventId)}`))
    // B's user now has no confirmed event left: its choices for the regulation are gone.
    const after = await b.call("GET", `/v1/consents/users/${enc(userId)}`)
    expect(after.status).toBe(200)
    expect(JSON.stringify(after.body.consents)).not.toContain('"enabled":true')
  })

  it("a client naming another organization gets 404, as for an unknown id", async () => {
    const eventId = unique("order")
    await post(b, eventId, unique("cust"), [["p", true]])
    expect404(await a.call("GET", `/v1/consents/events/${enc(eventId)}`))
    expect404(await a.call("GET", `/v1/consents/events/${enc(eventId)}?organization_id=${enc(b.org.id)}`))
    expect404(await a.call("PATCH", `/v1/consents/events/${enc(eventId)}?organization_id=${enc(b.org.id)}`, { body: { metadata: {} } }))
    expect404(await a.call("DELETE", `/v1/consents/events/${enc(eventId)}?organization_id=${enc(b.org.id)}`))
    expect((await b.call("GET", `/v1/consents/events/${enc(eventId)}`)).status).toBe(200)
  })
})

describe("a principal seeing several organizations names one when the id is ambiguous", () => {
  const callers = () => [["operator", op.call], ["member of A and B", member]] as const

  it("get, patch, remove and the TC string answer 400 until the organization is named", async () => {
    for (const [who, call] of callers()) {
      const eventId = unique("order")
      const userId = unique("cust")
      const ouid = unique("ouid")
      for (const t of [a, b]) {
        const r = await t.call("POST", "/v1/consents/events", {
          body: { ...eventBody(t, eventId, userId, [["p", true]]), user: { id: userId, organization_user_id: ouid } }
        })
        expect(r.status, `${who}: ${r.text}`).toBe(201)
      }
      for (
        const [method, path, body] of [
          ["GET", `/v1/consents/events/${enc(eventId)}`, undefined],
          ["GET", `/v1/consents/events/${enc(eventId)}/tcstring`, undefined],
          ["PATCH", `/v1/consents/events/${enc(eventId)}`, { metadata: { who } }],
          ["GET", `/v1/consents/users/${enc(userId)}`, undefined],
          ["GET", `/v1/consents/users/${enc(ouid)}?$by_organization_user_id=true`, undefined],
          ["PATCH", `/v1/consents/users/${enc(userId)}`, { country: "DE" }],
          ["DELETE", `/v1/consents/events/${enc(eventId)}`, undefined],
          ["DELETE", `/v1/consents/users/${enc(userId)}`, undefined]
        ] as const
      ) {
        const r = await call(method, path, body ? { body } : {})
        expect400(r)
        expect(r.body.errors, `${who} ${method} ${path}`).toHaveProperty("organization_id")
      }
      // Named: each organization's own record.
      for (const t of [a, b]) {
        const sep = (p: string) => (p.includes("?") ? "&" : "?")
        const at = (p: string) => `${p}${sep(p)}organization_id=${enc(t.org.id)}`
        const got = await call("GET", at(`/v1/consents/events/${enc(eventId)}`))
        expect(got.status, got.text).toBe(200)
        expect(got.body.organization_id).toBe(t.org.id)
        const byOuid = await call("GET", at(`/v1/consents/users/${enc(ouid)}?$by_organization_user_id=true`))
        expect(byOuid.status, byOuid.text).toBe(200)
        expect(byOuid.body).toMatchObject({ id: userId, organization_id: t.org.id })
        const tc = await call("GET", at(`/v1/consents/events/${enc(eventId)}/tcstring`))
        expect(tc.status, tc.text).toBe(200)
      }
      const patched = await call("PATCH", `/v1/consents/events/${enc(eventId)}?organization_id=${enc(a.org.id)}`, {
        body: { metadata: { who } }
      })
      expect(patched.status, patched.text).toBe(200)
      expect((await b.call("GET", `/v1/consents/events/${enc(eventId)}`)).body.version).toBe(1)
      const removed = await call("DELETE", `/v1/consents/users/${enc(userId)}?organization_id=${enc(b.org.id)}`)
      expect(removed.status, removed.text).toBe(200)
      expect((await a.call("GET", `/v1/consents/users/${enc(userId)}`)).status).toBe(200)
      expect404(await b.call("GET", `/v1/consents/users/${enc(userId)}`))
      // Held by one organization only now: no need to name it.
      expect((await call("GET", `/v1/consents/users/${enc(userId)}`)).status).toBe(200)
    }
  })

  it("an organization the principal cannot see answers 404; a malformed organization_id 400", async () => {
    const c = await consentTenant()
    const eventId = unique("order")
    await post(c, eventId, unique("cust"), [["p", true]])
    await post(a, eventId, unique("cust"), [["p", true]])
    expect404(await member("GET", `/v1/consents/events/${enc(eventId)}?organization_id=${enc(c.org.id)}`))
    expect404(await member("GET", `/v1/consents/events/${enc(eventId)}?organization_id=no-such-org`))
    // Only A's is visible to the member: found without naming it.
    const mine = await member("GET", `/v1/consents/events/${enc(eventId)}`)
    expect(mine.status, mine.text).toBe(200)
    expect(mine.body.organization_id).toBe(a.org.id)
    expect400(await member("GET", `/v1/consents/events/${enc(eventId)}?organization_id[]=${enc(a.org.id)}`))
    // The operator sees both A and C.
    expect400(await op.call("GET", `/v1/consents/events/${enc(eventId)}`))
    expect404(await op.call("GET", `/v1/consents/events/${enc(eventId)}?organization_id=${enc(b.org.id)}`))
  })

  it("on other resources ?organization_id= only narrows: the record's own organization finds it, another one is a 404", async () => {
    const keyId = a.key.id as string
    const own = await op.call("GET", `/v1/keys/${enc(keyId)}?organization_id=${enc(a.org.id)}`)
    expect(own.status, own.text).toBe(200)
    expect(own.body.organization_id).toBe(a.org.id)
    expect404(await op.call("GET", `/v1/keys/${enc(keyId)}?organization_id=${enc(b.org.id)}`))
    expect404(await op.call("PATCH", `/v1/keys/${enc(keyId)}?organization_id=${enc(b.org.id)}`, { body: { description: "x" } }))
    expect404(await a.call("GET", `/v1/keys/${enc(keyId)}?organization_id=${enc(b.org.id)}`))
    expect((await a.call("GET", `/v1/keys/${enc(keyId)}`)).status).toBe(200)
  })
})
