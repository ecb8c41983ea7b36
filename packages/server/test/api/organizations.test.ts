import { describe, expect, it } from "vitest"
import { as, expect400, expect403, expect404, expect409, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

const { server, op, tenants: [a] } = useServer({}, { tenants: 1 })
const asA = a.call

describe("organizations: create", () => {
  it("the operator creates one: 201, self_register false, public_api_key, defaults", async () => {
    const name = unique("Acme")
    const r = await op.call("POST", "/v1/organizations", {
      body: { name, website: "https://acme.example", auth_message_priority: ["email", "sms"] }
    })
    expect(r.status).toBe(201)
    expect(r.body).toMatchObject({
      name,
      website: "https://acme.example",
      self_register: false,
      validate_purpose_id: false,
      auth_message_priority: ["email", "sms"],
      version: 1
    })
    expect(typeof r.body.id).toBe("string")
    expect(r.body.public_api_key).toMatch(/^\S{16,}$/)
    expect(r.body).not.toHaveProperty("crm_account_id")
    const got = await op.call("GET", `/v1/organizations/${r.body.id}`)
    expect(got.status).toBe(200)
    expect(got.body.public_api_key).toBe(r.body.public_api_key)
  })

  it("its quota and premium features are created with it", async () => {
    const org = await op.createOrg()
    const quota = await op.quotaOf(org.id)
    expect(quota.organization_id).toBe(org.id)
    expect(quota.secrets).toBe(20)
    expect(quota.api_requests).toBeGreaterThan(0)
    expect(quota.version).toBe(1)
    const features = await op.featuresOf(org.id)
    expect(features.organization_id).toBe(org.id)
    expect(features.webhooks).toBe(false)
    expect(features.consents_api).toBe(false)
  })

  it("two organizations get different public API keys", async () => {
    const o1 = await op.createOrg()
    const o2 = await op.createOrg()
    expect(o1.public_api_key).not.toBe(o2.public_api_key)
  })

  it("a duplicate name is 409 naming name", async () => {
    const name = unique("Same")
    await op.createOrg({ name })
    const r = await op.call("POST", "/v1/organizations", { body: { name } })
    expect409(r)
    expect(r.body.errors).toHaveProperty("name")
    const orgs = await op.call("GET", `/v1/organizations?name=${encodeURIComponent(name)}`)
    expect(orgs.body.total).toBe(1)
  })

  it("a client cannot create one (403)", async () => {
    const name = unique("ByClient")
    expect403(await asA("POST", "/v1/organizations", { body: { name } }))
    expect((await op.call("GET", `/v1/organizations?name=${name}`)).body.total).toBe(0)
  })

  it("400 for a missing name, a bad website, an unknown field", async () => {
    const noName = await op.call("POST", "/v1/organizations", { body: { website: "https://x.example" } })
    expect400(noName)
    expect(noName.body.errors).toHaveProperty("name")
    const badUrl = await op.call("POST", "/v1/organizations", { body: { name: unique("o"), website: "javascript:alert(1)" } })
    expect400(badUrl)
    expect(badUrl.body.errors).toHaveProperty("website")
    const unknown = await op.call("POST", "/v1/organizations", { body: { name: unique("o"), plan: "gold" } })
    expect400(unknown)
    expect(unknown.body.errors).toHaveProperty("plan")
  })

  it("output-only fields in a create are 400 naming them, even for the operator", async () => {
    for (const field of ["public_api_key", "self_register"]) {
      const r = await op.call("POST", "/v1/organizations", {
        body: { name: unique("o"), [field]: field === "self_register" ? true : "pk_mine" }
      })
      expect400(r)
      expect(r.body.errors).toHaveProperty(field)
    }
  })

  it("the operator may set an output-only flag (validate_purpose_id) on create", async () => {
    const r = await op.call("POST", "/v1/organizations", { body: { name: unique("o"), validate_purpose_id: true } })
    expect(r.status).toBe(201)
    expect(r.body.validate_purpose_id).toBe(true)
    expect(r.body.self_register).toBe(false)
  })
})

describe("organizations: a client and its own organization", () => {
  it("reads it and finds only it", async () => {
    const got = await asA("GET", `/v1/organizations/${a.org.id}`)
    expect(got.status).toBe(200)
    expect(got.body.name).toBe(a.org.name)
    const found = await asA("GET", "/v1/organizations")
    expect(found.body.data.map((o: any) => o.id)).toEqual([a.org.id])
  })

  it("patches it (200, version incremented)", async () => {
    const before = (await asA("GET", `/v1/organizations/${a.org.id}`)).body
    const r = await asA("PATCH", `/v1/organizations/${a.org.id}`, {
      body: { website: "https://a.example", auth_allow_user_creation: true }
    })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({
      id: a.org.id,
      name: a.org.name,
      website: "https://a.example",
      auth_allow_user_creation: true,
      public_api_key: a.org.public_api_key,
      self_register: false,
      version: before.version + 1
    })
  })

  it("output-only fields in a client's patch are 400 naming them, and nothing changes", async () => {
    const before = (await asA("GET", `/v1/organizations/${a.org.id}`)).body
    for (const [field, value] of [
      ["public_api_key", "pk_mine"],
      ["self_register", true],
      ["validate_purpose_id", true],
      ["allow_tcf_with_custom_text", true],
      ["disable_preferences_in_consents", true]
    ] as const) {
      const r = await asA("PATCH", `/v1/organizations/${a.org.id}`, { body: { [field]: value } })
      expect400(r)
      expect(r.body.errors).toHaveProperty(field)
    }
    const put = await asA("PUT", `/v1/organizations/${a.org.id}`, { body: { name: a.org.name, validate_purpose_id: true } })
    expect400(put)
    expect(put.body.errors).toHaveProperty("validate_purpose_id")
    const after = (await asA("GET", `/v1/organizations/${a.org.id}`)).body
    expect(after).toEqual(before)
  })

  it("a client cannot remove it (403)", async () => {
    expect403(await asA("DELETE", `/v1/organizations/${a.org.id}`))
    expect((await asA("GET", `/v1/organizations/${a.org.id}`)).status).toBe(200)
  })

  it("renaming onto another organization's name is 409", async () => {
    const other = await op.createOrg()
    const r = await asA("PATCH", `/v1/organizations/${a.org.id}`, { body: { name: other.name } })
    expect409(r)
    expect(r.body.errors).toHaveProperty("name")
  })

  it("PUT replaces the updatable fields", async () => {
    const t = await op.tenant({ website: "https://before.example", industry_id: "retail" })
    const name = unique("Renamed")
    const r = await as(server.url, t.token)("PUT", `/v1/organizations/${t.org.id}`, { body: { name } })
    expect(r.status).toBe(200)
    expect(r.body.name).toBe(name)
    expect(r.body.website ?? null).toBeNull()
    expect(r.body.industry_id ?? null).toBeNull()
    expect(r.body.public_api_key).toBe(t.org.public_api_key)
    expect(r.body.self_register).toBe(false)
    expect(r.body.version).toBe(2)
  })

  it("PUT resets the updatable fields it does not name to their defaults, not only the nullable ones", async () => {
    const t = await op.tenant({ auth_allow_user_creation: true, auth_message_priority: ["sms"], auth_enabled: false })
    expect(t.org).toMatchObject({ auth_allow_user_creation: true, auth_message_priority: ["sms"], auth_enabled: false })
    const r = await as(server.url, t.token)("PUT", `/v1/organizations/${t.org.id}`, { body: { name: t.org.name } })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ auth_allow_user_creation: false, auth_message_priority: [], auth_enabled: true })
    // Operator-only flags are not updatable fields: a client's PUT leaves them alone.
    const flagged = await op.tenant({ validate_purpose_id: true })
    const put = await as(server.url, flagged.token)("PUT", `/v1/organizations/${flagged.org.id}`, {
      body: { name: flagged.org.name }
    })
    expect(put.body.validate_purpose_id).toBe(true)
  })
})

describe("organizations: the operator", () => {
  it("sets validate_purpose_id and other output-only flags by patch", async () => {
    const org = await op.createOrg()
    const r = await op.call("PATCH", `/v1/organizations/${org.id}`, {
      body: { validate_purpose_id: true, allow_tcf_with_custom_text: true }
    })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ validate_purpose_id: true, allow_tcf_with_custom_text: true, version: 2 })
    const bad = await op.call("PATCH", `/v1/organizations/${org.id}`, { body: { validate_purpose_id: "yes" } })
    expect400(bad)
    expect(bad.body.errors).toHaveProperty("validate_purpose_id")
  })

  it("alone sets iab_tcf_cmp_id, an integer from 1 to 4095; anyone else is told it is the operator's", async () => {
    const org = await op.createOrg({ iab_tcf_cmp_id: 300 })
    expect(org.iab_tcf_cmp_id).toBe(300)
    const set = await op.call("PATCH", `/v1/organizations/${org.id}`, { body: { iab_tcf_cmp_id: 4095 } })
    expect(set.status, set.text).toBe(200)
    expect(set.body.iab_tcf_cmp_id).toBe(4095)
    for (const value of [0, 4096, 2 ** 31, 1.5, -1, "12"]) {
      const r = await op.call("PATCH", `/v1/organizations/${org.id}`, { body: { iab_tcf_cmp_id: value } })
      expect400(r)
      expect(r.body.errors, String(value)).toHaveProperty("iab_tcf_cmp_id")
    }
    const cleared = await op.call("PATCH", `/v1/organizations/${org.id}`, { body: { iab_tcf_cmp_id: null } })
    expect(cleared.body.iab_tcf_cmp_id ?? null).toBeNull()

    const before = (await asA("GET", `/v1/organizations/${a.org.id}`)).body
    for (const method of ["PATCH", "PUT"] as const) {
      const r = await asA(method, `/v1/organizations/${a.org.id}`, { body: { name: a.org.name, iab_tcf_cmp_id: 12 } })
      expect400(r)
      expect(r.body.errors.iab_tcf_cmp_id).toBe("may only be set by the operator")
    }
    expect((await asA("GET", `/v1/organizations/${a.org.id}`)).body).toEqual(before)
  })

  it("still cannot set public_api_key or self_register", async () => {
    const org = await op.createOrg()
    for (const field of ["public_api_key", "self_register"]) {
      const r = await op.call("PATCH", `/v1/organizations/${org.id}`, { body: { [field]: field === "self_register" ? true : "pk" } })
      expect400(r)
      expect(r.body.errors).toHaveProperty(field)
    }
  })

  it("removes an organization: 200 with the object, then 404, and its keys, quota and features are gone", async () => {
    const t = await op.tenant()
    const quota = await op.quotaOf(t.org.id)
    const r = await op.call("DELETE", `/v1/organizations/${t.org.id}`)
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ id: t.org.id, name: t.org.name })
    expect404(await op.call("GET", `/v1/organizations/${t.org.id}`))
    expect404(await op.call("GET", `/v1/keys/${t.key.id}`))
    expect404(await op.call("GET", `/v1/quotas/${quota.id}`))
    expect((await op.call("GET", `/v1/premium-features?organization_id=${t.org.id}`)).body.total).toBe(0)
  })

  it("cannot remove the operator organization", async () => {
    expect403(await op.call("DELETE", "/v1/organizations/operator"))
    expect((await op.call("GET", "/v1/organizations/operator")).status).toBe(200)
  })

  it("404 for an unknown organization", async () => {
    expect404(await op.call("GET", "/v1/organizations/nope"))
    expect404(await op.call("PATCH", "/v1/organizations/nope", { body: { website: "https://x.example" } }))
  })
})
