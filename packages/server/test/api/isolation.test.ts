import { beforeAll, describe, expect, it } from "vitest"
import { as, expect403, expect404, expect405, type Reply, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * A client of organization A against every object of organization B: reads and writes
 * answer 404 (never revealing B's data), creating in B and filtering on B answer 403.
 */

/** B's objects, one per service. */
const bOf: Record<string, any> = {}
/** A's own objects, one per service. */
const aOf: Record<string, any> = {}

const { server, op, tenants: [a, b] } = useServer({}, { tenants: 2 })
const asA = a.call

beforeAll(async () => {
  const asB = as(server.url, b.token)

  for (const [t, store, call] of [[a, aOf, asA], [b, bOf, asB]] as const) {
    store.organizations = t.org
    store.keys = t.key
    const secret = await call("POST", "/v1/secrets", { body: { organization_id: t.org.id, name: unique("s") } })
    expect(secret.status).toBe(201)
    store.secrets = secret.body
    store.quotas = await op.quotaOf(t.org.id)
    store["premium-features"] = await op.featuresOf(t.org.id)
    const member = await call("POST", "/v1/members", {
      body: { organization_id: t.org.id, name: "Member", email: `${unique("m")}@example.com` }
    })
    expect(member.status, member.text).toBe(201)
    const { invitation: _shownOnce, ...stored } = member.body
    store.members = stored
  }
})

/** No field of B's object (other than an id the caller itself sent) shows up in the body. */
const expectNoLeak = (r: Reply, path: string) => {
  const obj = bOf[path]
  expect(r.text).not.toContain(b.org.name)
  expect(r.text).not.toContain(b.org.public_api_key)
  if (typeof obj.name === "string") expect(r.text).not.toContain(obj.name)
  expect(r.body?.organization_id).toBeUndefined()
  expect(r.body?.data).toBeUndefined()
  expect(r.body?.version).toBeUndefined()
}

const patchBodies: Record<string, unknown> = {
  keys: { description: "hacked" },
  secrets: { description: "hacked" },
  organizations: { website: "https://hacked.example" },
  members: { saml_active: true },
  quotas: { secrets: 999 },
  "premium-features": { webhooks: true }
}

const putBodies: Record<string, unknown> = {
  keys: { name: "hacked", enabled: false },
  secrets: { name: "hacked" },
  organizations: { name: "hacked" },
  "premium-features": { webhooks: true }
}

const services = ["keys", "secrets", "quotas", "premium-features", "organizations", "members"] as const

describe("tenant isolation: reading and writing another organization's objects", () => {
  for (const path of services) {
    it(`GET /v1/${path}/:id of B is 404`, async () => {
      const r = await asA("GET", `/v1/${path}/${bOf[path].id}`)
      expect404(r)
      expectNoLeak(r, path)
      // The same id read by its own organization works (the 404 is the scope, not the id).
      const own = await as(server.url, b.token)("GET", `/v1/${path}/${bOf[path].id}`)
      expect(own.status).toBe(200)
      expect(own.body.id).toBe(bOf[path].id)
    })
  }

  for (const path of ["keys", "secrets", "organizations", "members"] as const) {
    it(`PATCH /v1/${path}/:id of B is 404 and changes nothing`, async () => {
      const r = await asA("PATCH", `/v1/${path}/${bOf[path].id}`, { body: patchBodies[path] })
      expect404(r)
      expectNoLeak(r, path)
    })
  }

  for (const path of ["keys", "secrets", "organizations"] as const) {
    it(`PUT /v1/${path}/:id of B is 404`, async () => {
      const r = await asA("PUT", `/v1/${path}/${bOf[path].id}`, { body: putBodies[path] })
      expect404(r)
      expectNoLeak(r, path)
    })
  }

  for (const path of ["keys", "secrets", "members"] as const) {
    it(`DELETE /v1/${path}/:id of B is 404`, async () => {
      const r = await asA("DELETE", `/v1/${path}/${bOf[path].id}`)
      expect404(r)
      expectNoLeak(r, path)
    })
  }

  it("operator-only writes (quotas, premium features, removing an organization) are 403 whatever the id", async () => {
    for (const org of [a, b]) {
      const q = org === a ? aOf : bOf
      for (const r of [
        await asA("PATCH", `/v1/quotas/${q.quotas.id}`, { body: patchBodies.quotas }),
        await asA("PATCH", `/v1/premium-features/${q["premium-features"].id}`, { body: patchBodies["premium-features"] }),
        await asA("PUT", `/v1/premium-features/${q["premium-features"].id}`, { body: putBodies["premium-features"] }),
        await asA("DELETE", `/v1/organizations/${q.organizations.id}`)
      ]) {
        expect403(r)
        expect(r.text).not.toContain(b.org.name)
      }
    }
  })

  it("methods a service does not have are 405 whatever the id", async () => {
    expect405(await asA("PUT", `/v1/quotas/${bOf.quotas.id}`, { body: { secrets: 1 } }))
    expect405(await asA("DELETE", `/v1/quotas/${bOf.quotas.id}`))
    expect405(await asA("DELETE", `/v1/premium-features/${bOf["premium-features"].id}`))
    expect405(await asA("PUT", `/v1/members/${bOf.members.id}`, { body: { saml_active: true } }))
  })

  it("nothing of B was changed or removed by the attempts above", async () => {
    for (const path of services) {
      const r = await op.call("GET", `/v1/${path}/${bOf[path].id}`)
      expect(r.status, path).toBe(200)
      expect(r.body.version, path).toBe(bOf[path].version)
      expect(r.body.updated_at, path).toBe(bOf[path].updated_at)
    }
  })
})

describe("tenant isolation: creating in another organization", () => {
  it("keys and secrets in B are 403", async () => {
    const name = unique("intruder")
    expect403(await asA("POST", "/v1/keys", { body: { organization_id: b.org.id, name } }))
    expect403(await asA("POST", "/v1/secrets", { body: { organization_id: b.org.id, name } }))
    const keys = await op.call("GET", `/v1/keys?name=${name}`)
    const secrets = await op.call("GET", `/v1/secrets?name=${name}`)
    expect(keys.body.total).toBe(0)
    expect(secrets.body.total).toBe(0)
  })

  it("inviting a member into B is 403", async () => {
    const email = `${unique("intruder")}@example.com`
    expect403(await asA("POST", "/v1/members", { body: { organization_id: b.org.id, name: "X", email } }))
    expect((await op.call("GET", `/v1/members?organization_id=${b.org.id}`)).body.total).toBe(1)
  })

  it("quotas, premium features and organizations are 403 for a client", async () => {
    expect403(await asA("POST", "/v1/quotas", { body: { organization_id: b.org.id } }))
    expect403(await asA("POST", "/v1/premium-features", { body: { organization_id: b.org.id } }))
    expect403(await asA("POST", "/v1/organizations", { body: { name: unique("org") } }))
  })

  it("an unknown organization is 403 too (a client learns nothing about which exist)", async () => {
    const unknownOrg = await asA("POST", "/v1/keys", { body: { organization_id: "no-such-org", name: unique("k") } })
    const otherOrg = await asA("POST", "/v1/keys", { body: { organization_id: b.org.id, name: unique("k") } })
    expect403(unknownOrg)
    expect403(otherOrg)
    expect(unknownOrg.body.message).toBe(otherOrg.body.message)
  })
})

describe("tenant isolation: find", () => {
  for (const path of ["keys", "secrets", "quotas", "premium-features", "members"] as const) {
    it(`${path}: organization_id=B is 403, no filter returns only A's rows`, async () => {
      expect403(await asA("GET", `/v1/${path}?organization_id=${b.org.id}`))
      expect403(await asA("GET", `/v1/${path}?organization_id[$in][]=${a.org.id}&organization_id[$in][]=${b.org.id}`))
      expect403(await asA("GET", `/v1/${path}?organization_id=${b.org.id}&organization_id=${a.org.id}`))
      expect403(await asA("GET", `/v1/${path}?$or[0][organization_id]=${b.org.id}`))

      const all = await asA("GET", `/v1/${path}?$limit=1000`)
      expect(all.status).toBe(200)
      expect(all.body.total).toBeGreaterThan(0)
      expect(all.body.data.every((row: any) => row.organization_id === a.org.id)).toBe(true)
      expect(all.body.data.map((row: any) => row.id)).toContain(aOf[path].id)
      expect(all.body.data.map((row: any) => row.id)).not.toContain(bOf[path].id)
      expect(all.text).not.toContain(b.org.id)

      const own = await asA("GET", `/v1/${path}?organization_id=${a.org.id}`)
      expect(own.status).toBe(200)
      expect(own.body.total).toBe(all.body.total)

      // Negative filters stay inside A.
      const ne = await asA("GET", `/v1/${path}?organization_id[$ne]=${a.org.id}`)
      expect(ne.status).toBe(200)
      expect(ne.body.total).toBe(0)

      // An id filter on B's object finds nothing.
      const byId = await asA("GET", `/v1/${path}?id=${bOf[path].id}`)
      expect(byId.status).toBe(200)
      expect(byId.body.total).toBe(0)
    })
  }

  it("organizations: id=B is 403, no filter returns only A", async () => {
    expect403(await asA("GET", `/v1/organizations?id=${b.org.id}`))
    expect403(await asA("GET", `/v1/organizations?id[$in][]=${b.org.id}`))
    const all = await asA("GET", "/v1/organizations")
    expect(all.status).toBe(200)
    expect(all.body.total).toBe(1)
    expect(all.body.data.map((o: any) => o.id)).toEqual([a.org.id])
    const byName = await asA("GET", `/v1/organizations?name=${encodeURIComponent(b.org.name)}`)
    expect(byName.status).toBe(200)
    expect(byName.body.total).toBe(0)
  })

  it("the operator sees every organization's rows", async () => {
    const r = await op.call("GET", `/v1/keys?organization_id[$in][]=${a.org.id}&organization_id[$in][]=${b.org.id}`)
    expect(r.status).toBe(200)
    const orgs = new Set(r.body.data.map((k: any) => k.organization_id))
    expect(orgs).toEqual(new Set([a.org.id, b.org.id]))
  })
})
