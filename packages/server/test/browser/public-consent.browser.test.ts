import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import type { IncomingHttpHeaders, ServerResponse } from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { type Browser, chromium, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ADMIN, start, type TestServer, unique } from "../api/helpers.js"
import { childEnv, freePort, packageDir, repositoryRoot } from "../built.js"
import { chromiumPath } from "./chromium.js"
import { type Certificate, exampleCertificate, exampleHostArgs, type HttpsReply, httpsCall } from "./example-hosts.js"

/**
 * Public consent collection in a real browser (Debian's Chromium, headless). A page of the
 * organization's property runs the browser code of docs/walkthrough.md ("Collecting consent in
 * the browser") and records guest consents with `fetch` (JSON and the public key header, so the
 * browser sends a preflight first) and with `navigator.sendBeacon` (the key in the query, the JSON as text/plain),
 * over HTTPS across origins. The same page served from another origin gets nothing through: its
 * fetch rejects as a CORS failure and its beacon stores nothing. Inside the browser every host
 * name of `example.test` is this machine, and both servers serve a certificate made for those
 * names here, which the browser trusts by its key. Then `examples/browser`, clicked through.
 */

const SHOP = "shop.example.test"
const EVIL = "evil.example.test"
const API = "api.example.test"

/** What the API server saw of one request, once answered. */
interface Seen {
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly origin: string | undefined
  readonly headers: IncomingHttpHeaders
  readonly status: number
  /** The answer's headers, by lowercase name. */
  readonly answered: Readonly<Record<string, string>>
}

let tls: Certificate
let server: TestServer
let pages: https.Server
let browser: Browser
let pagePort: number
let publicKey: string
let organizationId: string
let backendToken: string
const seen: Array<Seen> = []
const waiting = new Set<() => void>()

/** Resolves with the first answered request that matches, or fails naming what was seen. */
const answered = async (what: string, match: (s: Seen) => boolean, timeoutMs = 30_000): Promise<Seen> => {
  const found = () => seen.find(match)
  if (found() !== undefined) return found()!
  await new Promise<void>((resolve, reject) => {
    const check = () => {
      if (found() === undefined) return
      clearTimeout(timer)
      waiting.delete(check)
      resolve()
    }
    const timer = setTimeout(() => {
      waiting.delete(check)
      reject(new Error(`the API never answered ${what}; it answered: ${JSON.stringify(seen.map((s) => [s.method, s.path, s.origin, s.status]))}`))
    }, timeoutMs)
    waiting.add(check)
  })
  return found()!
}

/** A call to the API from this process (a backend), trusting the certificate made here. */
const call = (method: string, urlPath: string, options: { token?: string; body?: unknown } = {}) =>
  httpsCall(server.url, tls.cert, method, urlPath, options)

const created = (r: HttpsReply) => {
  expect(r.status, r.text).toBe(201)
  return r.body
}

/**
 * The browser code of the walk-through's "Collecting consent in the browser" (its one ```js block), with
 * this API's address and the organization's key and id in place of the walk-through's.
 */
const readmeScript = (): string => {
  const readme = fs.readFileSync(path.join(repositoryRoot, "docs", "walkthrough.md"), "utf8")
  const section = readme.split(/^## /m).find((s) => s.startsWith("Collecting consent in the browser"))
  const blocks = [...(section ?? "").matchAll(/^```js\n([\s\S]*?)^```$/gm)].map((m) => m[1]!)
  expect(blocks, "the walk-through's browser section has one js block").toHaveLength(1)
  const setting = (script: string, start: string, value: string) => {
    const lines = script.split("\n").filter((l) => l.startsWith(start))
    expect(lines, `the walk-through's script sets ${start}`).toHaveLength(1)
    return script.replace(lines[0]!, `${start}${JSON.stringify(value)}`)
  }
  let script = setting(blocks[0]!, "const API = ", `https://${API}:${new URL(server.url).port}`)
  script = setting(script, "const PUBLIC_KEY = ", publicKey)
  return setting(script, "const ORGANIZATION_ID = ", organizationId)
}

/**
 * The organization's page, wherever it is served from: the walk-through's script, and what the test
 * calls in it (a failed fetch answered as its error's name and message).
 */
const page = (script: string) => `<!doctype html>
<html lang="en">
<meta charset="utf-8">
<title>Shop</title>
<p>Shop</p>
<script>
${script}
window.tryFetch = (event) =>
  recordWithFetch(event).then((answer) => ({ answer }), (error) => ({ error: error.name + ": " + error.message }))
</script>
</html>
`

beforeAll(async () => {
  const executablePath = chromiumPath()
  tls = await exampleCertificate([SHOP, EVIL, API])

  // The API over HTTPS only, as in production.
  server = await start({ tls, allowHttp: false })
  server.server.on("request", (req, res) => {
    // The adapters hand their headers to writeHead, which keeps none for getHeader: read them there.
    let answeredHeaders: Record<string, string> = {}
    const writeHead = res.writeHead
    res.writeHead = function (this: ServerResponse, ...args: Array<any>) {
      const headers = args.find((a, i) => i > 0 && a !== null && typeof a === "object" && !Array.isArray(a))
      if (headers !== undefined) answeredHeaders = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), String(v)]))
      return writeHead.apply(this, args as Parameters<typeof writeHead>)
    } as typeof res.writeHead
    res.once("finish", () => {
      const url = new URL(req.url ?? "/", "https://api.example.test")
      seen.push({
        method: req.method ?? "",
        path: url.pathname,
        query: url.searchParams,
        origin: req.headers.origin,
        headers: req.headers,
        status: res.statusCode,
        answered: { ...Object.fromEntries(Object.entries(res.getHeaders()).map(([k, v]) => [k, String(v)])), ...answeredHeaders }
      })
      for (const check of [...waiting]) check()
    })
  })

  // The organization's pages, on another port, for whichever host name the browser asks.
  let html = ""
  pages = https.createServer(tls, (_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(html)
  })
  await new Promise<void>((resolve) => pages.listen(0, "127.0.0.1", resolve))
  pagePort = (pages.address() as AddressInfo).port

  // The organization: guest consents on (and the consents API, for its backend to read them), a
  // property at the shop's address, a backend key.
  const operator = (await call("POST", "/v1/sessions", { body: { type: "api-key", ...ADMIN } })).body.access_token as string
  const org = created(await call("POST", "/v1/organizations", { token: operator, body: { name: unique("shop") } }))
  publicKey = org.public_api_key
  organizationId = org.id
  expect(publicKey).toMatch(/^pk_/)
  const flags = (await call("GET", `/v1/premium-features?organization_id=${org.id}`, { token: operator })).body.data[0]
  const patched = await call("PATCH", `/v1/premium-features/${flags.id}`, {
    token: operator,
    body: { store_guest_cmp_consents: true, consents_api: true }
  })
  expect(patched.status, patched.text).toBe(200)
  created(await call("POST", "/v1/properties", {
    token: operator,
    body: { organization_id: org.id, name: "Shop", website: `https://${SHOP}:${pagePort}` }
  }))
  const key = created(await call("POST", "/v1/keys", { token: operator, body: { organization_id: org.id, name: "backend" } }))
  backendToken = created(await call("POST", "/v1/sessions", { body: { type: "api-key", key: key.id, secret: key.secret } }))
    .access_token
  html = page(readmeScript())

  browser = await chromium.launch({
    executablePath,
    headless: true,
    args: exampleHostArgs(tls.cert)
  })
}, 60_000)

afterAll(async () => {
  await browser?.close()
  if (pages !== undefined) {
    const closed = new Promise<void>((resolve) => pages.close(() => resolve()))
    pages.closeAllConnections()
    await closed
  }
  await server?.close()
}, 30_000)

const guestEvent = (label: string) => ({
  id: unique(`browser-${label}`),
  user: { id: unique(`device-${label}`) },
  consents: { purposes: [{ id: "analytics", enabled: label.endsWith("accept") }] }
})

/** The event as the organization's backend reads it: 200 and the event, or the error answer. */
const readEvent = (id: string) => call("GET", `/v1/consents/events/${encodeURIComponent(id)}`, { token: backendToken })

describe("public consent collection in a browser", () => {
  it("the property's page records guest consents with fetch (after a preflight) and with sendBeacon", async () => {
    const context = await browser.newContext()
    try {
      const tab = await context.newPage()
      const origin = `https://${SHOP}:${pagePort}`
      const loaded = await tab.goto(`${origin}/`)
      expect(loaded?.status()).toBe(200)

      const byFetch = guestEvent("fetch-accept")
      const answer = await tab.evaluate((event) => (window as any).tryFetch(event), byFetch)
      expect(answer.error, JSON.stringify(answer)).toBeUndefined()
      expect(Object.keys(answer.answer).sort()).toEqual(["created_at", "id", "regulation", "status"])
      expect(answer.answer.id).toBe(byFetch.id)

      // The browser asked first: JSON and a key header are not a simple request.
      const preflight = seen.find((s) => s.method === "OPTIONS" && s.path === "/v1/consents/events" && s.origin === origin)
      expect(preflight, JSON.stringify(seen.map((s) => [s.method, s.path, s.origin, s.status]))).toBeDefined()
      expect(preflight!.status).toBe(204)
      expect(preflight!.answered["access-control-allow-origin"]).toBe(origin)
      expect(String(preflight!.headers["access-control-request-headers"]).split(",").map((h) => h.trim()).sort())
        .toEqual(["content-type", "x-public-api-key"])
      const post = seen.find((s) => s.method === "POST" && s.origin === origin && s.headers["x-public-api-key"] === publicKey)
      expect(post?.status).toBe(201)
      expect(post!.answered["access-control-allow-origin"]).toBe(origin)
      expect(String(post!.headers["content-type"])).toMatch(/^application\/json/)
      expect(seen.indexOf(preflight!)).toBeLessThan(seen.indexOf(post!))

      const byBeacon = guestEvent("beacon-reject")
      expect(await tab.evaluate((event) => (window as any).recordWithBeacon(event), byBeacon)).toBe(true)
      const beacon = await answered(
        "the shop's beacon",
        (s) => s.method === "POST" && s.origin === origin && s.query.get("public_api_key") === publicKey
      )
      expect(beacon.status).toBe(201)
      expect(beacon.answered["access-control-allow-origin"]).toBe(origin)
      expect(String(beacon.headers["content-type"])).toMatch(/^text\/plain/)

      const stored = await readEvent(byFetch.id)
      expect(stored.status, stored.text).toBe(200)
      expect(stored.body).toMatchObject({ id: byFetch.id, user: { id: byFetch.user.id }, consents: { purposes: byFetch.consents.purposes } })
      const beaconStored = await readEvent(byBeacon.id)
      expect(beaconStored.status, beaconStored.text).toBe(200)
      expect(beaconStored.body).toMatchObject({ id: byBeacon.id, user: { id: byBeacon.user.id }, consents: { purposes: byBeacon.consents.purposes } })
    } finally {
      await context.close()
    }
  }, 60_000)

  it("the same page on another origin: its fetch fails as a CORS error and its beacon stores nothing", async () => {
    const context = await browser.newContext()
    try {
      const tab = await context.newPage()
      const origin = `https://${EVIL}:${pagePort}`
      const loaded = await tab.goto(`${origin}/`)
      expect(loaded?.status()).toBe(200)

      const byFetch = guestEvent("evil-fetch-accept")
      const answer = await tab.evaluate((event) => (window as any).tryFetch(event), byFetch)
      expect(answer).toEqual({ error: expect.stringMatching(/^TypeError: /) })
      // The request reached the API, which refused it without letting the page read why.
      const refused = await answered(
        "the other origin's fetch",
        (s) => s.method === "POST" && s.origin === origin && s.headers["x-public-api-key"] === publicKey
      )
      expect(refused.status).toBe(403)
      expect(refused.answered).not.toHaveProperty("access-control-allow-origin")

      const byBeacon = guestEvent("evil-beacon-accept")
      expect(await tab.evaluate((event) => (window as any).recordWithBeacon(event), byBeacon)).toBe(true)
      const beacon = await answered(
        "the other origin's beacon",
        (s) => s.method === "POST" && s.origin === origin && s.query.get("public_api_key") === publicKey
      )
      expect(beacon.status).toBe(403)
      expect(beacon.answered).not.toHaveProperty("access-control-allow-origin")

      for (const attempt of [byFetch, byBeacon]) {
        expect((await readEvent(attempt.id)).status).toBe(404)
        const events = await call("GET", `/v1/consents/events?user_id=${encodeURIComponent(attempt.user.id)}`, { token: backendToken })
        expect(events.status, events.text).toBe(200)
        expect(events.body.total).toBe(0)
      }
    } finally {
      await context.close()
    }
  }, 60_000)
})

/**
 * `examples/browser`, as `pnpm --filter @cmp/examples browser` runs it, on a free port: a guest
 * accepts through the banner; a signed-in user accepts, then turns analytics off in the preference
 * center, with a consent token. What they chose is read back through the example's API, and with
 * the command its console printed. The same page opened at 127.0.0.1, an origin the organization
 * does not allow, records nothing and says to open it at localhost.
 */
describe.skipIf(process.env.CMP_TEST_STORE === "postgres")("the browser example", () => {
  let example: ChildProcess | undefined
  let output = ""
  afterAll(() => {
    // tsx runs the example in a node process of its own: the whole group goes.
    if (example?.pid !== undefined) {
      try {
        process.kill(-example.pid, "SIGKILL")
      } catch {
        // Gone already.
      }
    }
  })

  it("records a guest's choice from the banner, and a signed-in user's from the preference center", async () => {
    const port = await freePort()
    const site = `http://localhost:${port}`
    const tsx = path.join(packageDir, "node_modules", ".bin", "tsx")
    example = spawn(tsx, ["browser/server.ts"], {
      cwd: path.join(repositoryRoot, "examples"),
      env: childEnv({ PORT: String(port), HOST: "127.0.0.1" }),
      detached: true
    })
    await new Promise<void>((resolve, reject) => {
      example!.stdout!.on("data", (d) => {
        output += String(d)
        // Ready once it has said all it says at start, the command last.
        if (output.includes("shop on ") && /^ {2}curl .*\n/m.test(output)) resolve()
      })
      example!.stderr!.on("data", (d) => (output += String(d)))
      example!.once("exit", (code) => reject(new Error(`the example exited (${code}): ${output}`)))
    })
    const api = async (method: string, urlPath: string, token?: string, body?: unknown) => {
      const res = await fetch(`${site}/consent-api${urlPath}`, {
        method,
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { "content-type": "application/json" } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body)
      })
      return { status: res.status, body: await res.json() as any }
    }
    // It says that it runs a platform of its own, with which operator key, and how to see what it recorded.
    expect(output).toContain("This example runs a consent platform of its own, in memory")
    expect(output).toContain("Its operator key: admin, secret change-me-to-a-long-secret;")
    const printed = output.split("\n").map((l) => l.trim()).filter((l) => l.startsWith("curl "))
    expect(printed, output).toHaveLength(1)
    const operator = (await api("POST", "/v1/sessions", undefined, { type: "api-key", key: "admin", secret: "change-me-to-a-long-secret" }))
      .body.access_token as string

    const statusText = async (tab: Page, before: string) => {
      await tab.waitForFunction((previous) => {
        const text = document.getElementById("status")!.textContent
        return text !== "" && text !== previous
      }, before)
      return tab.locator("#status").textContent()
    }

    const guest = await browser.newContext()
    try {
      const tab = await guest.newPage()
      await tab.goto(`${site}/`)
      expect(await tab.locator("#about").textContent()).toMatch(/runs a consent platform of its own, in memory, under \/consent-api/)
      expect(await tab.locator("#who").textContent()).toBe("Not signed in")
      await tab.getByRole("button", { name: "Accept" }).click()
      expect(await statusText(tab, ""), output).toBe("Recorded: analytics accepted")
      expect(await tab.locator("#banner").isHidden()).toBe(true)
      const deviceId = await tab.evaluate(() => localStorage.getItem("consent-device-id"))
      const events = await api("GET", `/v1/consents/events?user_id=${encodeURIComponent(deviceId!)}`, operator)
      expect(events.status).toBe(200)
      expect(events.body.data.map((e: any) => e.consents.purposes)).toMatchObject([[{ id: "analytics", enabled: true }]])
      // The printed command lists it too, run as pasted into a shell.
      const listed = await new Promise<string>((resolve, reject) =>
        execFile("bash", ["-c", printed[0]!], { env: childEnv({}) }, (error, stdout, stderr) => (error ? reject(new Error(`${error.message}: ${stderr}`)) : resolve(stdout)))
      )
      expect(JSON.parse(listed).data.map((e: any) => e.user.id)).toContain(deviceId)
    } finally {
      await guest.close()
    }

    // Opened at 127.0.0.1, the page is not on the organization's website: refused, and it says where to go.
    const elsewhere = await browser.newContext()
    try {
      const tab = await elsewhere.newPage()
      await tab.goto(`http://127.0.0.1:${port}/`)
      await tab.getByRole("button", { name: "Accept" }).click()
      expect(await statusText(tab, "")).toBe(
        `Not recorded (403): this page is open at http://127.0.0.1:${port}, but the shop's organization accepts consents only ` +
          `from its website, ${site}. Open ${site}/ instead.`
      )
      expect(await tab.locator("#status a").getAttribute("href")).toBe(`${site}/`)
      expect(await tab.locator("#banner").isHidden()).toBe(false)
      const deviceId = await tab.evaluate(() => localStorage.getItem("consent-device-id"))
      const events = await api("GET", `/v1/consents/events?user_id=${encodeURIComponent(deviceId!)}`, operator)
      expect(events.body.total).toBe(0)
    } finally {
      await elsewhere.close()
    }

    const member = await browser.newContext()
    try {
      const tab = await member.newPage()
      await tab.goto(`${site}/?user=u-42`)
      expect(await tab.locator("#who").textContent()).toBe("Signed in as u-42")
      await tab.getByRole("button", { name: "Accept" }).click()
      expect(await statusText(tab, ""), output).toBe("Recorded: analytics accepted")
      await tab.getByRole("button", { name: "Manage my preferences" }).click()
      await tab.locator("#analytics", { hasText: /^on$/ }).waitFor()
      await tab.getByRole("button", { name: "Change", exact: true }).click()
      await tab.locator("#analytics", { hasText: /^off$/ }).waitFor()
      // The status line follows the change.
      expect(await statusText(tab, "Recorded: analytics accepted")).toBe("Recorded: analytics rejected")
    } finally {
      await member.close()
    }
    const user = await api("GET", "/v1/consents/users/u-42?$by_organization_user_id=true", operator)
    expect(user.status).toBe(200)
    expect(user.body.consents.purposes).toMatchObject([{ id: "analytics", enabled: false }])
    const events = await api("GET", `/v1/consents/events?user_id=${encodeURIComponent(user.body.id)}&$sort[created_at]=1`, operator)
    expect(events.body.data.map((e: any) => e.consents.purposes[0].enabled)).toEqual([true, false])
  }, 60_000)
})
