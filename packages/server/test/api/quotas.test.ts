import { premiumFeatureFlags, quotaFields } from "@cmp/core"
import { describe, expect, it } from "vitest"
import { as, call, expect400, expect403, expect404, expect405, expect409, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

const { server, op, tenants: [a] } = useServer({}, { tenants: 1 })
const asA = a.call

const fullQuota = (value: number) => Object.fromEntries(quotaFields.map((f) => [f, value]))
const allFlags = (value: boolean) => Object.fromEntries(premiumFeatureFlags.map((f) => [f, value]))

describe("quotas", () => {
  it("the organization's client reads its quota (find and get)", async () => {
    const found = await asA("GET", "/v1/quotas")
    expect(found.status).toBe(200)
    expect(found.body).toMatchObject({ total: 1, skip: 0, limit: 100 })
    const quota = found.body.data[0]
    expect(quota.organization_id).toBe(a.org.id)
    for (const f of quotaFields) expect(typeof quota[f], f).toBe("number")
    const got = await asA("GET", `/v1/quotas/${quota.id}`)
    expect(got.status).toBe(200)
    expect(got.body).toEqual(quota)
  })

  it("a client cannot create or patch a quota (403)", async () => {
    const quota = await op.quotaOf(a.org.id)
    expect403(await asA("PATCH", `/v1/quotas/${quota.id}`, { body: { secrets: 1000 } }))
    expect403(await asA("POST", "/v1/quotas", { body: { organization_id: a.org.id, secrets: 1000 } }))
    expect((await op.quotaOf(a.org.id)).secrets).toBe(quota.secrets)
  })

  it("the operator patches a quota (version incremented, other fields kept)", async () => {
    const org = await op.createOrg()
    const quota = await op.quotaOf(org.id)
    const r = await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { secrets: 7, exports_configs: 2 } })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ id: quota.id, organization_id: org.id, secrets: 7, exports_configs: 2, version: 2 })
    expect(r.body.api_requests).toBe(quota.api_requests)
  })

  it("a negative or fractional limit is 400; an unknown limit is 400", async () => {
    const quota = await op.quotaOf(a.org.id)
    const neg = await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { secrets: -1 } })
    expect400(neg)
    expect(neg.body.errors).toHaveProperty("secrets")
    expect400(await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { secrets: 1.5 } }))
    const unknown = await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { widgets: 3 } })
    expect400(unknown)
    expect(unknown.body.errors).toHaveProperty("widgets")
    const org = await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { organization_id: "operator" } })
    expect400(org)
    expect(org.body.errors).toHaveProperty("organization_id")
  })

  it("a second quota for an organization is 409", async () => {
    const r = await op.call("POST", "/v1/quotas", { body: { organization_id: a.org.id, secrets: 3 } })
    expect409(r)
    const all = await op.call("GET", `/v1/quotas?organization_id=${a.org.id}`)
    expect(all.body.total).toBe(1)
  })

  it("quotas have no remove (405); a quota for an unknown organization is 400", async () => {
    expect405(await op.call("DELETE", `/v1/quotas/${(await op.quotaOf(a.org.id)).id}`))
    const r = await op.call("POST", "/v1/quotas", { body: { organization_id: "no-such-org" } })
    expect400(r)
    expect(r.body.errors).toHaveProperty("organization_id")
  })

  it("quotas have no update (PUT is 405)", async () => {
    const quota = await op.quotaOf(a.org.id)
    expect405(await op.call("PUT", `/v1/quotas/${quota.id}`, { body: fullQuota(1) }))
  })
})

describe("premium features", () => {
  it("the organization's client reads its flags", async () => {
    const found = await asA("GET", "/v1/premium-features")
    expect(found.status).toBe(200)
    expect(found.body.total).toBe(1)
    const pf = found.body.data[0]
    expect(pf.organization_id).toBe(a.org.id)
    for (const f of premiumFeatureFlags) expect(pf[f], f).toBe(false)
    const got = await asA("GET", `/v1/premium-features/${pf.id}`)
    expect(got.status).toBe(200)
    expect(got.body).toEqual(pf)
  })

  it("a client cannot create, patch or update them (403)", async () => {
    const pf = await op.featuresOf(a.org.id)
    expect403(await asA("PATCH", `/v1/premium-features/${pf.id}`, { body: { webhooks: true } }))
    expect403(await asA("PUT", `/v1/premium-features/${pf.id}`, { body: allFlags(true) }))
    expect403(await asA("POST", "/v1/premium-features", { body: { organization_id: a.org.id } }))
    expect((await op.featuresOf(a.org.id)).webhooks).toBe(false)
  })

  it("the operator patches flags, including output-only ones (consents_api, sso)", async () => {
    const org = await op.createOrg()
    const pf = await op.featuresOf(org.id)
    const r = await op.call("PATCH", `/v1/premium-features/${pf.id}`, {
      body: { webhooks: true, consents_api: true, sso: true }
    })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ webhooks: true, consents_api: true, sso: true, batch_exports: false, version: 2 })
    const bad = await op.call("PATCH", `/v1/premium-features/${pf.id}`, { body: { webhooks: "yes" } })
    expect400(bad)
    expect(bad.body.errors).toHaveProperty("webhooks")
  })

  it("the operator replaces every flag with PUT; a PUT missing a flag is 400", async () => {
    const org = await op.createOrg()
    const pf = await op.featuresOf(org.id)
    const r = await op.call("PUT", `/v1/premium-features/${pf.id}`, { body: { ...allFlags(false), webhooks: true, sso: true } })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ id: pf.id, organization_id: org.id, webhooks: true, sso: true, consents_api: false })
    expect(r.body.version).toBe(2)
    const { webhooks: _w, ...missing } = allFlags(true)
    const partial = await op.call("PUT", `/v1/premium-features/${pf.id}`, { body: missing })
    expect400(partial)
    expect(partial.body.errors).toHaveProperty("webhooks")
    expect((await op.call("GET", `/v1/premium-features/${pf.id}`)).body.version).toBe(2)
  })

  it("a second premium-feature set for an organization is 409; premium features have no remove", async () => {
    expect409(await op.call("POST", "/v1/premium-features", { body: { organization_id: a.org.id } }))
    const pf = await op.featuresOf(a.org.id)
    expect405(await op.call("DELETE", `/v1/premium-features/${pf.id}`))
  })
})

describe("secrets", () => {
  it("201 returns the secret once; get, find and patch do not", async () => {
    const r = await asA("POST", "/v1/secrets", { body: { organization_id: a.org.id, name: unique("s"), description: "web" } })
    expect(r.status).toBe(201)
    expect(r.body).toMatchObject({ organization_id: a.org.id, description: "web", version: 1 })
    expect(r.body.secret).toMatch(/^\S{20,}$/)
    expect(r.body).not.toHaveProperty("secret_hash")
    const got = await asA("GET", `/v1/secrets/${r.body.id}`)
    expect(got.status).toBe(200)
    expect(got.body).not.toHaveProperty("secret")
    expect(got.body).not.toHaveProperty("secret_hash")
    const found = await asA("GET", `/v1/secrets?id=${r.body.id}`)
    expect(found.body.data).toHaveLength(1)
    expect(found.text).not.toContain(r.body.secret)
    expect(found.body.data[0]).not.toHaveProperty("secret_hash")
    const patched = await asA("PATCH", `/v1/secrets/${r.body.id}`, { body: { description: "changed" } })
    expect(patched.status).toBe(200)
    expect(patched.body).toMatchObject({ description: "changed", version: 2 })
    expect(patched.body).not.toHaveProperty("secret")
  })

  it("a secret value cannot be chosen (400 naming secret)", async () => {
    const r = await asA("POST", "/v1/secrets", { body: { organization_id: a.org.id, name: unique("s"), secret: "mine" } })
    expect400(r)
    expect(r.body.errors).toHaveProperty("secret")
    const p = await asA("POST", "/v1/secrets", { body: { organization_id: a.org.id } })
    expect400(p)
    expect(p.body.errors).toHaveProperty("name")
  })

  it("update and remove", async () => {
    const s = (await asA("POST", "/v1/secrets", { body: { organization_id: a.org.id, name: unique("s"), description: "d" } })).body
    const put = await asA("PUT", `/v1/secrets/${s.id}`, { body: { name: "renamed" } })
    expect(put.status).toBe(200)
    expect(put.body.name).toBe("renamed")
    expect(put.body.description ?? null).toBeNull()
    const del = await asA("DELETE", `/v1/secrets/${s.id}`)
    expect(del.status).toBe(200)
    expect(del.body.id).toBe(s.id)
    expect404(await asA("GET", `/v1/secrets/${s.id}`))
  })

  it("the secrets quota: the third create when the limit is 2 is 403 naming the quota", async () => {
    const t = await op.tenant()
    const quota = await op.quotaOf(t.org.id)
    const patched = await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { secrets: 2 } })
    expect(patched.status).toBe(200)
    const asT = as(server.url, t.token)
    const create = () => asT("POST", "/v1/secrets", { body: { organization_id: t.org.id, name: unique("s") } })
    expect((await create()).status).toBe(201)
    const second = await create()
    expect(second.status).toBe(201)
    const third = await create()
    expect403(third)
    expect(third.body.errors).toHaveProperty("secrets")
    expect(third.body.message).toMatch(/secrets/)
    expect((await asT("GET", "/v1/secrets")).body.total).toBe(2)

    // Removing one frees a place.
    expect((await asT("DELETE", `/v1/secrets/${second.body.id}`)).status).toBe(200)
    expect((await create()).status).toBe(201)
    expect403(await create())

    // The operator counts against the same quota.
    expect403(await op.call("POST", "/v1/secrets", { body: { organization_id: t.org.id, name: unique("s") } }))
  })

  it("the secrets quota of 0 forbids any secret", async () => {
    const t = await op.tenant()
    const quota = await op.quotaOf(t.org.id)
    await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { secrets: 0 } })
    const r = await call(server.url, "POST", "/v1/secrets", {
      token: t.token,
      body: { organization_id: t.org.id, name: unique("s") }
    })
    expect403(r)
    expect(r.body.errors).toHaveProperty("secrets")
  })
})
