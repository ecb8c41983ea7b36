import { describe, expect, it } from "vitest"
import { verifySignedUrl } from "@cmp/platform-node"
import { as, call, expect400, expect403, expect404, expect409, operatorOf, START, start } from "./helpers.js"
import { useServer } from "./fixture.js"

/** Source systems, platform integrations and their sessions, the dashboard catalogue and languages. */
const URL_KEY = "test-url-signing-key-0123456789-abcdef"

const { server, op, tenants: [a] } = useServer({ urlSigningKey: URL_KEY }, { tenants: 1 })
const asA = a.call

describe("organizations-source-systems", () => {
  it("create (201), find (list envelope), get, remove; no update or patch", async () => {
    const r = await asA("POST", "/v1/organizations-source-systems", {
      body: { organization_id: a.org.id, source_system: "sp", source_system_id: "sp-42" }
    })
    expect(r.status, r.text).toBe(201)
    expect(r.body).toMatchObject({ organization_id: a.org.id, source_system: "sp", source_system_id: "sp-42" })
    const found = await asA("GET", "/v1/organizations-source-systems")
    expect(Object.keys(found.body).sort()).toEqual(["data", "limit", "skip", "total"])
    expect(found.body).toMatchObject({ total: 1, skip: 0, limit: 100 })
    expect((await asA("GET", `/v1/organizations-source-systems/${r.body.id}`)).body).toEqual(r.body)
    expect((await asA("PATCH", `/v1/organizations-source-systems/${r.body.id}`, { body: {} })).status).toBe(405)
    expect((await asA("PUT", `/v1/organizations-source-systems/${r.body.id}`, { body: {} })).status).toBe(405)
    expect409(await asA("POST", "/v1/organizations-source-systems", {
      body: { organization_id: a.org.id, source_system: "sp", source_system_id: "sp-42" }
    }))
    expect((await asA("DELETE", `/v1/organizations-source-systems/${r.body.id}`)).status).toBe(200)
    expect404(await asA("GET", `/v1/organizations-source-systems/${r.body.id}`))
  })

  it("source_system is the enum sp; every field is required", async () => {
    const base = { organization_id: a.org.id, source_system: "sp", source_system_id: "x" }
    const r = await asA("POST", "/v1/organizations-source-systems", { body: { ...base, source_system: "sap" } })
    expect400(r)
    expect(r.body.errors.source_system).toBeDefined()
    for (const k of ["organization_id", "source_system", "source_system_id"]) {
      expect400(await asA("POST", "/v1/organizations-source-systems", { body: { ...base, [k]: undefined } }))
    }
  })
})

describe("platform integrations", () => {
  const register = async (organizationId: string, extra: Record<string, unknown> = {}) => {
    const r = await op.call("POST", "/v1/platform-integrations", { body: { name: "Shop plugin", organization_id: organizationId, ...extra } })
    expect(r.status, r.text).toBe(201)
    return r.body
  }
  const session = (token: string | undefined, body?: unknown) =>
    call(server.url, "POST", "/v1/platform-integrations/sessions", {
      headers: token === undefined ? {} : { "x-platform-authorization": token },
      ...(body === undefined ? {} : { body })
    })

  it("is an operator registry: the token is shown once; clients get 403", async () => {
    const i = await register(a.org.id)
    expect(i.token).toMatch(/^pit_/)
    expect(i).toMatchObject({ enabled: true, organization_id: a.org.id })
    const got = await op.call("GET", `/v1/platform-integrations/${i.id}`)
    expect(got.body.token).toBeUndefined()
    expect(got.body.token_hash).toBeUndefined()
    expect((await op.call("GET", "/v1/platform-integrations")).body.data.some((x: { token?: string }) => x.token)).toBe(false)
    expect((await op.call("PATCH", `/v1/platform-integrations/${i.id}`, { body: { name: "Renamed" } })).body.name).toBe("Renamed")
    expect403(await asA("GET", "/v1/platform-integrations"))
    expect403(await asA("GET", `/v1/platform-integrations/${i.id}`))
    expect403(await asA("POST", "/v1/platform-integrations", { body: { name: "x", organization_id: a.org.id } }))
    expect403(await asA("PATCH", `/v1/platform-integrations/${i.id}`, { body: { name: "x" } }))
    expect403(await asA("DELETE", `/v1/platform-integrations/${i.id}`))
    expect400(await op.call("POST", "/v1/platform-integrations", { body: { name: "x", organization_id: "no-such-org" } }))
    expect((await op.call("DELETE", `/v1/platform-integrations/${i.id}`)).status).toBe(200)
  })

  it("a session: 201 { type: api-key, key, access_token, platform_integration_id } acting in the integration's organization", async () => {
    const b = await op.tenant()
    const i = await register(a.org.id)
    const r = await session(i.token)
    expect(r.status, r.text).toBe(201)
    expect(r.body).toEqual({ type: "api-key", key: i.id, access_token: expect.any(String), platform_integration_id: i.id })
    expect((await session(i.token, {})).status).toBe(201)
    const asI = as(server.url, r.body.access_token)
    const orgs = await asI("GET", "/v1/organizations")
    expect(orgs.body.data.map((o: { id: string }) => o.id)).toEqual([a.org.id])
    expect404(await asI("GET", `/v1/organizations/${b.org.id}`))
    expect403(await asI("GET", "/v1/platform-integrations"))
  })

  it("refuses a missing, wrong or disabled token, and a non-empty body", async () => {
    const i = await register(a.org.id)
    expect400(await session(undefined))
    expect400(await session("pit_nope.secret"))
    expect400(await session(`${i.token}x`))
    expect400(await session(i.token, { extra: 1 }))
    await op.call("PATCH", `/v1/platform-integrations/${i.id}`, { body: { enabled: false } })
    expect400(await session(i.token))
  })
})

describe("analytics dashboards", () => {
  const entry = (extra: Record<string, unknown> = {}) => ({
    name: "Consents",
    type: "tool-a",
    product: "cmp",
    aggregation_period: "daily",
    category: "analytics",
    target_url: "https://dash.example.com/d/1?theme=dark",
    ...extra
  })

  it("the catalogue is operator-only; a client finds its own and the platform's entries with signed, expiring URLs", async () => {
    const b = await op.tenant()
    const platform = await op.call("POST", "/v1/analytics/dashboards", { body: entry({ order: 1 }) })
    expect(platform.status, platform.text).toBe(201)
    const mine = await op.call("POST", "/v1/analytics/dashboards", {
      body: entry({ organization_id: a.org.id, category: "home", name: "Home", order: 2.5 })
    })
    expect(mine.status, mine.text).toBe(201)
    const theirs = await op.call("POST", "/v1/analytics/dashboards", { body: entry({ organization_id: b.org.id }) })
    expect(theirs.status).toBe(201)
    expect403(await asA("POST", "/v1/analytics/dashboards", { body: entry() }))
    expect403(await asA("GET", "/v1/analytics/dashboards"))
    expect400(await op.call("POST", "/v1/analytics/dashboards", { body: entry({ product: "crm" }) }))
    expect400(await op.call("POST", "/v1/analytics/dashboards", { body: entry({ aggregation_period: "yearly" }) }))
    expect400(await op.call("POST", "/v1/analytics/dashboards", { body: entry({ organization_id: "no-such-org" }) }))

    const found = await asA("GET", "/v1/analytics/dashboards-urls?$sort[order]=1")
    expect(found.status, found.text).toBe(200)
    expect(found.body.data.map((d: { id: string }) => d.id)).toEqual([platform.body.id, mine.body.id])
    const now = START / 1000
    for (const d of found.body.data) {
      expect(d.target_url).toBeUndefined()
      expect(d.organization_id).toBeUndefined()
      const url = new URL(d.url)
      expect(url.origin + url.pathname).toBe("https://dash.example.com/d/1")
      expect(url.searchParams.get("theme")).toBe("dark")
      const expires = Number(url.searchParams.get("expires"))
      expect(expires).toBeGreaterThan(now)
      expect(expires).toBeLessThanOrEqual(now + 15 * 60)
      expect(verifySignedUrl(URL_KEY, d.url, now)).toBe(true)
      expect(verifySignedUrl(URL_KEY, d.url, expires)).toBe(false)
      expect(verifySignedUrl("another-key-0123456789-0123456789-ab", d.url, now)).toBe(false)
      expect(verifySignedUrl(URL_KEY, d.url.replace("theme=dark", "theme=light"), now)).toBe(false)
    }
    const home = await asA("GET", "/v1/analytics/dashboards-urls?category=home")
    expect(home.body.data.map((d: { id: string }) => d.id)).toEqual([mine.body.id])
    const paged = await asA("GET", "/v1/analytics/dashboards-urls?$limit=1&$skip=1&$sort[order]=1")
    expect(paged.body).toMatchObject({ total: 2, limit: 1, skip: 1 })
    expect(paged.body.data.map((d: { id: string }) => d.id)).toEqual([mine.body.id])
    expect400(await asA("GET", "/v1/analytics/dashboards-urls?target_url=x"))
    expect((await asA("POST", "/v1/analytics/dashboards-urls", { body: {} })).status).toBe(405)
    // The catalogue entry keeps the unsigned target and can be changed and removed by the operator.
    const patched = await op.call("PATCH", `/v1/analytics/dashboards/${mine.body.id}`, { body: { name: "Start" } })
    expect(patched.body).toMatchObject({ name: "Start", target_url: "https://dash.example.com/d/1?theme=dark" })
    expect((await op.call("DELETE", `/v1/analytics/dashboards/${theirs.body.id}`)).status).toBe(200)
  })
})

describe("languages", () => {
  it("answers the object itself with sane defaults, to an authenticated caller", async () => {
    const r = await asA("GET", "/v1/languages")
    expect(r.status).toBe(200)
    expect(r.body.default).toBe("en")
    expect(r.body.available).toContain("en")
    expect(r.body.available).toContain("fr")
    expect(r.body.defaultCountries.en).toBe("GB")
    expect(r.body.total).toBeUndefined()
    expect((await call(server.url, "GET", "/v1/languages")).status).toBe(401)
  })

  it("comes from configuration", async () => {
    const s = await start({ settings: { languages: { available: ["de", "de-AT"], default: "de", defaultCountries: { de: "DE" } } } })
    try {
      const o = await operatorOf(s.url)
      expect((await o.call("GET", "/v1/languages")).body).toEqual({ available: ["de", "de-AT"], default: "de", defaultCountries: { de: "DE" } })
    } finally {
      await s.close()
    }
  })
})
