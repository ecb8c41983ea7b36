import { describe, expect, it } from "vitest"
import { expect400, expect404, expect409 } from "./helpers.js"
import { useServer } from "./fixture.js"

/** Properties, and the cookies and vendors that hang off them (spec section 2, api.md). */
const { tenants: [a] } = useServer({}, { tenants: 1 })
const asA = a.call

const property = async (website: string | null = "https://www.example.com/home") => {
  const r = await asA("POST", "/v1/properties", { body: { organization_id: a.org.id, name: "Site", website } })
  expect(r.status, r.text).toBe(201)
  return r.body
}
const vendor = async (propertyId: string, metadataId = `m-${Math.random()}`) => {
  const r = await asA("POST", "/v1/vendors", { body: { property_id: propertyId, metadata_id: metadataId } })
  expect(r.status, r.text).toBe(201)
  return r.body
}
const cookieBody = (propertyId: string, extra: Record<string, unknown> = {}) => ({
  name: "_ga",
  domain: ".example.com",
  lifetime: 3600,
  taxonomy_id: "analytics",
  property_id: propertyId,
  ...extra
})

describe("properties", () => {
  it("answers every method: find, get, create, update, patch, remove", async () => {
    const p = await property()
    expect(p).toMatchObject({ organization_id: a.org.id, name: "Site", website: "https://www.example.com/home", version: 1 })
    expect((await asA("GET", `/v1/properties/${p.id}`)).body).toEqual(p)
    const found = await asA("GET", `/v1/properties?name=Site`)
    expect(found.body.data.map((x: { id: string }) => x.id)).toContain(p.id)
    const put = await asA("PUT", `/v1/properties/${p.id}`, { body: { name: "Renamed" } })
    expect(put.status, put.text).toBe(200)
    expect(put.body.website ?? null).toBeNull()
    const patched = await asA("PATCH", `/v1/properties/${p.id}`, { body: { website: "https://shop.example.org" } })
    expect(patched.body).toMatchObject({ name: "Renamed", website: "https://shop.example.org", version: 3 })
    expect((await asA("DELETE", `/v1/properties/${p.id}`)).status).toBe(200)
    expect404(await asA("GET", `/v1/properties/${p.id}`))
  })

  it("validates its fields: name required, website a URL, organization_id not updatable", async () => {
    expect400(await asA("POST", "/v1/properties", { body: { organization_id: a.org.id } }))
    expect400(await asA("POST", "/v1/properties", { body: { organization_id: a.org.id, name: "x", website: "ftp://x" } }))
    const p = await property()
    expect400(await asA("PATCH", `/v1/properties/${p.id}`, { body: { organization_id: "other" } }))
  })

  it("removing a property removes its cookies and vendors", async () => {
    const p = await property()
    const v = await vendor(p.id)
    const c = await asA("POST", "/v1/cookies", { body: cookieBody(p.id) })
    expect(c.status, c.text).toBe(201)
    await asA("DELETE", `/v1/properties/${p.id}`)
    expect404(await asA("GET", `/v1/cookies/${c.body.id}`))
    expect404(await asA("GET", `/v1/vendors/${v.id}`))
  })
})

describe("cookies", () => {
  it("answers every method and starts as a draft; find by property_id", async () => {
    const p = await property()
    const created = await asA("POST", "/v1/cookies", { body: cookieBody(p.id) })
    expect(created.status, created.text).toBe(201)
    expect(created.body).toMatchObject({ status: "draft", property_id: p.id, lifetime: 3600, version: 1 })
    expect(created.body.organization_id).toBeUndefined()
    const byProperty = await asA("GET", `/v1/cookies?property_id=${p.id}`)
    expect(byProperty.body.data.map((x: { id: string }) => x.id)).toEqual([created.body.id])
    const published = await asA("PATCH", `/v1/cookies/${created.body.id}`, { body: { status: "published" } })
    expect(published.body.status).toBe("published")
    const back = await asA("PATCH", `/v1/cookies/${created.body.id}`, { body: { status: "draft" } })
    expect(back.body.status).toBe("draft")
    expect400(await asA("PATCH", `/v1/cookies/${created.body.id}`, { body: { status: "archived" } }))
    const put = await asA("PUT", `/v1/cookies/${created.body.id}`, {
      body: { name: "_gid", domain: "example.com", status: "published", taxonomy_id: "t2" }
    })
    expect(put.status, put.text).toBe(200)
    expect(put.body.lifetime ?? null).toBeNull()
    expect((await asA("GET", `/v1/cookies/${created.body.id}`)).body).toEqual(put.body)
    expect((await asA("DELETE", `/v1/cookies/${created.body.id}`)).status).toBe(200)
  })

  it("domain must equal the property's domain or a sub-domain of it", async () => {
    const p = await property("https://www.example.com")
    for (const ok of ["example.com", ".example.com", "www.example.com", "a.b.example.com", "EXAMPLE.com"]) {
      const r = await asA("POST", "/v1/cookies", { body: cookieBody(p.id, { domain: ok }) })
      expect(r.status, `${ok}: ${r.text}`).toBe(201)
    }
    for (const bad of ["evil.com", "notexample.com", "example.com.evil.com", "com"]) {
      const r = await asA("POST", "/v1/cookies", { body: cookieBody(p.id, { domain: bad }) })
      expect400(r)
      expect(r.body.errors.domain, bad).toBeDefined()
    }
    const c = await asA("POST", "/v1/cookies", { body: cookieBody(p.id) })
    expect400(await asA("PATCH", `/v1/cookies/${c.body.id}`, { body: { domain: "evil.com" } }))
    const noSite = await property(null)
    expect400(await asA("POST", "/v1/cookies", { body: cookieBody(noSite.id) }))
  })

  it("lifetime is a non-negative integer of seconds; taxonomy_id and property_id are required", async () => {
    const p = await property()
    for (const lifetime of [-1, 1.5, "60", 2 ** 31]) {
      expect400(await asA("POST", "/v1/cookies", { body: cookieBody(p.id, { lifetime }) }))
    }
    expect((await asA("POST", "/v1/cookies", { body: cookieBody(p.id, { lifetime: 0 }) })).status).toBe(201)
    const { taxonomy_id: _t, ...noTaxonomy } = cookieBody(p.id)
    const r = await asA("POST", "/v1/cookies", { body: noTaxonomy })
    expect400(r)
    expect(r.body.errors.taxonomy_id).toBeDefined()
    expect400(await asA("POST", "/v1/cookies", { body: cookieBody("no-such-property") }))
    const c = await asA("POST", "/v1/cookies", { body: cookieBody(p.id) })
    // property_id is not updatable.
    expect400(await asA("PATCH", `/v1/cookies/${c.body.id}`, { body: { property_id: p.id } }))
  })

  it("vendor_id must be a vendor of the same property", async () => {
    const p = await property()
    const other = await property()
    const v = await vendor(p.id)
    const foreign = await vendor(other.id)
    expect((await asA("POST", "/v1/cookies", { body: cookieBody(p.id, { vendor_id: v.id }) })).status).toBe(201)
    const r = await asA("POST", "/v1/cookies", { body: cookieBody(p.id, { vendor_id: foreign.id }) })
    expect400(r)
    expect(r.body.errors.vendor_id).toBeDefined()
    expect400(await asA("POST", "/v1/cookies", { body: cookieBody(p.id, { vendor_id: "nope" }) }))
    const c = await asA("POST", "/v1/cookies", { body: cookieBody(p.id) })
    expect400(await asA("PATCH", `/v1/cookies/${c.body.id}`, { body: { vendor_id: foreign.id } }))
    // Removing the vendor leaves its cookies without one.
    const withVendor = await asA("PATCH", `/v1/cookies/${c.body.id}`, { body: { vendor_id: v.id } })
    expect(withVendor.body.vendor_id).toBe(v.id)
    await asA("DELETE", `/v1/vendors/${v.id}`)
    expect((await asA("GET", `/v1/cookies/${c.body.id}`)).body.vendor_id ?? null).toBeNull()
  })
})

describe("vendors", () => {
  it("answers every method; status draft/published; metadata_id required and unique per property", async () => {
    const p = await property()
    const v = await vendor(p.id, "meta-1")
    expect(v).toMatchObject({ status: "draft", property_id: p.id, metadata_id: "meta-1", version: 1 })
    expect(v.id).not.toBe("meta-1")
    expect((await asA("GET", `/v1/vendors?property_id=${p.id}`)).body.data).toHaveLength(1)
    expect((await asA("GET", `/v1/vendors/${v.id}`)).body).toEqual(v)
    expect((await asA("PATCH", `/v1/vendors/${v.id}`, { body: { status: "published" } })).body.status).toBe("published")
    expect400(await asA("PATCH", `/v1/vendors/${v.id}`, { body: { status: "live" } }))
    const put = await asA("PUT", `/v1/vendors/${v.id}`, { body: { status: "draft", metadata_id: "meta-2" } })
    expect(put.body).toMatchObject({ status: "draft", metadata_id: "meta-2" })
    const r = await asA("POST", "/v1/vendors", { body: { property_id: p.id } })
    expect400(r)
    expect(r.body.errors.metadata_id).toBeDefined()
    expect409(await asA("POST", "/v1/vendors", { body: { property_id: p.id, metadata_id: "meta-2" } }))
    expect400(await asA("POST", "/v1/vendors", { body: { property_id: "nope", metadata_id: "x" } }))
    expect((await asA("DELETE", `/v1/vendors/${v.id}`)).status).toBe(200)
  })
})
