import { saveSubscriber } from "@cmp/core"
import { beforeAll, describe, expect, it } from "vitest"
import { client, expect403, expect404, expect409, expectError } from "./api/helpers.js"
import { as, type Caller, createEvent, purposes, storeKind, type Tenant, unique, useServer } from "./helpers.js"

/**
 * What an organization reaches of the delivery log, and how far a change fans out: an
 * in-process subscriber's messages are the host's; a replay acts on its message's organization
 * whatever the query names; the `webhooks` count quota bounds the webhooks, and every enabled
 * one gets its message.
 */


// Nothing is delivered: messages stay pending, so the log is read as the change wrote it.
const { server, op } = useServer({ dispatcher: false })

const RECEIVER = "http://127.0.0.1:9/hook"

/** A webhook of the organization, created by the operator (which `api_requests` does not count). */
const hookOf = async (organizationId: string, body: Record<string, unknown> = {}) => {
  const r = await op.call("POST", "/v1/webhooks", { body: { organization_id: organizationId, url: RECEIVER, ...body } })
  expect(r.status, r.text).toBe(201)
  return r.body
}

/** A consent event of the organization, created by the operator. */
const eventOf = async (organizationId: string) => {
  const r = await op.call("POST", "/v1/consents/events", {
    body: { organization_id: organizationId, user: { organization_user_id: unique("u") }, consents: { purposes: purposes(["p", true]) } }
  })
  expect(r.status, r.text).toBe(201)
  return r.body
}

/** The operator's view of one organization's delivery log. */
const logOf = async (organizationId: string, filter = "") => {
  const r = await op.call("GET", `/v1/webhooks/deliveries?organization_id=${organizationId}${filter}&$limit=1000&$sort[id]=1`)
  expect(r.status, r.text).toBe(200)
  return r.body
}

/** A person invited into each organization by the operator, signed in. */
const memberOf = async (...organizationIds: Array<string>): Promise<Caller> => {
  const email = `${unique("member")}@example.com`
  const password = "a long member password"
  let token = ""
  for (const organizationId of organizationIds) {
    const invited = await op.call("POST", "/v1/members", { body: { name: "Mia", email, organization_id: organizationId } })
    expect(invited.status, invited.text).toBe(201)
    const accepted = await client(server.url).call("POST", "/v1/invitations/accept", { body: { token: invited.body.invitation.token, password } })
    expect(accepted.status, accepted.text).toBe(201)
    token = accepted.body.access_token
  }
  return as(server.url, token)
}

const setQuota = async (organizationId: string, values: Record<string, number>) => {
  const quota = await op.quotaOf(organizationId)
  const r = await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: values })
  expect(r.status, r.text).toBe(200)
}

describe(`an in-process subscriber's messages (${storeKind})`, () => {
  let t: Tenant
  let member: Caller
  let hook: any
  let mine: Array<any>

  beforeAll(async () => {
    // Registered with no handler in this process: its messages are written and stay pending.
    await server.api.runtime.runPromise(saveSubscriber(unique("audit"), {}))
    t = await op.tenant()
    member = await memberOf(t.org.id)
    hook = await hookOf(t.org.id)
    await eventOf(t.org.id)
    mine = (await logOf(t.org.id, "&webhook_id[$ne]=" + hook.id)).data
  })

  it("are written for the organization's changes, and the operator sees them", async () => {
    expect(mine.length).toBeGreaterThan(0)
    expect(mine.every((d: any) => d.webhook_id.startsWith("subscriber:"))).toBe(true)
    const got = await op.call("GET", `/v1/webhooks/deliveries/${mine[0].id}`)
    expect(got.status, got.text).toBe(200)
    expect(got.body.webhook_id).toBe(mine[0].webhook_id)
  })

  it("are not listed to the organization's client or member, by any filter", async () => {
    for (const caller of [t.call, member]) {
      const all = await caller("GET", "/v1/webhooks/deliveries?$limit=1000")
      expect(all.status, all.text).toBe(200)
      expect(all.body.data.length).toBeGreaterThan(0)
      expect(all.body.data.every((d: any) => d.webhook_id === hook.id)).toBe(true)
      expect(all.body.total).toBe(all.body.data.length)
      const named = await caller("GET", `/v1/webhooks/deliveries?webhook_id=${encodeURIComponent(mine[0].webhook_id)}`)
      expect(named.status, named.text).toBe(200)
      expect(named.body.total).toBe(0)
      const byId = await caller("GET", `/v1/webhooks/deliveries?id=${mine[0].id}&organization_id=${t.org.id}`)
      expect(byId.body.total).toBe(0)
    }
  })

  it("are 404 to the organization's client or member: get and replay", async () => {
    for (const caller of [t.call, member]) {
      expect404(await caller("GET", `/v1/webhooks/deliveries/${mine[0].id}`))
      expect404(await caller("GET", `/v1/webhooks/deliveries/${mine[0].id}?organization_id=${t.org.id}`))
      expect404(await caller("POST", `/v1/webhooks/deliveries/${mine[0].id}/replay`))
      expect404(await caller("POST", "/v1/webhooks/deliveries/replay", { body: { webhook_id: mine[0].webhook_id } }))
    }
    // Nothing was changed by the refused replays.
    const after = await op.call("GET", `/v1/webhooks/deliveries/${mine[0].id}`)
    expect(after.body).toMatchObject({ status: mine[0].status, version: mine[0].version })
  })
})

describe(`replay (${storeKind})`, () => {
  it("a pending message is a 409 that says only a failed message is replayed", async () => {
    const t = await op.tenant()
    const hook = await hookOf(t.org.id)
    await eventOf(t.org.id)
    const [d] = (await logOf(t.org.id, `&webhook_id=${hook.id}`)).data
    const r = await t.call("POST", `/v1/webhooks/deliveries/${d.id}/replay`)
    expect409(r)
    expect(r.body.message).toMatch(/pending.*only a failed message can be replayed/)
  })

  it("?organization_id= changes neither the organization it acts in nor the one it counts against", async () => {
    const a = await op.tenant()
    const b = await op.tenant()
    const hook = await hookOf(a.org.id)
    await eventOf(a.org.id)
    const [d] = (await logOf(a.org.id, `&webhook_id=${hook.id}`)).data
    // One counted request each; the limits are set before either organization's first request.
    await setQuota(a.org.id, { api_requests: 1 })
    await setQuota(b.org.id, { api_requests: 1 })
    const member = await memberOf(a.org.id, b.org.id)

    // Acts on A's message (pending: 409), whatever the query names; counted in A only.
    const replay = await member("POST", `/v1/webhooks/deliveries/${d.id}/replay?organization_id=${b.org.id}`)
    expect409(replay)
    expect((await member("GET", `/v1/keys?organization_id=${b.org.id}`)).status).toBe(200)
    expectError(await member("GET", `/v1/keys?organization_id=${a.org.id}`), 429, "TooManyRequests", "too-many-requests")
  })

  it("a replay by range counts against the webhook's organization, not the one the query names", async () => {
    const a = await op.tenant()
    const b = await op.tenant()
    const hook = await hookOf(a.org.id)
    await setQuota(a.org.id, { api_requests: 1 })
    await setQuota(b.org.id, { api_requests: 1 })
    const member = await memberOf(a.org.id, b.org.id)
    const r = await member("POST", `/v1/webhooks/deliveries/replay?organization_id=${b.org.id}`, { body: { webhook_id: hook.id } })
    expect(r.status, r.text).toBe(200)
    expect(r.body).toEqual({ webhook_id: hook.id, replayed: 0 })
    expect((await member("GET", `/v1/keys?organization_id=${b.org.id}`)).status).toBe(200)
    expectError(await member("GET", `/v1/keys?organization_id=${a.org.id}`), 429, "TooManyRequests", "too-many-requests")
  })

  it("the actions whose body names the organization count there, not where the query names", async () => {
    const actions = [
      ["/v1/exports/execute", (org: string) => ({ organization_id: org, export_config_id: "none", from: "2026-01-01T00:00:00Z", to: "2026-02-01T00:00:00Z" })],
      ["/v1/widgets/notices/generators/sdk", (org: string) => ({ organization_id: org })]
    ] as const
    for (const [url, body] of actions) {
      const a = await op.tenant()
      const b = await op.tenant()
      await setQuota(a.org.id, { api_requests: 1 })
      await setQuota(b.org.id, { api_requests: 1 })
      const member = await memberOf(a.org.id, b.org.id)
      const r = await member("POST", `${url}?organization_id=${b.org.id}`, { body: body(a.org.id) })
      expect(r.status, r.text).not.toBe(429)
      expect((await member("GET", `/v1/keys?organization_id=${b.org.id}`)).status, url).toBe(200)
      expectError(await member("GET", `/v1/keys?organization_id=${a.org.id}`), 429, "TooManyRequests", "too-many-requests")
    }
  })

  it("a client never reaches another organization's message through ?organization_id=", async () => {
    const a = await op.tenant()
    const b = await op.tenant()
    const hook = await hookOf(a.org.id)
    await eventOf(a.org.id)
    const [d] = (await logOf(a.org.id, `&webhook_id=${hook.id}`)).data
    const asB = b.call
    expect404(await asB("POST", `/v1/webhooks/deliveries/${d.id}/replay?organization_id=${a.org.id}`))
    expect404(await asB("POST", `/v1/webhooks/deliveries/${d.id}/replay`))
    expect404(await asB("POST", "/v1/webhooks/deliveries/replay?organization_id=" + a.org.id, { body: { webhook_id: hook.id } }))
    const got = await asB("GET", `/v1/webhooks/deliveries/${d.id}?organization_id=${a.org.id}`)
    expect([403, 404]).toContain(got.status)
    const listed = await asB("GET", `/v1/webhooks/deliveries?organization_id=${a.org.id}`)
    expect403(listed)
    const after = await op.call("GET", `/v1/webhooks/deliveries/${d.id}`)
    expect(after.body).toMatchObject({ status: "pending", version: d.version })
  })
})

describe(`the webhooks quota (${storeKind})`, () => {
  it("every webhook counts, enabled or not: 20 by default, 403 past it, the operator raises it", async () => {
    const t = await op.tenant()
    expect((await op.quotaOf(t.org.id)).webhooks).toBe(20)
    const create = (enabled: boolean) =>
      t.call("POST", "/v1/webhooks", { body: { organization_id: t.org.id, url: RECEIVER, enabled } })
    for (let i = 0; i < 20; i++) {
      const r = await create(i % 2 === 0)
      expect(r.status, r.text).toBe(201)
    }
    const refused = await create(false)
    expect403(refused)
    expect(refused.body.message).toMatch(/webhooks/)
    expect((await t.call("GET", "/v1/webhooks?$limit=0")).body.total).toBe(20)
    // A client cannot raise its own quota.
    const quota = await op.quotaOf(t.org.id)
    expect403(await t.call("PATCH", `/v1/quotas/${quota.id}`, { body: { webhooks: 100 } }))
    await setQuota(t.org.id, { webhooks: 21 })
    expect((await create(true)).status).toBe(201)
    expect403(await create(true))
  })
})

describe(`fan-out (${storeKind})`, () => {
  it("a change sends one message to every enabled matching webhook, past a thousand of them", async () => {
    const t = await op.tenant()
    await setQuota(t.org.id, { webhooks: 1100 })
    const count = 1050
    for (let i = 0; i < count; i += 25) {
      const batch = Array.from({ length: Math.min(25, count - i) }, () =>
        t.call("POST", "/v1/webhooks", { body: { organization_id: t.org.id, url: RECEIVER, event_types: ["event.created"] } }))
      for (const r of await Promise.all(batch)) expect(r.status, r.text).toBe(201)
    }
    // Disabled ones get nothing.
    await hookOf(t.org.id, { enabled: false, event_types: ["event.created"] })
    expect((await t.call("GET", "/v1/webhooks?$limit=0")).body.total).toBe(count + 1)
    await createEvent(t as any, unique("u"), purposes(["p", true]))
    const first = await t.call("GET", "/v1/webhooks/deliveries?$limit=1000&$sort[webhook_id]=1")
    expect(first.status, first.text).toBe(200)
    expect(first.body.total).toBe(count)
    const rest = await t.call("GET", "/v1/webhooks/deliveries?$limit=1000&$skip=1000&$sort[webhook_id]=1")
    const ids = new Set([...first.body.data, ...rest.body.data].map((d: any) => d.webhook_id))
    expect(ids.size).toBe(count)
  }, 120_000)
})
