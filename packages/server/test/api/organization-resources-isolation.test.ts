import * as fs from "node:fs"
import * as path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { as, expect400, expect403, expect404, type Tenant, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

/** Tenant isolation of every organization resource, and their OpenAPI entries. */
let propertyB: any

const cert = fs.readFileSync(path.join(import.meta.dirname, "fixtures", "localhost-cert.pem"), "utf8")

const { server, op, tenants: [a, b] } = useServer({}, { tenants: 2 })
const asA = a.call
const asB = b.call

beforeAll(async () => {
  for (const t of [a, b]) {
    const flags = await op.featuresOf(t.org.id)
    await op.call("PATCH", `/v1/premium-features/${flags.id}`, { body: { sso: true } })
  }
  propertyB = (await asB("POST", "/v1/properties", { body: { organization_id: b.org.id, name: "B", website: "https://b.example" } })).body
})

interface Case {
  readonly path: string
  /** A create body for organization `org` (property: that organization's property). */
  readonly body: (org: string, property: any) => Record<string, unknown>
  readonly patch?: Record<string, unknown>
  readonly put?: Record<string, unknown>
  readonly remove?: boolean
  /** Creates that name the organization through their property answer 400 (it reads as absent), not 403. */
  readonly viaProperty?: boolean
}

const cases: ReadonlyArray<Case> = [
  { path: "properties", body: (org) => ({ organization_id: org, name: "P" }), patch: { name: "X" }, put: { name: "X" }, remove: true },
  {
    path: "domains",
    body: (org) => ({ id: `${unique("iso")}.example.com`, organization_id: org, usage: "cmp" }),
    patch: { description: "x" },
    put: { enabled: true },
    remove: true
  },
  {
    path: "cookies",
    body: (_org, p) => ({ name: "c", domain: "b.example", taxonomy_id: "t", property_id: p.id }),
    patch: { name: "x" },
    put: { name: "x", domain: "b.example", status: "draft", taxonomy_id: "t" },
    remove: true,
    viaProperty: true
  },
  {
    path: "vendors",
    body: (_org, p) => ({ property_id: p.id, metadata_id: unique("m") }),
    patch: { status: "published" },
    put: { status: "published", metadata_id: "m" },
    remove: true,
    viaProperty: true
  },
  {
    path: "privacy-centers",
    body: (org) => ({ organization_id: org, name: "PC" }),
    patch: { name: "x" },
    put: { name: "x", auth_required: false },
    remove: true
  },
  {
    path: "sso-connections",
    body: (org) => ({ organization_id: org, idp_certificate: cert, idp_sign_in_endpoint: "https://idp.example.com" }),
    patch: { organization_id: "__A__", idp_sign_saml_request: true }
  },
  {
    path: "organizations-source-systems",
    body: (org) => ({ organization_id: org, source_system: "sp", source_system_id: unique("s") }),
    remove: true
  }
]

describe("organization resources: tenant isolation", () => {
  for (const c of cases) {
    it(`${c.path}: another organization's objects are 404, writing into it 403, filtering by it 403`, async () => {
      const created = await asB("POST", `/v1/${c.path}`, { body: c.body(b.org.id, propertyB) })
      expect(created.status, created.text).toBe(201)
      const id = encodeURIComponent(created.body.id)
      expect404(await asA("GET", `/v1/${c.path}/${id}`))
      if (c.patch) {
        const body = Object.fromEntries(Object.entries(c.patch).map(([k, v]) => [k, v === "__A__" ? a.org.id : v]))
        expect404(await asA("PATCH", `/v1/${c.path}/${id}`, { body }))
      }
      if (c.put) expect404(await asA("PUT", `/v1/${c.path}/${id}`, { body: c.put }))
      if (c.remove) expect404(await asA("DELETE", `/v1/${c.path}/${id}`))
      // Still there, unchanged.
      expect((await asB("GET", `/v1/${c.path}/${id}`)).body).toEqual(created.body)

      const intoB = await asA("POST", `/v1/${c.path}`, { body: c.body(b.org.id, propertyB) })
      if (c.viaProperty) {
        expect400(intoB)
        expect(intoB.body.errors.property_id).toBeDefined()
        expect(intoB.text).not.toContain(b.org.id)
      } else expect403(intoB)

      expect403(await asA("GET", `/v1/${c.path}?organization_id=${b.org.id}`))
      expect403(await asA("GET", `/v1/${c.path}?organization_id[$in][]=${b.org.id}`))
      const mine = await asA("GET", `/v1/${c.path}`)
      expect(mine.status).toBe(200)
      expect(mine.body.data.map((x: { id: string }) => x.id)).not.toContain(created.body.id)
      if (c.viaProperty) {
        const byProperty = await asA("GET", `/v1/${c.path}?property_id=${propertyB.id}`)
        expect(byProperty.body.data).toEqual([])
      }
    })
  }

  it("a member sees the organization resources of its organizations only", async () => {
    const email = `${unique("m")}@example.com`
    const inv = await asA("POST", "/v1/members", { body: { name: "M", email, organization_id: a.org.id } })
    const acc = await as(server.url, "")("POST", "/v1/invitations/accept", { body: { token: inv.body.invitation.token, password: "long enough password" } })
    expect(acc.status, acc.text).toBe(201)
    const asM = as(server.url, acc.body.access_token)
    const mine = await asM("POST", "/v1/properties", { body: { organization_id: a.org.id, name: "M" } })
    expect(mine.status, mine.text).toBe(201)
    expect403(await asM("POST", "/v1/properties", { body: { organization_id: b.org.id, name: "M" } }))
    expect404(await asM("GET", `/v1/properties/${propertyB.id}`))
    const found = await asM("GET", "/v1/properties")
    expect(found.body.data.every((p: { organization_id: string }) => p.organization_id === a.org.id)).toBe(true)
  })

  it("the OpenAPI document describes every organization resource and route", async () => {
    const doc = (await as(server.url, "")("GET", "/openapi.json")).body
    const expected: Record<string, ReadonlyArray<string>> = {
      "/v1/properties": ["get", "post"],
      "/v1/properties/{id}": ["get", "put", "patch", "delete"],
      "/v1/domains": ["get", "post"],
      "/v1/domains/{id}": ["get", "put", "patch", "delete"],
      "/v1/cookies": ["get", "post"],
      "/v1/cookies/{id}": ["get", "put", "patch", "delete"],
      "/v1/vendors": ["get", "post"],
      "/v1/vendors/{id}": ["get", "put", "patch", "delete"],
      "/v1/privacy-centers": ["get", "post"],
      "/v1/privacy-centers/{id}": ["get", "put", "patch", "delete"],
      "/v1/sso-connections": ["get", "post"],
      "/v1/sso-connections/{id}": ["get", "patch"],
      "/v1/organizations-source-systems": ["get", "post"],
      "/v1/organizations-source-systems/{id}": ["get", "delete"],
      "/v1/platform-integrations": ["get", "post"],
      "/v1/platform-integrations/{id}": ["get", "patch", "delete"],
      "/v1/platform-integrations/sessions": ["post"],
      "/v1/analytics/dashboards": ["get", "post"],
      "/v1/analytics/dashboards/{id}": ["get", "put", "patch", "delete"],
      "/v1/analytics/dashboards-urls": ["get"],
      "/v1/languages": ["get"]
    }
    for (const [p, methods] of Object.entries(expected)) {
      expect(Object.keys(doc.paths[p] ?? {}).sort(), p).toEqual([...methods].sort())
    }
    expect(doc.components.schemas.Domains.properties.status.enum).toContain("to_be_deleted")
    expect(doc.components.schemas.Languages).toBeDefined()
    expect(doc.components.schemas.PlatformIntegrationSession).toBeDefined()
  })
})
