import { beforeAll, describe, expect, it } from "vitest"
import { ADMIN, call, type CallOptions, expect400, expect403, type Reply, unique } from "./helpers.js"
import { type TestTenant, useServer } from "./fixture.js"

/**
 * Which web pages may record consent with an organization's public key: a request carrying
 * `Origin` is served only from the organization's own origins (its properties' websites, its
 * ready domains, its privacy centers' custom domains, over https), with the CORS headers that
 * let the page read the answer; any other origin is a 403 without them. The preflight answers
 * any origin, and a change of those rows through the server is seen at once.
 */

const unlimited = { publicRateLimit: { perKey: 1_000_000, perAddress: 1_000_000 } }
// Plain HTTP is allowed (the default of the test server), so loopback http origins may be served.
const { server, tenant } = useServer({ allowHttp: true, ...unlimited })

const FEATURES = { store_guest_cmp_consents: true, store_cmp_consents: true, consents_api: true }

const guestEvent = (t: TestTenant) => ({
  organization_id: t.org.id,
  user: { id: unique("device") },
  consents: { purposes: [{ id: "analytics", enabled: true }] }
})

/** A public write as a page at `origin` sends it (no Origin: an app or a server). */
const publicWrite = (base: string, t: TestTenant, origin: string | undefined, options: CallOptions & { readonly query?: boolean } = {}) =>
  call(base, "POST", options.query ? `/v1/consents/events?public_api_key=${encodeURIComponent(t.org.public_api_key)}` : "/v1/consents/events", {
    body: options.body ?? guestEvent(t),
    ...(options.rawBody === undefined ? {} : { rawBody: options.rawBody }),
    headers: { ...(options.query ? {} : { "x-public-api-key": t.org.public_api_key }), ...(origin === undefined ? {} : { origin }), ...options.headers }
  })

const corsHeaders = (r: Reply) => {
  const names: Array<string> = []
  r.headers.forEach((_, name) => {
    if (name.startsWith("access-control-")) names.push(name)
  })
  return names
}

const varyOf = (r: Reply) => (r.headers.get("vary") ?? "").split(",").map((v) => v.trim().toLowerCase())

/** Served to the page: the answer names the origin back, and says it depends on it. */
const expectAllowed = (r: Reply, origin: string, status = 201) => {
  expect([origin, r.status], r.text).toEqual([origin, status])
  expect(r.headers.get("access-control-allow-origin"), origin).toBe(origin)
  expect(varyOf(r), origin).toContain("origin")
}

/** Refused: a 403 the page cannot even read. */
const expectRefused = (r: Reply, origin: string) => {
  expect([origin, r.status], r.text).toEqual([origin, 403])
  expect403(r)
  expect(corsHeaders(r), origin).toEqual([])
}

const created = async (t: TestTenant, path: string, body: Record<string, unknown>) => {
  const r = await t.call("POST", path, { body: { organization_id: t.org.id, ...body } })
  expect(r.status, r.text).toBe(201)
  return r.body
}

const countEvents = async (t: TestTenant) => {
  const r = await t.call("GET", "/v1/consents/events?$limit=1")
  expect(r.status, r.text).toBe(200)
  return r.body.total as number
}

describe("origins of an organization", () => {
  let t: TestTenant
  let other: TestTenant
  const name = unique("site")
  const shop = `https://${name}.example.com`
  const app = `https://app-${name}.example.com:8443`
  const ready = `ready-${name}.example.com`
  const draft = `draft-${name}.example.com`
  const centerHost = `privacy-${name}.example.com`
  const theirs = `https://their-${name}.example.com`

  beforeAll(async () => {
    t = await tenant(FEATURES)
    other = await tenant(FEATURES)
    await created(t, "/v1/properties", { name: "Shop", website: `${shop}/fr/index.html?x=1` })
    await created(t, "/v1/properties", { name: "App", website: `${app}/` })
    await created(t, "/v1/properties", { name: "No website" })
    await created(t, "/v1/domains", { id: ready, usage: "cmp" })
    const scheduled = await t.call("PATCH", `/v1/domains/${ready}`, { body: { status: "scheduled" } })
    expect(scheduled.body.status).toBe("ready")
    await created(t, "/v1/domains", { id: draft, usage: "cmp" })
    await created(t, "/v1/privacy-centers", { name: "Privacy", custom_domains: [centerHost] })
    await created(other, "/v1/properties", { name: "Theirs", website: theirs })
  })

  it("a property's website (its host, with the port it names), a ready domain, a privacy center's custom domain: served", async () => {
    for (const origin of [shop, app, `https://${ready}`, `https://${centerHost}`]) {
      for (const query of [false, true]) expectAllowed(await publicWrite(server.url, t, origin, { query }), origin)
    }
  })

  it("any other origin is a 403 without CORS headers, and records nothing", async () => {
    const before = await countEvents(t)
    const refused = [
      `https://${draft}`,
      theirs,
      `https://evil-${name}.example.com`,
      `https://sub.${name}.example.com`,
      `${shop}:8443`,
      app.replace(":8443", ""),
      app.replace(":8443", ":9443"),
      shop.replace("https://", "http://"),
      `https://${ready}.evil.example`,
      "null",
      "not an origin"
    ]
    for (const origin of refused) {
      for (const query of [false, true]) expectRefused(await publicWrite(server.url, t, origin, { query }), origin)
    }
    expect(await countEvents(t)).toBe(before)
    // The other organization's own origin is its own.
    expectAllowed(await publicWrite(server.url, other, theirs), theirs)
  })

  it("an allowed origin's error answers carry the CORS headers too", async () => {
    const missingUser = await publicWrite(server.url, t, shop, { body: { ...guestEvent(t), user: {} } })
    expect400(missingUser)
    expectAllowed(missingUser, shop, 400)
    const malformed = await publicWrite(server.url, t, shop, { rawBody: "{" })
    expectAllowed(malformed, shop, 400)
    const unsigned = await publicWrite(server.url, t, shop, {
      body: { ...guestEvent(t), user: { organization_user_id: unique("crm") } }
    })
    expectAllowed(unsigned, shop, 403)
    const tooLarge = await publicWrite(server.url, t, shop, { rawBody: JSON.stringify({ ...guestEvent(t), metadata: { pad: "x".repeat(70 * 1024) } }) })
    expectAllowed(tooLarge, shop, 413)
    const form = await publicWrite(server.url, t, shop, { rawBody: "a=1", headers: { "content-type": "application/x-www-form-urlencoded" } })
    expectAllowed(form, shop, 415)
    const duplicate = await publicWrite(server.url, t, shop, { body: { ...guestEvent(t), id: unique("beacon") } })
    expectAllowed(duplicate, shop)
    expectAllowed(await publicWrite(server.url, t, shop, { body: { ...guestEvent(t), id: duplicate.body.id } }), shop, 409)
  })

  it("without Origin (an app, a server), a write is served, with no CORS headers", async () => {
    const bare = await tenant(FEATURES)
    for (const query of [false, true]) {
      const r = await publicWrite(server.url, bare, undefined, { query })
      expect(r.status, r.text).toBe(201)
      expect(corsHeaders(r)).toEqual([])
    }
  })

  it("a backend's bearer is not checked for its origin and gets no CORS headers", async () => {
    const r = await call(server.url, "POST", "/v1/consents/events", {
      token: t.token,
      headers: { origin: `https://evil-${name}.example.com` },
      body: { ...guestEvent(t), user: { organization_user_id: unique("crm") } }
    })
    expect(r.status, r.text).toBe(201)
    expect(corsHeaders(r)).toEqual([])
    const list = await call(server.url, "GET", "/v1/consents/events", { token: t.token, headers: { origin: shop } })
    expect(list.status, list.text).toBe(200)
    expect(corsHeaders(list)).toEqual([])
  })

  it("a consent token's requests are checked for their origin as public writes are", async () => {
    const ouid = unique("crm")
    const granted = await t.call("POST", "/v1/consents/tokens", { body: { organization_id: t.org.id, organization_user_id: ouid } })
    expect(granted.status, granted.text).toBe(201)
    const body = { organization_id: t.org.id, user: { organization_user_id: ouid }, consents: { purposes: [{ id: "analytics", enabled: true }] } }
    const asUser = (origin: string, method: string, path: string, options: CallOptions = {}) =>
      call(server.url, method, path, { token: granted.body.id_token, ...options, headers: { origin } })
    expectAllowed(await asUser(shop, "POST", "/v1/consents/events", { body }), shop)
    expectAllowed(await asUser(`https://${centerHost}`, "GET", "/v1/consents/events"), `https://${centerHost}`, 200)
    expectRefused(await asUser(theirs, "POST", "/v1/consents/events", { body }), theirs)
    expectRefused(await asUser(theirs, "GET", `/v1/consents/users/${encodeURIComponent(ouid)}?$by_organization_user_id=true`), theirs)
  })
})

describe("the preflight", () => {
  it("OPTIONS of the public routes is 204 to any origin, with the methods, headers and max age", async () => {
    for (const path of ["/v1/consents/events", `/v1/consents/users/${unique("user")}`]) {
      for (const origin of ["https://anyone.example.org", "https://shop.example.com:8443", "http://localhost:5173"]) {
        const r = await call(server.url, "OPTIONS", path, {
          headers: {
            origin,
            "access-control-request-method": path.endsWith("events") ? "POST" : "GET",
            "access-control-request-headers": "content-type, x-public-api-key"
          }
        })
        expect([path, origin, r.status], r.text).toEqual([path, origin, 204])
        expect(r.headers.get("access-control-allow-origin")).toBe(origin)
        const methods = (r.headers.get("access-control-allow-methods") ?? "").split(",").map((m) => m.trim().toUpperCase())
        // A page posts events with the key; with a consent token it also reads events and its user.
        expect(methods, path).toEqual(expect.arrayContaining(path.endsWith("events") ? ["GET", "POST"] : ["GET"]))
        const allowed = (r.headers.get("access-control-allow-headers") ?? "").split(",").map((h) => h.trim().toLowerCase())
        expect([...allowed].sort()).toEqual(["authorization", "content-type", "x-public-api-key"])
        expect(r.headers.get("access-control-max-age")).toBe("600")
        expect(varyOf(r)).toContain("origin")
        expect(r.text).toBe("")
      }
    }
  })
})

describe("changes are seen at once", () => {
  it("a property created, changed or removed through the server allows or refuses its origin from the next request", async () => {
    const t = await tenant(FEATURES)
    const first = `https://${unique("first")}.example.com`
    const second = `https://${unique("second")}.example.com:4443`
    expectRefused(await publicWrite(server.url, t, first), first)
    const property = await created(t, "/v1/properties", { name: "Site", website: first })
    expectAllowed(await publicWrite(server.url, t, first), first)
    const moved = await t.call("PATCH", `/v1/properties/${property.id}`, { body: { website: second } })
    expect(moved.status, moved.text).toBe(200)
    expectRefused(await publicWrite(server.url, t, first), first)
    expectAllowed(await publicWrite(server.url, t, second), second)
    const replaced = await t.call("PUT", `/v1/properties/${property.id}`, { body: { name: "Site", website: first } })
    expect(replaced.status, replaced.text).toBe(200)
    expectAllowed(await publicWrite(server.url, t, first), first)
    expectRefused(await publicWrite(server.url, t, second), second)
    expect((await t.call("DELETE", `/v1/properties/${property.id}`)).status).toBe(200)
    expectRefused(await publicWrite(server.url, t, first), first)
  })

  it("a domain made ready, then removed; a privacy center's custom domains changed", async () => {
    const t = await tenant(FEATURES)
    const host = `${unique("d")}.example.com`
    const origin = `https://${host}`
    await created(t, "/v1/domains", { id: host, usage: "cmp" })
    expectRefused(await publicWrite(server.url, t, origin), origin)
    expect((await t.call("PATCH", `/v1/domains/${host}`, { body: { status: "scheduled" } })).body.status).toBe("ready")
    expectAllowed(await publicWrite(server.url, t, origin), origin)
    expect((await t.call("PATCH", `/v1/domains/${host}`, { body: { status: "to_be_deleted" } })).status).toBe(200)
    expectRefused(await publicWrite(server.url, t, origin), origin)

    const centerHost = `${unique("pc")}.example.com`
    const center = await created(t, "/v1/privacy-centers", { name: "Privacy" })
    expectRefused(await publicWrite(server.url, t, `https://${centerHost}`), `https://${centerHost}`)
    expect((await t.call("PATCH", `/v1/privacy-centers/${center.id}`, { body: { custom_domains: [centerHost] } })).status).toBe(200)
    expectAllowed(await publicWrite(server.url, t, `https://${centerHost}`), `https://${centerHost}`)
    expect((await t.call("DELETE", `/v1/privacy-centers/${center.id}`)).status).toBe(200)
    expectRefused(await publicWrite(server.url, t, `https://${centerHost}`), `https://${centerHost}`)
  })
})

describe("plain http origins", () => {
  it("with plain HTTP allowed: a loopback website over http is served; any other http origin is refused", async () => {
    const t = await tenant(FEATURES)
    await created(t, "/v1/properties", { name: "Local", website: "http://localhost:5173" })
    await created(t, "/v1/properties", { name: "Loopback", website: "http://127.0.0.1:8080/app" })
    await created(t, "/v1/properties", { name: "Staging", website: "http://staging.example.com" })
    expectAllowed(await publicWrite(server.url, t, "http://localhost:5173"), "http://localhost:5173")
    expectAllowed(await publicWrite(server.url, t, "http://127.0.0.1:8080"), "http://127.0.0.1:8080")
    for (const origin of ["http://localhost:3000", "http://localhost", "http://staging.example.com", "http://127.0.0.1:9090"]) {
      expectRefused(await publicWrite(server.url, t, origin), origin)
    }
  })

  describe("without ALLOW_HTTP (behind a proxy that terminates TLS)", () => {
    const proxied = useServer({ ...unlimited, allowHttp: false, trustProxy: true }, { operator: false })
    const https = { "x-forwarded-proto": "https" }
    /** The operator's calls through the proxy. */
    const viaProxy = (token: string | undefined) => (method: string, path: string, options: CallOptions = {}) =>
      call(proxied.base, method, path, { ...options, ...(token === undefined ? {} : { token }), headers: { ...https, ...options.headers } })

    it("a loopback http origin is refused; its https twin is served", async () => {
      const signedIn = await viaProxy(undefined)("POST", "/v1/sessions", { body: { type: "api-key", ...ADMIN } })
      expect(signedIn.status, signedIn.text).toBe(201)
      const asOp = viaProxy(signedIn.body.access_token)
      const org = await asOp("POST", "/v1/organizations", { body: { name: unique("org") } })
      expect(org.status, org.text).toBe(201)
      const flags = await asOp("GET", `/v1/premium-features?organization_id=${org.body.id}`)
      expect((await asOp("PATCH", `/v1/premium-features/${flags.body.data[0].id}`, { body: FEATURES })).status).toBe(200)
      for (const website of ["http://localhost:5173", "https://localhost:5173"]) {
        const p = await asOp("POST", "/v1/properties", { body: { organization_id: org.body.id, name: website, website } })
        expect(p.status, p.text).toBe(201)
      }
      const t = { org: org.body } as TestTenant
      expectRefused(await publicWrite(proxied.base, t, "http://localhost:5173", { headers: https }), "http://localhost:5173")
      expectAllowed(await publicWrite(proxied.base, t, "https://localhost:5173", { headers: https }), "https://localhost:5173")
    })
  })
})
