import * as fs from "node:fs"
import type { IncomingHttpHeaders } from "node:http"
import * as https from "node:https"
import { createRequire } from "node:module"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { type Browser, type BrowserContext, chromium, type Page, type Request } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ADMIN, ManualClock, start, type TestServer, unique } from "../api/helpers.js"
import { chromiumPath } from "./chromium.js"
import { type Certificate, exampleCertificate, exampleHostArgs, type HttpsReply, httpsCall } from "./example-hosts.js"

/**
 * The hosted privacy center in a real browser (Debian's Chromium, headless), over HTTPS as in
 * production: the page in the language asked for, the cookie table, a person's choices recorded
 * with the consent token of a personal link and shown again, a page that requires a link and has
 * none, a guest's choices on the center's own host, the Global Privacy Control signal and its
 * opt-in, and the WCAG checks of axe-core. Every page visited must render: a screenshot is taken,
 * its body has a height, its stylesheet and logo load, and nothing fails on the way (no console
 * error, no uncaught exception, no failed request, no error status for a subresource). The logo
 * comes from a server of this file's own on another origin, so nothing leaves the machine.
 */

const API = "api.example.test"
const PAGE_HOST = "privacy.example.test"
const CDN = "cdn.example.test"

/** A 1×1 PNG: the center's logo. */
const LOGO = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=", "base64")

const require = createRequire(import.meta.url)
const axeSource = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8")

/** The page's own English words the tests look for. */
const SAVED = "Your choices have been saved."

/** What the API saw of one request, once answered. */
interface Seen {
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly status: number
}

let tls: Certificate
let server: TestServer
let logos: https.Server
let browser: Browser
let operator: string
/** The API's origin as the browser reaches it. */
let apiOrigin: string
let pageHostOrigin: string
let logoUrl: string
const seen: Array<Seen> = []
const logoRequests: Array<IncomingHttpHeaders> = []

const api = (method: string, urlPath: string, options: { token?: string; body?: unknown } = {}) =>
  httpsCall(server.url, tls.cert, method, urlPath, options)

const created = (r: HttpsReply) => {
  expect(r.status, r.text).toBe(201)
  return r.body
}

const ok = (r: HttpsReply) => {
  expect(r.status, r.text).toBe(200)
  return r.body
}

/** An organization with these premium features, and a client key's session to call the API as it. */
const organization = async (features: Record<string, boolean> = {}) => {
  const org = created(await api("POST", "/v1/organizations", { token: operator, body: { name: unique("acme") } }))
  if (Object.keys(features).length > 0) {
    const flags = ok(await api("GET", `/v1/premium-features?organization_id=${org.id}`, { token: operator })).data[0]
    ok(await api("PATCH", `/v1/premium-features/${flags.id}`, { token: operator, body: features }))
  }
  const key = created(await api("POST", "/v1/keys", { token: operator, body: { organization_id: org.id, name: "backend" } }))
  const token = created(await api("POST", "/v1/sessions", { body: { type: "api-key", key: key.id, secret: key.secret } })).access_token as string
  return {
    id: org.id as string,
    publicKey: org.public_api_key as string,
    call: (method: string, urlPath: string, body?: unknown) => api(method, urlPath, { token, body })
  }
}
type Organization = Awaited<ReturnType<typeof organization>>

const centerOf = async (org: Organization, body: Record<string, unknown>) =>
  created(await org.call("POST", "/v1/privacy-centers", {
    organization_id: org.id,
    name: "Acme privacy",
    legal_name: "Acme SA",
    customization: { logo: logoUrl },
    privacy_policy: "# What we keep\n\nWe keep [little](https://acme.example/data).",
    contact: { email: "dpo@acme.example" },
    ...body
  }))

const pageOf = (center: { id: string }, query = "") => `${apiOrigin}/privacy/${center.id}${query}`

/** A consent token for the person, minted by the organization's backend. */
const consentToken = async (org: Organization, organizationUserId: string) =>
  created(await org.call("POST", "/v1/consents/tokens", { organization_id: org.id, organization_user_id: organizationUserId }))
    .id_token as string

const byId = (purposes: ReadonlyArray<{ id: string; enabled: boolean }>) => Object.fromEntries(purposes.map((p) => [p.id, p.enabled]))

/** The person's recorded choices, by purpose id, as the organization's backend reads them. */
const choicesOf = async (org: Organization, organizationUserId: string) => {
  const user = ok(await org.call("GET", `/v1/consents/users/${encodeURIComponent(organizationUserId)}?$by_organization_user_id=true`))
  return { user, choices: byId(user.consents.purposes) }
}

interface VisitOptions {
  /** The page's own status (a 404 page's is 404). */
  readonly status?: number
  /**
   * Error answers the page is expected to get, by method and path: the API answers 404 for a
   * person who has recorded nothing yet, which the script reads as "no choices".
   */
  readonly expected?: ReadonlyArray<{ readonly method: string; readonly path: string; readonly status: number }>
}

/** A page opened in a browser context, watched for whatever would show it broken. */
interface Visit {
  readonly page: Page
  /** Every request the page sent, in order. */
  readonly requests: Array<Request>
  /** Screenshots the page and asserts it rendered and nothing failed along the way. */
  readonly check: () => Promise<void>
}

let visits = 0

const visit = async (context: BrowserContext, url: string, options: VisitOptions = {}): Promise<Visit> => {
  const page = await context.newPage()
  const problems: Array<string> = []
  const requests: Array<Request> = []
  const expected = options.expected ?? []
  const isExpected = (method: string, target: string, status: number) => {
    const u = new URL(target)
    return expected.some((e) => e.method === method && e.path === u.pathname && e.status === status)
  }
  // Chromium logs every error answer as a console error naming its URL: those the page was meant to get are no fault.
  const answeredInError = new Set<string>()
  const isDocument = (request: Request) => request.isNavigationRequest() && request.frame() === page.mainFrame()
  page.on("request", (r) => requests.push(r))
  page.on("pageerror", (e) => problems.push(`uncaught: ${e.message}`))
  page.on("requestfailed", (r) => problems.push(`failed: ${r.method()} ${r.url()}: ${r.failure()?.errorText}`))
  page.on("response", (r) => {
    if (r.status() < 400) return
    if (isDocument(r.request()) || isExpected(r.request().method(), r.url(), r.status())) answeredInError.add(r.url())
    else problems.push(`answered ${r.status()}: ${r.request().method()} ${r.url()}`)
  })
  page.on("console", (m) => {
    if (m.type() !== "error") return
    if (m.text().startsWith("Failed to load resource") && answeredInError.has(m.location().url)) return
    problems.push(`console: ${m.text()} (${m.location().url})`)
  })
  const response = await page.goto(url)
  expect(response?.status(), url).toBe(options.status ?? 200)
  const check = async () => {
    // Late requests (the icon, a write's answer) have finished, or failed where it shows.
    await page.waitForLoadState("networkidle")
    const shot = await page.screenshot({ fullPage: true })
    const rendered = await page.evaluate(() => ({
      height: document.body.getBoundingClientRect().height,
      heading: document.querySelector("h1")?.getBoundingClientRect().height ?? 0,
      text: document.body.innerText.trim().length,
      styled: Array.from(document.styleSheets).some((s) => s.cssRules.length > 0),
      images: Array.from(document.images).map((i) => ({ src: i.src, loaded: i.complete && i.naturalWidth > 0 }))
    }))
    const broken = [
      ...problems,
      ...(rendered.height > 0 ? [] : ["the body has no height"]),
      ...(rendered.heading > 0 ? [] : ["no heading shows"]),
      ...(rendered.text > 0 ? [] : ["no text shows"]),
      ...(rendered.styled ? [] : ["no stylesheet applies"]),
      ...rendered.images.filter((i) => !i.loaded).map((i) => `image not shown: ${i.src}`)
    ]
    if (broken.length > 0) {
      // The screenshot is kept where the failure names it, to see what the page looked like.
      const file = path.join(os.tmpdir(), `privacy-center-${process.pid}-${++visits}.png`)
      fs.writeFileSync(file, shot)
      expect.fail(`${url} is broken (screenshot: ${file}):\n${broken.join("\n")}`)
    }
    expect(shot.subarray(1, 4).toString("latin1")).toBe("PNG")
  }
  return { page, requests, check }
}

/** Waits for the page's script to show this message in its status line. */
const statusSays = (page: Page, text: string) => page.locator("#pc-status", { hasText: new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`) }).waitFor()

/** Ticks or unticks a checkbox as a keyboard user does: focus it, press Space. */
const toggle = async (page: Page, label: string) => {
  await page.getByLabel(label, { exact: true }).focus()
  await page.keyboard.press("Space")
}

/** Submits the form from the keyboard, and answers the API's answer to the write it sends. */
const save = async (page: Page) => {
  const answer = page.waitForResponse((r) => r.request().method() === "POST" && new URL(r.url()).pathname === "/v1/consents/events")
  await page.getByRole("button", { name: "Save my choices" }).focus()
  await page.keyboard.press("Enter")
  return answer
}

/** The ticks the form shows, by purpose id. */
const ticks = (page: Page) =>
  page.evaluate(() =>
    Object.fromEntries(Array.from(document.querySelectorAll<HTMLInputElement>("input[name=purpose]")).map((b) => [b.value, b.checked]))
  )

/** Waits until the script has read the person's choices and the form may be submitted. */
const ready = (page: Page) => page.locator("#pc-preferences button[type=submit]:enabled").waitFor()

const purposes = [
  { id: "analytics", name: "Analytics", description: "How many visit which pages." },
  { id: "ads", name: "Advertising" },
  { id: "personalization", name: "Personalization" }
]

beforeAll(async () => {
  const executablePath = chromiumPath()
  tls = await exampleCertificate([API, PAGE_HOST, CDN])
  // The API over HTTPS only, as in production; the pages are served by it. Its clock is the
  // machine's: the page's script checks a token's expiry against the browser's.
  server = await start({ tls, allowHttp: false, clock: new ManualClock(Date.now()) })
  server.server.on("request", (req, res) => {
    res.once("finish", () => {
      seen.push({ method: req.method ?? "", path: new URL(req.url ?? "/", "https://x").pathname, headers: req.headers, status: res.statusCode })
    })
  })
  const port = new URL(server.url).port
  apiOrigin = `https://${API}:${port}`
  pageHostOrigin = `https://${PAGE_HOST}:${port}`

  logos = https.createServer(tls, (req, res) => {
    logoRequests.push(req.headers)
    if (req.url === "/logo.png") res.writeHead(200, { "content-type": "image/png", "cache-control": "no-store" }).end(LOGO)
    else res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => logos.listen(0, "127.0.0.1", resolve))
  logoUrl = `https://${CDN}:${(logos.address() as AddressInfo).port}/logo.png`

  operator = created(await api("POST", "/v1/sessions", { body: { type: "api-key", ...ADMIN } })).access_token
  browser = await chromium.launch({ executablePath, headless: true, args: exampleHostArgs(tls.cert) })
}, 60_000)

afterAll(async () => {
  await browser?.close()
  if (logos !== undefined) {
    const closed = new Promise<void>((resolve) => logos.close(() => resolve()))
    logos.closeAllConnections()
    await closed
  }
  await server?.close()
}, 30_000)

/** A context of its own per test: no storage shared between them. */
const withContext = async (options: Parameters<Browser["newContext"]>[0], use: (context: BrowserContext) => Promise<void>) => {
  const context = await browser.newContext(options)
  try {
    await use(context)
  } finally {
    await context.close()
  }
}

describe("a privacy center in Chromium", () => {
  it("speaks the language of ?lang= or of the browser, with the center's texts in it", async () => {
    const org = await organization({ store_guest_cmp_consents: true })
    const center = await centerOf(org, {
      languages: ["en", "fr", "de"],
      display_cookies: "choices",
      content: {
        purposes: purposes.slice(0, 2),
        en: { title: "Your privacy at Acme", intro: "Choose what Acme may do." },
        fr: { title: "Votre vie privée chez Acme", intro: "Choisissez ce qu'Acme peut faire.", purposes: { analytics: "Mesure d'audience", ads: "Publicité" } },
        de: { title: "Ihre Privatsphäre bei Acme", intro: "Wählen Sie, was Acme darf.", purposes: { analytics: "Reichweitenmessung", ads: "Werbung" } }
      }
    })
    const shown = async (v: Visit) =>
      v.page.evaluate(() => ({
        lang: document.documentElement.lang,
        title: document.title,
        h1: document.querySelector("h1")!.textContent,
        intro: document.querySelector(".pc-intro")!.textContent,
        headings: Array.from(document.querySelectorAll("h2")).map((h) => h.textContent),
        labels: Array.from(document.querySelectorAll("#pc-preferences label")).map((l) => l.textContent),
        button: document.querySelector("#pc-preferences button[type=submit]")!.textContent
      }))

    await withContext({ locale: "en-US" }, async (context) => {
      const english = await visit(context, pageOf(center))
      expect(await shown(english)).toEqual({
        lang: "en",
        title: "Your privacy at Acme",
        h1: "Your privacy at Acme",
        intro: "Choose what Acme may do.",
        headings: ["Your choices", "Privacy policy", "Contact"],
        labels: ["Analytics", "Advertising"],
        button: "Save my choices"
      })
      await english.check()

      const french = await visit(context, pageOf(center, "?lang=fr"))
      expect(await shown(french)).toEqual({
        lang: "fr",
        title: "Votre vie privée chez Acme",
        h1: "Votre vie privée chez Acme",
        intro: "Choisissez ce qu'Acme peut faire.",
        headings: ["Vos choix", "Politique de confidentialité", "Contact"],
        labels: ["Mesure d'audience", "Publicité"],
        button: "Enregistrer mes choix"
      })
      await french.check()
    })

    // A browser set to German sends `Accept-Language: de-DE`.
    await withContext({ locale: "de-DE" }, async (context) => {
      const german = await visit(context, pageOf(center))
      expect(await shown(german)).toEqual({
        lang: "de",
        title: "Ihre Privatsphäre bei Acme",
        h1: "Ihre Privatsphäre bei Acme",
        intro: "Wählen Sie, was Acme darf.",
        headings: ["Ihre Auswahl", "Datenschutzerklärung", "Kontakt"],
        labels: ["Reichweitenmessung", "Werbung"],
        button: "Auswahl speichern"
      })
      await german.check()
    })
    // The logo came from its own origin, which the page's policy lets in, and was told nothing of the page.
    expect(logoRequests.length).toBeGreaterThan(0)
    expect(logoRequests.every((h) => h.referer === undefined)).toBe(true)
  }, 60_000)

  it("lists the organization's published cookies, with their lifetime and vendor", async () => {
    const org = await organization()
    const property = created(await org.call("POST", "/v1/properties", { organization_id: org.id, name: "Shop", website: "https://shop.example.test" }))
    const vendor = created(await org.call("POST", "/v1/vendors", { property_id: property.id, metadata_id: "google-analytics", status: "published" }))
    const cookie = (name: string, extra: Record<string, unknown>) =>
      org.call("POST", "/v1/cookies", { property_id: property.id, name, domain: "shop.example.test", taxonomy_id: "analytics", ...extra })
    created(await cookie("_ga", { lifetime: 63_072_000, vendor_id: vendor.id, status: "published" }))
    created(await cookie("sid", { status: "published" }))
    created(await cookie("_draft", { lifetime: 10 }))
    const center = await centerOf(org, { display_cookies: "list" })

    await withContext({}, async (context) => {
      const v = await visit(context, pageOf(center))
      const table = v.page.getByRole("table", { name: "The cookies we use" })
      expect(await table.isVisible()).toBe(true)
      const headers = await table.locator("thead th").allTextContents()
      expect(headers).toEqual(["Name", "Domain", "Lifetime", "Vendor"])
      const rows = await table.locator("tbody tr").evaluateAll((trs) =>
        trs.map((tr) => Array.from(tr.querySelectorAll("td")).map((td) => td.textContent))
      )
      expect(rows).toEqual([
        ["_ga", "shop.example.test", "730 days", "google-analytics"],
        ["sid", "shop.example.test", "Session", ""]
      ])
      // No form on a list page: the script has nothing to do.
      expect(await v.page.locator("#pc-preferences").count()).toBe(0)
      await v.check()
    })
  }, 60_000)

  it("records a person's choices with the consent token of their link, and shows them on the next visit", async () => {
    const org = await organization({ consents_api: true, store_cmp_consents: true })
    const center = await centerOf(org, { display_cookies: "choices", content: { purposes, regulation: "gdpr" } })
    const person = `${unique("ada")}@acme.example`
    const token = await consentToken(org, person)
    const usersPath = `/v1/consents/users/${encodeURIComponent(person)}`

    await withContext({}, async (context) => {
      // The person has recorded nothing yet: the API's 404 is what the script expects then.
      const first = await visit(context, `${pageOf(center)}#token=${token}`, { expected: [{ method: "GET", path: usersPath, status: 404 }] })
      await ready(first.page)
      // The token is out of the address bar: the history entry was replaced without it.
      expect(await first.page.evaluate(() => location.href)).toBe(pageOf(center))
      expect(await ticks(first.page)).toEqual({ analytics: false, ads: false, personalization: false })
      const read = first.requests.find((r) => new URL(r.url()).pathname === usersPath)
      expect(read?.headers().authorization).toBe(`Bearer ${token}`)

      await toggle(first.page, "Analytics")
      await toggle(first.page, "Personalization")
      await toggle(first.page, "Advertising")
      await toggle(first.page, "Advertising")
      expect(await ticks(first.page)).toEqual({ analytics: true, ads: false, personalization: true })
      const answer = await save(first.page)
      expect(answer.status()).toBe(201)
      await statusSays(first.page, SAVED)
      const sent = answer.request()
      expect(sent.headers().authorization).toBe(`Bearer ${token}`)
      expect(sent.postDataJSON()).toMatchObject({ regulation: "gdpr", user: { organization_user_id: person } })
      // The receipt is offered once something is recorded, and downloads as a file.
      const download = first.page.waitForEvent("download")
      await first.page.getByRole("button", { name: "Download your receipt" }).click()
      const receipt = await download
      expect(receipt.suggestedFilename()).toBe("receipt.json")
      const signed = JSON.parse(fs.readFileSync(await receipt.path(), "utf8"))
      expect(signed.jws).toEqual(expect.any(String))
      expect(signed.receipt).toMatchObject({ organization_user_id: person, jurisdiction: "gdpr", consent_state: "given" })
      expect(signed.receipt.processing.map((p: any) => [p.purpose_id, p.state])).toEqual([
        ["analytics", "given"],
        ["ads", "refused"],
        ["personalization", "given"]
      ])
      await first.check()
    })
    // Same-origin: the browser named the page's origin, which the API took as the server's own.
    const write = seen.find((s) => s.method === "POST" && s.path === "/v1/consents/events" && s.headers.authorization === `Bearer ${token}`)
    expect(write?.status).toBe(201)
    expect(write?.headers.origin).toBe(apiOrigin)
    expect((await choicesOf(org, person)).choices).toEqual({ analytics: true, ads: false, personalization: true })

    // The link opened again, in a new browser: the saved choices are shown, and a change is recorded over them.
    await withContext({}, async (context) => {
      const again = await visit(context, `${pageOf(center)}#token=${token}`)
      await ready(again.page)
      expect(await ticks(again.page)).toEqual({ analytics: true, ads: false, personalization: true })
      await toggle(again.page, "Analytics")
      expect((await save(again.page)).status()).toBe(201)
      await statusSays(again.page, SAVED)
      await again.check()
    })
    expect((await choicesOf(org, person)).choices).toEqual({ analytics: false, ads: false, personalization: true })
  }, 60_000)

  it("with auth_required and no token, records nothing and says how to get a link", async () => {
    // Guests could be stored by the organization: only the center's auth_required keeps them out.
    const org = await organization({ consents_api: true, store_cmp_consents: true, store_guest_cmp_consents: true })
    const center = await centerOf(org, { display_cookies: "choices", auth_required: true, content: { purposes } })
    const before = seen.length

    await withContext({}, async (context) => {
      const v = await visit(context, pageOf(center))
      const notice = v.page.locator("#pc-auth")
      expect(await notice.textContent()).toBe(
        "To see and change your choices, open the personal link you were sent. To get one, contact us. dpo@acme.example"
      )
      expect(await notice.getByRole("link", { name: "dpo@acme.example" }).getAttribute("href")).toBe("mailto:dpo@acme.example")
      const boxes = v.page.locator("input[name=purpose]")
      expect(await boxes.count()).toBe(3)
      for (const box of await boxes.all()) expect(await box.isDisabled()).toBe(true)
      const submit = v.page.getByRole("button", { name: "Save my choices" })
      expect(await submit.isDisabled()).toBe(true)
      // What a visitor can still do: click the labels and the button, press keys. None of it writes.
      await v.page.getByText("Analytics", { exact: true }).click({ force: true })
      await submit.click({ force: true })
      await v.page.keyboard.press("Space")
      await v.page.keyboard.press("Enter")
      expect(await ticks(v.page)).toEqual({ analytics: false, ads: false, personalization: false })
      expect(await v.page.locator("#pc-status").textContent()).toBe("")
      const toApi = v.requests.filter((r) => new URL(r.url()).pathname.startsWith("/v1/"))
      expect(toApi.map((r) => `${r.method()} ${r.url()}`)).toEqual([])
      await v.check()
    })
    expect(seen.slice(before).filter((s) => s.path.startsWith("/v1/consents/"))).toEqual([])
    expect((await org.call("GET", `/v1/consents/events?organization_id=${org.id}`)).body.total).toBe(0)
  }, 60_000)

  it("a guest's choices on the center's own host are saved with the public key, under an id the browser keeps", async () => {
    const org = await organization({ consents_api: true, store_guest_cmp_consents: true })
    created(await org.call("POST", "/v1/domains", { id: PAGE_HOST, organization_id: org.id, usage: "privacy-center" }))
    ok(await api("PATCH", `/v1/domains/${PAGE_HOST}`, { token: operator, body: { status: "ready" } }))
    const center = await centerOf(org, { display_cookies: "choices", custom_domains: [PAGE_HOST], content: { purposes: purposes.slice(0, 2), en: { title: "Acme, at home" } } })

    await withContext({}, async (context) => {
      const first = await visit(context, `${pageHostOrigin}/`)
      expect(await first.page.locator("h1").textContent()).toBe("Acme, at home")
      expect(await first.page.locator("#pc-auth").count()).toBe(0)
      await toggle(first.page, "Advertising")
      const answer = await save(first.page)
      expect(answer.status()).toBe(201)
      await statusSays(first.page, SAVED)
      const headers = answer.request().headers()
      expect(headers["x-public-api-key"]).toBe(org.publicKey)
      expect(headers.authorization).toBeUndefined()
      await first.check()

      const events = ok(await org.call("GET", `/v1/consents/events?organization_id=${org.id}`))
      expect(events.total).toBe(1)
      const [event] = events.data
      expect(byId(event.consents.purposes)).toEqual({ analytics: false, ads: true })
      const write = seen.find((s) => s.method === "POST" && s.path === "/v1/consents/events" && s.headers["x-public-api-key"] === org.publicKey)
      expect(write?.headers.origin).toBe(pageHostOrigin)
      expect(write?.headers.host).toBe(`${PAGE_HOST}:${new URL(server.url).port}`)

      // Back on the page: this browser's last choices are shown, and a change is the same guest's.
      const again = await visit(context, `${pageHostOrigin}/`)
      expect(await ticks(again.page)).toEqual({ analytics: false, ads: true })
      await toggle(again.page, "Analytics")
      expect((await save(again.page)).status()).toBe(201)
      await statusSays(again.page, SAVED)
      await again.check()
      const same = ok(await org.call("GET", `/v1/consents/events?user_id=${encodeURIComponent(event.user.id)}&$sort[created_at]=1`))
      expect(same.data.map((e: any) => byId(e.consents.purposes))).toEqual([{ analytics: false, ads: true }, { analytics: true, ads: true }])
    })
  }, 60_000)

  it("with a Global Privacy Control signal: says so; a save keeps the signal, the opt-in overrides it", async () => {
    const org = await organization({ consents_api: true, store_cmp_consents: true })
    created(await org.call("POST", "/v1/consents/policies", {
      organization_id: org.id,
      regulation: "gdpr",
      consent_duration: 13,
      consent_duration_unit: "months",
      gpc_purpose_ids: ["ads"]
    }))
    const center = await centerOf(org, { display_cookies: "choices", content: { purposes: purposes.slice(0, 2) } })
    const person = unique("grace")
    const token = await consentToken(org, person)

    // Chromium has no switch for the signal: the header on every request, and the property the
    // page reads, set up by the test harness before any page script runs.
    await withContext({ extraHTTPHeaders: { "Sec-GPC": "1" } }, async (context) => {
      await context.addInitScript(() => Object.defineProperty(Navigator.prototype, "globalPrivacyControl", { get: () => true, configurable: true }))
      const v = await visit(context, `${pageOf(center)}#token=${token}`, {
        expected: [{ method: "GET", path: `/v1/consents/users/${encodeURIComponent(person)}`, status: 404 }]
      })
      await ready(v.page)
      expect(await v.page.locator("#pc-gpc").textContent()).toBe(
        "Your browser sends a Global Privacy Control signal: what it refuses stays refused unless you explicitly allow it here."
      )
      const optIn = v.page.getByLabel("Allow despite my browser's signal")
      expect(await optIn.isChecked()).toBe(false)

      await toggle(v.page, "Analytics")
      await toggle(v.page, "Advertising")
      const kept = await save(v.page)
      expect(kept.status()).toBe(201)
      await statusSays(v.page, SAVED)
      expect(kept.request().headers()["sec-gpc"]).toBe("1")
      expect(kept.request().postDataJSON()).not.toHaveProperty("gpc_override")

      await toggle(v.page, "Allow despite my browser's signal")
      expect(await optIn.isChecked()).toBe(true)
      const overridden = await save(v.page)
      expect(overridden.status()).toBe(201)
      await statusSays(v.page, SAVED)
      expect(overridden.request().postDataJSON()).toMatchObject({ gpc_override: true })
      await v.check()
    })

    const { user } = await choicesOf(org, person)
    const events = ok(await org.call("GET", `/v1/consents/events?user_id=${encodeURIComponent(user.id)}&$sort[created_at]=1`)).data
    expect(events).toHaveLength(2)
    // Saved under the signal: what the policy names under GPC is recorded refused.
    expect(events[0]).toMatchObject({ gpc: true })
    expect(events[0]).not.toHaveProperty("gpc_conflict")
    expect(byId(events[0].consents.purposes)).toEqual({ analytics: true, ads: false })
    // Saved with the opt-in ticked: the choices as made, against the signal.
    expect(events[1]).toMatchObject({ gpc: true, gpc_conflict: true })
    expect(byId(events[1].consents.purposes)).toEqual({ analytics: true, ads: true })
  }, 60_000)
})

describe("a privacy center's accessibility (axe-core, WCAG 2.0 and 2.1, A and AA)", () => {
  /**
   * Runs axe in the page: how many of its checks passed, and its violations. axe is injected as
   * an inline script, which the page's own policy (`script-src 'self'`) rightly refuses: these
   * contexts bypass CSP for that one injection; the other tests keep it, and fail on any
   * violation of it.
   */
  const audit = async (page: Page) => {
    await page.addScriptTag({ content: axeSource })
    return page.evaluate(async () => {
      const result = await (window as any).axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } })
      return {
        passed: (result.passes as Array<any>).length,
        violations: (result.violations as Array<any>).map((v) => ({
          id: v.id,
          impact: v.impact,
          help: v.help,
          nodes: (v.nodes as Array<any>).map((n) => `${n.target.join(" ")}: ${n.failureSummary}`)
        }))
      }
    })
  }

  const expectAccessible = async (url: string, options: VisitOptions = {}) =>
    withContext({ bypassCSP: true }, async (context) => {
      const v = await visit(context, url, options)
      const { passed, violations } = await audit(v.page)
      expect(violations, `${url}: ${JSON.stringify(violations, null, 2)}`).toEqual([])
      // The rules ran on the page's content: some passed.
      expect(passed).toBeGreaterThan(0)
      await v.check()
    })

  let choices: { id: string }
  let list: { id: string }
  beforeAll(async () => {
    const org = await organization({ store_guest_cmp_consents: true })
    const property = created(await org.call("POST", "/v1/properties", { organization_id: org.id, name: "Shop", website: "https://shop.example.test" }))
    created(await org.call("POST", "/v1/cookies", {
      property_id: property.id,
      name: "_ga",
      domain: "shop.example.test",
      taxonomy_id: "analytics",
      lifetime: 63_072_000,
      status: "published"
    }))
    const texts = {
      languages: ["en", "fr"],
      content: {
        purposes,
        en: { title: "Your privacy at Acme", intro: "Choose what Acme may do." },
        fr: { title: "Votre vie privée chez Acme", intro: "Choisissez ce qu'Acme peut faire.", purposes: { analytics: "Mesure d'audience" } }
      }
    }
    choices = await centerOf(org, { display_cookies: "choices", ...texts })
    list = await centerOf(org, { display_cookies: "list", ...texts })
  }, 30_000)

  it("the choices page", () => expectAccessible(pageOf(choices)), 60_000)
  it("the cookie list page", () => expectAccessible(pageOf(list)), 60_000)
  it("the 404 page", () => expectAccessible(`${apiOrigin}/privacy/${unique("nothing")}`, { status: 404 }), 60_000)
  it("a page in French", async () => {
    await expectAccessible(pageOf(choices, "?lang=fr"))
    await expectAccessible(pageOf(list, "?lang=fr"))
  }, 60_000)
})
