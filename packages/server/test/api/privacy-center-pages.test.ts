import { parse } from "node-html-parser"
import { describe, expect, it } from "vitest"
import { expect400, getPage, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * The hosted privacy centers, as a visitor's browser asks for them: `/privacy/<id>` on any host,
 * `/` and `/robots.txt` of a proven page host, the page's stylesheet and script, the headers,
 * a policy and texts that try to run code, and the page's own writes accepted from its origin.
 */

const { server, op, tenant } = useServer({})

const get = (path: string, headers: Record<string, string> = {}, method = "GET") => getPage(server.url, path, headers, method)

const host = () => `${unique("privacy")}.example.com`

const centerOf = async (t: Awaited<ReturnType<typeof tenant>>, extra: Record<string, unknown> = {}) => {
  const r = await t.call("POST", "/v1/privacy-centers", { body: { organization_id: t.org.id, name: "Acme privacy", ...extra } })
  expect(r.status, r.text).toBe(201)
  return r.body
}

/** A page host of the tenant, made `ready` by the operator (a check made by hand). */
const provenHost = async (t: Awaited<ReturnType<typeof tenant>>, name: string, extra: Record<string, unknown> = {}) => {
  const made = await t.call("POST", "/v1/domains", { body: { id: name, organization_id: t.org.id, usage: "privacy-center", ...extra } })
  expect(made.status, made.text).toBe(201)
  const ready = await op.call("PATCH", `/v1/domains/${name}`, { body: { status: "ready" } })
  expect(ready.status, ready.text).toBe(200)
  return ready.body
}

const directives = (csp: string | ReadonlyArray<string> | undefined) =>
  Object.fromEntries(String(csp ?? "").split(";").map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name, values]))

describe("privacy center pages", () => {
  it("/privacy/<id> answers the page, in HTML, with the headers of a page nobody may frame", async () => {
    const t = await tenant()
    const c = await centerOf(t, {
      legal_name: "Acme SA",
      customization: { logo: "https://cdn.acme.example/logo.png", colors: { primary: "#0a7" } },
      privacy_policy: "# Our policy\n\nWe keep [little](https://acme.example/data).",
      contact: { email: "dpo@acme.example" }
    })
    const page = await get(`/privacy/${c.id}`)
    expect(page.status, page.text).toBe(200)
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8")
    const csp = directives(page.headers["content-security-policy"])
    expect(csp).toMatchObject({
      "default-src": ["'self'"],
      "script-src": ["'self'"],
      "img-src": ["'self'", "https://cdn.acme.example"],
      "frame-ancestors": ["'none'"],
      "base-uri": ["'none'"],
      "form-action": ["'self'"],
      "object-src": ["'none'"]
    })
    expect(page.headers["referrer-policy"]).toBe("no-referrer")
    expect(page.headers["content-language"]).toBe("en")
    expect(page.headers["x-content-type-options"]).toBe("nosniff")
    const root = parse(page.text)
    expect(root.querySelector("html")!.getAttribute("lang")).toBe("en")
    expect(root.querySelector("h1")!.text).toBe("Acme privacy")
    expect(root.querySelector("img")!.getAttribute("src")).toBe("https://cdn.acme.example/logo.png")
    expect(root.querySelector(".pc-policy h3")!.text).toBe("Our policy")
    expect(root.querySelector(".pc-policy a")!.getAttribute("href")).toBe("https://acme.example/data")
    expect(page.text).toContain("Acme SA")
    expect(page.text).toContain("dpo@acme.example")
    // Its stylesheet and script come from the same origin, and are served.
    const stylesheet = root.querySelector("link[rel=stylesheet]")!.getAttribute("href")!
    expect(stylesheet.startsWith(`/privacy/${c.id}/style.css`)).toBe(true)
    const css = await get(stylesheet)
    expect(css.status).toBe(200)
    expect(css.headers["content-type"]).toBe("text/css; charset=utf-8")
    expect(css.text).toContain("--pc-primary: #00aa77")
    const script = root.querySelector("script")!.getAttribute("src")!
    expect(script).toMatch(/^\/privacy\/assets\/preferences-[0-9a-f]{8}\.js$/)
    const js = await get(script)
    expect(js.status).toBe(200)
    expect(js.headers["content-type"]).toBe("text/javascript; charset=utf-8")
    expect(js.headers["cache-control"]).toContain("immutable")
    // It names its icon, so that browsers do not ask for /favicon.ico, which no page host serves.
    const icon = await get(root.querySelector("link[rel=icon]")!.getAttribute("href")!)
    expect(icon.status).toBe(200)
    expect(icon.headers["content-type"]).toBe("image/svg+xml")
    expect(icon.text).toMatch(/^<svg /)
    // HEAD answers the same headers and no body; a write is not a page's.
    const head = await get(`/privacy/${c.id}`, {}, "HEAD")
    expect(head.status).toBe(200)
    expect(head.text).toBe("")
    const post = await get(`/privacy/${c.id}`, {}, "POST")
    expect(post.status).toBe(405)
    expect(post.headers.allow).toBe("GET, HEAD")
  })

  it("an unknown id, a removed center, and a path under it are the same 404 page, in HTML", async () => {
    const t = await tenant()
    const c = await centerOf(t)
    await t.call("DELETE", `/v1/privacy-centers/${c.id}`)
    const pages = await Promise.all([
      get(`/privacy/${c.id}`),
      get(`/privacy/${unique("nothing")}`),
      get(`/privacy/${c.id}/elsewhere`),
      get("/privacy/"),
      get("/privacy/assets/unknown.js")
    ])
    for (const page of pages) {
      expect(page.status).toBe(404)
      expect(page.headers["content-type"]).toBe("text/html; charset=utf-8")
      expect(page.headers["content-security-policy"]).toContain("frame-ancestors 'none'")
      expect(page.text).toBe(pages[0]!.text)
    }
    expect(parse(pages[0]!.text).querySelector("h1")!.text).toBe("Page not found")
    const french = await get(`/privacy/${c.id}`, { "accept-language": "fr-CA, en;q=0.5" })
    expect(parse(french.text).querySelector("html")!.getAttribute("lang")).toBe("fr")
  })

  it("the language comes from ?lang=, else Accept-Language, among the center's languages, else the first listed", async () => {
    const t = await tenant()
    const c = await centerOf(t, {
      languages: ["de", "fr", "en"],
      content: { en: { title: "Your privacy" }, fr: { title: "Votre vie privée" }, de: { title: "Ihre Privatsphäre" } },
      privacy_policy: "We keep little.",
      contact: { email: "dpo@acme.example" }
    })
    const titleOf = async (path: string, headers: Record<string, string> = {}) => {
      const page = await get(path, headers)
      const root = parse(page.text)
      return [root.querySelector("html")!.getAttribute("lang"), root.querySelector("h1")!.text, page.headers["content-language"], page.headers.vary]
    }
    expect(await titleOf(`/privacy/${c.id}?lang=fr`)).toEqual(["fr", "Votre vie privée", "fr", "Accept-Language"])
    expect(await titleOf(`/privacy/${c.id}`, { "accept-language": "it;q=1, en;q=0.8, fr;q=0.9" })).toEqual(["fr", "Votre vie privée", "fr", "Accept-Language"])
    expect(await titleOf(`/privacy/${c.id}?lang=es`, { "accept-language": "en" })).toEqual(["en", "Your privacy", "en", "Accept-Language"])
    expect(await titleOf(`/privacy/${c.id}`, { "accept-language": "ja" })).toEqual(["de", "Ihre Privatsphäre", "de", "Accept-Language"])
    // The page's own words follow: its section headings in German.
    const german = parse((await get(`/privacy/${c.id}`)).text)
    expect(german.querySelectorAll("h2").map((h) => h.text)).toEqual(["Datenschutzerklärung", "Kontakt"])
  })

  it("display_cookies list shows the organization's published cookies: name, domain, lifetime in days or session, vendor", async () => {
    const t = await tenant()
    const property = await t.call("POST", "/v1/properties", { body: { organization_id: t.org.id, name: "Shop", website: "https://shop.acme.example" } })
    const vendor = await t.call("POST", "/v1/vendors", { body: { property_id: property.body.id, metadata_id: "google-analytics", status: "published" } })
    expect(vendor.status, vendor.text).toBe(201)
    const cookie = (name: string, extra: Record<string, unknown>) =>
      t.call("POST", "/v1/cookies", { body: { property_id: property.body.id, name, domain: "shop.acme.example", taxonomy_id: "analytics", ...extra } })
    expect((await cookie("_ga", { lifetime: 63_072_000, vendor_id: vendor.body.id, status: "published" })).status).toBe(201)
    expect((await cookie("sid", { status: "published" })).status).toBe(201)
    expect((await cookie("_draft", { lifetime: 10 })).status).toBe(201)
    const c = await centerOf(t, { display_cookies: "list" })
    const page = await get(`/privacy/${c.id}`)
    expect(page.headers["cache-control"]).toBe("no-cache")
    const rows = parse(page.text).querySelectorAll("tbody tr").map((tr) => tr.querySelectorAll("td").map((td) => td.text))
    expect(rows).toEqual([["_ga", "shop.acme.example", "730 days", "google-analytics"], ["sid", "shop.acme.example", "Session", ""]])
    // Another organization's cookies are not its.
    const other = await tenant()
    const theirs = await centerOf(other, { display_cookies: "list" })
    expect(parse((await get(`/privacy/${theirs.id}`)).text).querySelectorAll("tbody tr")).toHaveLength(0)
  })

  it("a policy, a name or texts that try to run code render inert", async () => {
    const t = await tenant()
    const c = await centerOf(t, {
      name: "<script>alert(1)</script>",
      legal_name: "<img src=x onerror=alert(1)>",
      privacy_policy: [
        "<script>alert(1)</script>",
        "[click](javascript:alert(1)) [jump](JaVaScRiPt:alert(1)) [data](data:text/html;base64,PHNjcmlwdD4=)",
        "![pixel](data:image/png;base64,iVBORw0KGgo=) <img src=x onerror=alert(1)>",
        "<a href=\"javascript:alert(1)\">raw</a> <iframe src=\"https://evil.example\"></iframe>"
      ].join("\n\n"),
      contact: { email: "dpo@acme.example", schedule: "<script>alert(1)</script>", address: "<svg onload=alert(1)>" },
      content: { en: { title: "</title><script>alert(1)</script>", intro: "<b onmouseover=alert(1)>hi</b>" } },
      display_cookies: "choices"
    })
    const page = await get(`/privacy/${c.id}`)
    expect(page.status).toBe(200)
    const root = parse(page.text)
    const scripts = root.querySelectorAll("script")
    expect(scripts).toHaveLength(1)
    expect(scripts[0]!.getAttribute("src")).toMatch(/^\/privacy\/assets\//)
    expect(scripts[0]!.text).toBe("")
    for (const element of root.querySelectorAll("*")) {
      for (const [name, value] of Object.entries(element.attributes)) {
        expect(name.startsWith("on"), `${element.tagName} ${name}`).toBe(false)
        expect(/^\s*(javascript|data|vbscript):/i.test(value), `${element.tagName} ${name}=${value}`).toBe(false)
      }
      expect(["IFRAME", "SVG", "OBJECT", "EMBED"]).not.toContain(element.tagName)
    }
    expect(root.querySelector("h1")!.text).toBe("</title><script>alert(1)</script>")
  })

  it("a host serves a page only once it is a ready page host of the center's organization", async () => {
    const t = await tenant()
    const name = host()
    const c = await centerOf(t, { custom_domains: [name], content: { en: { title: "Acme, on its own host" } } })
    // Named by the center, not yet a domain: nothing.
    expect((await get("/", { host: name })).status).toBe(404)
    const made = await t.call("POST", "/v1/domains", { body: { id: name, organization_id: t.org.id, usage: "privacy-center", bots_crawl: "disallow_all" } })
    expect(made.status, made.text).toBe(201)
    // A domain not yet proven serves nothing either.
    expect((await get("/", { host: name })).status).toBe(404)
    expect((await get("/robots.txt", { host: name })).status).toBe(404)
    expect((await op.call("PATCH", `/v1/domains/${name}`, { body: { status: "ready" } })).status).toBe(200)
    const page = await get("/", { host: `${name.toUpperCase()}:8443` })
    expect(page.status, page.text).toBe(200)
    expect(parse(page.text).querySelector("h1")!.text).toBe("Acme, on its own host")
    const robots = await get("/robots.txt", { host: name })
    expect(robots.status).toBe(200)
    expect(robots.headers["content-type"]).toBe("text/plain; charset=utf-8")
    expect(robots.text).toBe("User-agent: *\nDisallow: /\n")
    expect((await t.call("PATCH", `/v1/domains/${name}`, { body: { bots_crawl: "allow_all" } })).status).toBe(200)
    expect((await get("/robots.txt", { host: name })).text).toBe("User-agent: *\nDisallow:\n")
    // Its assets are served on it too, the page's own links.
    const stylesheet = parse(page.text).querySelector("link[rel=stylesheet]")!.getAttribute("href")!
    expect((await get(stylesheet, { host: name })).status).toBe(200)
    // Disabled, it serves nothing again.
    expect((await t.call("PATCH", `/v1/domains/${name}`, { body: { enabled: false } })).status).toBe(200)
    expect((await get("/", { host: name })).status).toBe(404)
  })

  it("a domain naming the center by entity_id serves it; a host of one organization never shows another's page", async () => {
    const a = await tenant()
    const b = await tenant()
    const name = host()
    const mine = await centerOf(a, { content: { en: { title: "A's page" } } })
    await provenHost(a, name, { entity_id: mine.id })
    // B names A's proven host in its center: naming proves nothing.
    const theirs = await centerOf(b, { custom_domains: [name], content: { en: { title: "B's page" } } })
    expect(parse((await get("/", { host: name })).text).querySelector("h1")!.text).toBe("A's page")
    // B's page by id, on A's host: not there; on the API's own host: there.
    const onA = await get(`/privacy/${theirs.id}`, { host: name })
    expect(onA.status).toBe(404)
    expect(onA.text).not.toContain("B's page")
    expect((await get(`/privacy/${theirs.id}/style.css`, { host: name })).status).toBe(404)
    expect((await get(`/privacy/${theirs.id}`)).status).toBe(200)
    expect((await get(`/privacy/${mine.id}`, { host: name })).status).toBe(200)
    // A domain naming another organization's center serves nothing.
    const other = host()
    await provenHost(b, other, { entity_id: mine.id })
    expect((await get("/", { host: other })).status).toBe(404)
    // A cmp domain is no page host, whatever it names.
    const cmp = host()
    const made = await a.call("POST", "/v1/domains", { body: { id: cmp, organization_id: a.org.id, usage: "cmp", entity_id: mine.id } })
    expect(made.status, made.text).toBe(201)
    await a.call("PATCH", `/v1/domains/${cmp}`, { body: { status: "scheduled" } })
    expect((await get("/", { host: cmp })).status).toBe(404)
  })

  it("the choices page is not cached; it carries the public key only where guests may choose", async () => {
    const guests = await tenant({ store_guest_cmp_consents: true })
    const content = { purposes: [{ id: "analytics", name: "Analytics" }, { id: "ads", name: "Advertising" }], regulation: "gdpr" }
    const open = await centerOf(guests, { display_cookies: "choices", content })
    const page = await get(`/privacy/${open.id}`)
    expect(page.headers["cache-control"]).toBe("no-store")
    const form = parse(page.text).querySelector("#pc-preferences")!
    const organization = await guests.call("GET", `/v1/organizations/${guests.org.id}`)
    expect(form.getAttribute("data-public-key")).toBe(organization.body.public_api_key)
    expect(form.getAttribute("data-organization-id")).toBe(guests.org.id)
    expect(form.getAttribute("data-api-base")).toBe("/v1")
    expect(form.querySelectorAll("input[name=purpose]").map((i) => i.getAttribute("value"))).toEqual(["analytics", "ads"])
    const closed = await centerOf(guests, { display_cookies: "choices", content, auth_required: true })
    expect(parse((await get(`/privacy/${closed.id}`)).text).querySelector("#pc-preferences")!.getAttribute("data-public-key")).toBeUndefined()
    const noGuests = await tenant()
    const without = await centerOf(noGuests, { display_cookies: "choices", content })
    const withoutPage = parse((await get(`/privacy/${without.id}`)).text)
    expect(withoutPage.querySelector("#pc-preferences")!.getAttribute("data-public-key")).toBeUndefined()
    expect(withoutPage.querySelector("#pc-auth")).not.toBeNull()
  })

  it("the page's writes and reads from the server's own origin are accepted; another origin is not", async () => {
    const t = await tenant({ store_guest_cmp_consents: true, store_cmp_consents: true, consents_api: true })
    const organization = await t.call("GET", `/v1/organizations/${t.org.id}`)
    const key = organization.body.public_api_key as string
    const own = server.url
    const event = (origin: string) =>
      fetch(`${server.url}/v1/consents/events`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-public-api-key": key, origin },
        body: JSON.stringify({ user: { id: unique("guest") }, consents: { purposes: [{ id: "analytics", enabled: true }] } })
      })
    const accepted = await event(own)
    expect(accepted.status, await accepted.text()).toBe(201)
    expect(accepted.headers.get("access-control-allow-origin")).toBe(own)
    expect((await event("http://elsewhere.example")).status).toBe(403)
    // A page host's origin is another host: it must be one of the organization's (it is, once proven).
    const token = await t.call("POST", "/v1/consents/tokens", { body: { organization_id: t.org.id, organization_user_id: "ada@acme.example" } })
    expect(token.status, token.text).toBe(201)
    const read = await fetch(`${server.url}/v1/consents/users/ada%40acme.example?$by_organization_user_id=true`, {
      headers: { authorization: `Bearer ${token.body.id_token}`, origin: own }
    })
    expect(read.status).toBe(404)
    const written = await fetch(`${server.url}/v1/consents/events`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token.body.id_token}`, origin: own },
      body: JSON.stringify({ user: { organization_user_id: "ada@acme.example" }, consents: { purposes: [{ id: "ads", enabled: false }] } })
    })
    expect(written.status, await written.text()).toBe(201)
    const refused = await fetch(`${server.url}/v1/consents/events`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token.body.id_token}`, origin: own.replace("127.0.0.1", "localhost") },
      body: JSON.stringify({ user: { organization_user_id: "ada@acme.example" }, consents: { purposes: [] } })
    })
    expect(refused.status).toBe(403)
  })

  it("the API is unchanged: content is still checked on write, and / of the API's host is the 404 page", async () => {
    const t = await tenant()
    expect400(await t.call("POST", "/v1/privacy-centers", { body: { organization_id: t.org.id, name: "x", content: { purposes: "all" } } }))
    const root = await get("/")
    expect(root.status).toBe(404)
    expect(root.headers["content-type"]).toBe("text/html; charset=utf-8")
    const unknownApi = await fetch(`${server.url}/v1/nothing-here`)
    expect(unknownApi.status).toBe(404)
    expect(unknownApi.headers.get("content-type")).toContain("application/json")
  })
})
