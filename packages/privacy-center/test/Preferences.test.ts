import * as acorn from "acorn"
import { build } from "esbuild"
import { Window } from "happy-dom"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { type PrivacyCenterData, preferencesScript, preferencesScriptName, renderPrivacyCenter, wordsFor } from "../src/index.js"
import { domValidationErrors } from "./html.js"

/**
 * The served script run in a DOM (happy-dom) against a page `renderPrivacyCenter` made, with a
 * fake `fetch` that records each request and answers as the test says.
 */

const center: PrivacyCenterData = {
  id: "pc_1",
  organization_id: "org_1",
  name: "Acme privacy center",
  contact: { email: "privacy@acme.example.com" },
  display_cookies: "choices",
  content: {
    purposes: [
      { id: "analytics", name: "Analytics" },
      { id: "ads", name: "Advertising" }
    ],
    regulation: "gdpr",
    notice_text_content_id: "ntc_7"
  },
  auth_required: false
}

const en = wordsFor("en").messages
const pageUrl = "https://privacy.acme.example.com/privacy/pc_1?lang=en"
const guestKey = "cmp-privacy-center:guest:org_1"
const choicesKey = "cmp-privacy-center:choices:pc_1"

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")
/** A consent token as the API mints it; the script reads its claims and never checks the signature. */
const jwt = (claims: Record<string, unknown>) => `${base64url({ alg: "HS256", typ: "JWT" })}.${base64url(claims)}.c2lnbmF0dXJl`
const inAnHour = () => Math.floor(Date.now() / 1000) + 3600
const token = jwt({ aud: "urn:cmp:consent-token", org: "org_1", sub: "jürgen 42", exp: inAnHour() })
const userUrl = "/v1/consents/users/j%C3%BCrgen%2042?$by_organization_user_id=true&regulation=gdpr"

interface Call {
  readonly url: string
  readonly method: string
  readonly headers: Record<string, string>
  readonly body: unknown
}
type Answer = { readonly status: number; readonly body?: unknown } | "network error"

interface Options {
  readonly center?: Partial<PrivacyCenterData>
  readonly publicKey?: string
  readonly lang?: string
  readonly hash?: string
  readonly gpc?: boolean
  /** What `localStorage` holds before the script runs, or a `localStorage` that throws. */
  readonly storage?: Record<string, string> | "throws"
  /** The answer to each request; 404 when none is given. */
  readonly answer?: (call: Call) => Answer | Promise<Answer>
  /** Changes the rendered page before the script runs. */
  readonly edit?: (document: Window["document"]) => void
}

const windows: Array<Window> = []
afterEach(async () => {
  await Promise.all(windows.splice(0).map((w) => w.happyDOM.close()))
})

/** Every pending promise of the page settled: the fake answers resolve in microtasks. */
const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve))
}

/** An answer the test gives when it chooses, to look at the page while a request runs. */
const deferred = () => {
  let resolve: (answer: Answer) => void = () => {}
  const promise = new Promise<Answer>((r) => (resolve = r))
  return { promise, resolve }
}

/** Opens the page at `pageUrl` + `hash` and runs the served script in it. */
const open = async (options: Options = {}, script: string = preferencesScript) => {
  const window = new Window({
    url: pageUrl + (options.hash ?? ""),
    settings: { enableJavaScriptEvaluation: true, suppressInsecureJavaScriptEnvironmentWarning: true, disableJavaScriptFileLoading: true }
  })
  windows.push(window)
  const { document } = window
  const page = renderPrivacyCenter({
    lang: options.lang ?? "en",
    assets: { stylesheet: "/privacy/pc_1/style.css", script: `/privacy/assets/${preferencesScriptName}` },
    center: { ...center, ...options.center },
    publicKey: options.publicKey
  })
  document.write(page.html)
  options.edit?.(document)
  if (options.storage === "throws") {
    Object.defineProperty(window, "localStorage", {
      get() {
        throw new window.DOMException("The operation is insecure.", "SecurityError")
      }
    })
  } else for (const [key, value] of Object.entries(options.storage ?? {})) window.localStorage.setItem(key, value)
  if (options.gpc === true) Object.defineProperty(window.navigator, "globalPrivacyControl", { value: true, configurable: true })

  const calls: Array<Call> = []
  Object.defineProperty(window, "fetch", {
    configurable: true,
    value: (url: unknown, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) => {
      const call: Call = {
        url: String(url),
        method: init.method ?? "GET",
        headers: { ...init.headers },
        body: init.body === undefined ? undefined : JSON.parse(init.body)
      }
      calls.push(call)
      return Promise.resolve(options.answer?.(call) ?? { status: 404, body: { message: "Not found" } }).then((answer) =>
        answer === "network error"
          ? Promise.reject(new TypeError("Failed to fetch"))
          : {
            status: answer.status,
            json: () => Promise.resolve(answer.body),
            text: () => Promise.resolve(JSON.stringify(answer.body))
          }
      )
    }
  })

  window.eval(script)
  await settle()
  const form = document.getElementById("pc-preferences")!
  const box = (purpose: string) => form.querySelector(`input[name="purpose"][value="${purpose}"]`) as unknown as HTMLInputElement
  const submit = form.querySelector('button[type="submit"]') as unknown as HTMLButtonElement
  return {
    window,
    document,
    calls,
    box,
    submit,
    status: () => document.getElementById("pc-status")!.textContent,
    ticked: () => ["analytics", "ads"].filter((p) => box(p).checked),
    save: async () => {
      submit.click()
      await settle()
    },
    /** The page as the browser now holds it, checked by the same validator as the rendered one. */
    errors: () => domValidationErrors(`<!doctype html>${document.documentElement.outerHTML}`)
  }
}

/** Answers reading the user with `choices`, and recording an event with 201. */
const api = (choices: ReadonlyArray<{ id: string; enabled: boolean }>, save: Answer = { status: 201, body: { id: "evt_1" } }) => (call: Call): Answer =>
  call.method === "POST"
    ? save
    : call.url.includes("/receipt")
    ? { status: 200, body: { schema: "receipt", events: [] } }
    : { status: 200, body: { id: "cu_1", organization_user_id: "jürgen 42", consents: { purposes: choices } } }

describe("preferences script with a consent token", () => {
  it("takes the token out of the address bar and keeps it out of storage and URLs", async () => {
    const page = await open({ hash: `#utm=mail&token=${token}`, answer: api([]) })
    expect(page.window.location.href).toBe(`${pageUrl}#utm=mail`)
    expect(page.calls.map((c) => [c.method, c.url, c.headers.authorization])).toEqual([["GET", userUrl, `Bearer ${token}`]])
    await page.save()
    expect(page.calls.map((c) => c.url).join(" ")).not.toContain(token.split(".")[1])
    expect(page.window.localStorage.length).toBe(0)
    expect(page.window.sessionStorage.length).toBe(0)
  })

  it("says it is loading, then ticks the purposes the person allowed, and offers the receipt", async () => {
    const answer = deferred()
    const page = await open({ hash: `#token=${token}`, answer: () => answer.promise })
    expect(page.status()).toBe(en.loading)
    expect(page.submit.disabled).toBe(true)
    answer.resolve({ status: 200, body: { consents: { purposes: [{ id: "analytics", enabled: true }, { id: "ads", enabled: false }] } } })
    await settle()
    expect(page.ticked()).toEqual(["analytics"])
    expect(page.status()).toBe("")
    expect(page.submit.disabled).toBe(false)
    const receipt = page.document.getElementById("pc-receipt")!
    expect([receipt.tagName, receipt.getAttribute("type"), receipt.textContent]).toEqual(["BUTTON", "button", en.receipt])
    expect(await page.errors()).toEqual([])
  })

  it("leaves every purpose unticked for a person who has chosen nothing yet (404)", async () => {
    const page = await open({ hash: `#token=${token}`, answer: () => ({ status: 404 }) })
    expect(page.ticked()).toEqual([])
    expect(page.status()).toBe("")
    expect(page.submit.disabled).toBe(false)
    expect(page.document.getElementById("pc-receipt")).toBeNull()
  })

  it("records a change with the exact body, the button disabled while it runs", async () => {
    const saved = deferred()
    const page = await open({
      hash: `#token=${token}`,
      answer: (call) => (call.method === "POST" ? saved.promise : api([{ id: "analytics", enabled: true }])(call))
    })
    page.box("analytics").click()
    page.box("ads").click()
    page.submit.click()
    await settle()
    expect(page.submit.disabled).toBe(true)
    const post = page.calls[1]
    expect([post.method, post.url]).toEqual(["POST", "/v1/consents/events"])
    expect(post.headers).toEqual({ authorization: `Bearer ${token}`, "content-type": "application/json" })
    expect(post.body).toEqual({
      regulation: "gdpr",
      user: { organization_user_id: "jürgen 42" },
      consents: { purposes: [{ id: "analytics", enabled: false }, { id: "ads", enabled: true }] },
      notice_text_content_id: "ntc_7"
    })
    saved.resolve({ status: 201, body: { id: "evt_1" } })
    await settle()
    expect(page.status()).toBe(en.saved)
    expect(page.submit.disabled).toBe(false)
  })

  it("says the link expired on 401, an error otherwise, and keeps the person's ticks", async () => {
    for (const [answer, message] of [[{ status: 401 }, en.expired], [{ status: 500 }, en.error], ["network error", en.error]] as const) {
      const page = await open({ hash: `#token=${token}`, answer: api([], answer) })
      page.box("ads").click()
      await page.save()
      expect(page.status()).toBe(message)
      expect(page.ticked()).toEqual(["ads"])
      expect(page.submit.disabled).toBe(false)
    }
  })

  it("disables the form when the API refuses the token on reading", async () => {
    const page = await open({ hash: `#token=${token}`, gpc: true, answer: () => ({ status: 401 }) })
    expect(page.status()).toBe(en.expired)
    const optIn = page.document.getElementById("pc-gpc-override") as unknown as HTMLInputElement
    expect([page.box("analytics").disabled, page.box("ads").disabled, optIn.disabled, page.submit.disabled]).toEqual([true, true, true, true])
  })

  it("refuses a token of another organization: no request carries it", async () => {
    const other = jwt({ org: "org_2", sub: "jürgen 42", exp: inAnHour() })
    const page = await open({ hash: `#token=${other}`, publicKey: "pk_1", answer: api([]) })
    expect(page.window.location.href).toBe(pageUrl)
    expect(page.status()).toBe(en.wrongOrganization)
    await page.save()
    // The guest's way, as without a token.
    expect(page.calls.map((c) => [c.method, c.headers.authorization, c.headers["x-public-api-key"]])).toEqual([["POST", undefined, "pk_1"]])
    expect(JSON.stringify(page.calls)).not.toContain(other)
  })

  it("refuses an expired or unreadable token without a request", async () => {
    for (const refused of [jwt({ org: "org_1", sub: "jürgen 42", exp: Math.floor(Date.now() / 1000) - 1 }), "not-a-jwt"]) {
      const page = await open({ hash: `#token=${refused}`, center: { auth_required: true } })
      expect(page.window.location.href).toBe(pageUrl)
      expect(page.status()).toBe(en.expired)
      expect(page.calls).toEqual([])
      expect(page.submit.disabled).toBe(true)
    }
  })

  it("downloads the receipt as receipt.json, asked for with the bearer", async () => {
    const page = await open({ hash: `#token=${token}`, answer: api([{ id: "ads", enabled: true }]) })
    const blobs: Array<{ readonly type: string; text(): Promise<string> }> = []
    const revoked: Array<string> = []
    const clicked: Array<{ href: string; download: string; attached: boolean }> = []
    Object.defineProperties(page.window.URL, {
      createObjectURL: { configurable: true, value: (blob: (typeof blobs)[number]) => (blobs.push(blob), "blob:https://privacy.acme.example.com/r1") },
      revokeObjectURL: { configurable: true, value: (url: string) => void revoked.push(url) }
    })
    Object.defineProperty(page.window.HTMLAnchorElement.prototype, "click", {
      configurable: true,
      value(this: HTMLAnchorElement) {
        clicked.push({ href: this.href, download: this.download, attached: this.isConnected })
      }
    })
    ;(page.document.getElementById("pc-receipt") as unknown as HTMLButtonElement).click()
    await settle()
    expect(page.calls.at(-1)).toEqual({
      url: "/v1/consents/users/j%C3%BCrgen%2042/receipt?$by_organization_user_id=true&regulation=gdpr",
      method: "GET",
      headers: { authorization: `Bearer ${token}` },
      body: undefined
    })
    expect(blobs).toHaveLength(1)
    expect(blobs[0].type).toBe("application/json")
    expect(JSON.parse(await blobs[0].text())).toEqual({ schema: "receipt", events: [] })
    expect(clicked).toEqual([{ href: "blob:https://privacy.acme.example.com/r1", download: "receipt.json", attached: true }])
    expect(revoked).toEqual(["blob:https://privacy.acme.example.com/r1"])
    expect(page.document.querySelectorAll("a[download]")).toHaveLength(0)
  })
})

describe("preferences script for a guest", () => {
  it("records with the public key under a guest id kept for the organization, and shows the last choices next time", async () => {
    const first = await open({ publicKey: "pk_1", answer: api([]) })
    expect(first.calls).toEqual([])
    expect(first.window.localStorage.length).toBe(0)
    first.box("analytics").click()
    await first.save()
    const guestId = first.window.localStorage.getItem(guestKey)!
    expect(guestId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(first.calls).toEqual([{
      url: "/v1/consents/events",
      method: "POST",
      headers: { "x-public-api-key": "pk_1", "content-type": "application/json" },
      body: {
        regulation: "gdpr",
        user: { id: guestId },
        consents: { purposes: [{ id: "analytics", enabled: true }, { id: "ads", enabled: false }] },
        notice_text_content_id: "ntc_7"
      }
    }])
    expect(first.status()).toBe(en.saved)
    expect(JSON.parse(first.window.localStorage.getItem(choicesKey)!)).toEqual(["analytics"])

    const next = await open({ publicKey: "pk_1", storage: { [guestKey]: guestId, [choicesKey]: JSON.stringify(["ads"]) }, answer: api([]) })
    expect(next.ticked()).toEqual(["ads"])
    await next.save()
    expect(next.calls.map((c) => (c.body as { user: unknown }).user)).toEqual([{ id: guestId }])
  })

  it("keeps the last choices only once the API took them", async () => {
    const page = await open({ publicKey: "pk_1", storage: { [choicesKey]: JSON.stringify(["ads"]) }, answer: api([], { status: 500 }) })
    page.box("analytics").click()
    await page.save()
    expect(page.status()).toBe(en.error)
    expect(JSON.parse(page.window.localStorage.getItem(choicesKey)!)).toEqual(["ads"])
    expect(page.ticked()).toEqual(["analytics", "ads"])
  })

  it("still records when storage is refused, under an id of this visit", async () => {
    const page = await open({ publicKey: "pk_1", storage: "throws", answer: api([]) })
    await page.save()
    await page.save()
    const users = page.calls.map((c) => (c.body as { user: { id: string } }).user.id)
    expect(users).toHaveLength(2)
    expect(users[0]).toMatch(/^[0-9a-f-]{36}$/)
    expect(users[1]).toBe(users[0])
    expect(page.status()).toBe(en.saved)
  })
})

describe("preferences script without a way to record", () => {
  for (const [name, options] of [
    ["auth_required without a token", { center: { auth_required: true }, publicKey: "pk_1" }],
    ["no token and no public key", {}]
  ] as const) {
    it(`disables the form and sends nothing: ${name}`, async () => {
      const page = await open(options)
      expect([page.box("analytics").disabled, page.box("ads").disabled, page.submit.disabled]).toEqual([true, true, true])
      page.box("ads").click()
      page.submit.click()
      await settle()
      expect(page.calls).toEqual([])
      expect(page.status()).toBe("")
    })
  }
})

describe("preferences script and Global Privacy Control", () => {
  it("shows the signal and sends gpc_override only when the person ticks the opt-in", async () => {
    const page = await open({ hash: `#token=${token}`, gpc: true, answer: api([]) })
    const notice = page.document.getElementById("pc-gpc")!
    expect(notice.textContent).toBe(en.gpc)
    const optIn = page.document.getElementById("pc-gpc-override") as unknown as HTMLInputElement
    expect([optIn.type, optIn.checked, optIn.getAttribute("aria-describedby")]).toEqual(["checkbox", false, "pc-gpc"])
    expect(page.document.querySelector('label[for="pc-gpc-override"]')!.textContent).toBe(en.gpcOverride)
    expect(optIn.closest("form")).toBe(page.document.getElementById("pc-preferences"))
    expect(await page.errors()).toEqual([])

    page.box("ads").click()
    await page.save()
    expect(page.calls.at(-1)!.body).not.toHaveProperty("gpc_override")
    optIn.click()
    await page.save()
    expect(page.calls.at(-1)!.body).toMatchObject({ gpc_override: true, consents: { purposes: [{ id: "analytics", enabled: false }, { id: "ads", enabled: true }] } })
  })

  it("shows nothing of it when the browser sends no signal", async () => {
    const page = await open({ publicKey: "pk_1", answer: api([]) })
    expect(page.document.getElementById("pc-gpc")).toBeNull()
    await page.save()
    expect(page.calls[0].body).not.toHaveProperty("gpc_override")
  })
})

describe("preferences script's words", () => {
  it("are the page's language", async () => {
    const page = await open({ lang: "fr", hash: `#token=${jwt({ org: "org_2", sub: "u", exp: inAnHour() })}` })
    expect(page.status()).toBe(wordsFor("fr").messages.wrongOrganization)
  })

  it("are English when the page's messages are missing or not JSON", async () => {
    for (const messages of [null, "{not json", JSON.stringify({ wrongOrganization: 7 })]) {
      const page = await open({
        lang: "fr",
        hash: `#token=${jwt({ org: "org_2", sub: "u", exp: inAnHour() })}`,
        edit: (document) => {
          const form = document.getElementById("pc-preferences")!
          if (messages === null) form.removeAttribute("data-messages")
          else form.setAttribute("data-messages", messages)
        }
      })
      expect(page.status()).toBe(en.wrongOrganization)
    }
  })
})

/** FNV-1a (32 bits) over UTF-8, written out here to check the name against. */
const fnv1a = (text: string) => {
  let hash = 0x811c9dc5
  for (const byte of Buffer.from(text, "utf8")) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0
  return hash.toString(16).padStart(8, "0")
}

/** The package's sources bundled as `tsx` runs them: function names kept through esbuild's `__name` helper. */
const keptNamesScript = async () => {
  const out = await build({
    entryPoints: [path.join(import.meta.dirname, "../src/Preferences.ts")],
    bundle: true,
    write: false,
    format: "esm",
    platform: "neutral",
    keepNames: true,
    logLevel: "silent"
  })
  const module = await import(`data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString("base64")}`)
  return { script: module.preferencesScript as string, name: module.preferencesScriptName as string }
}

describe("preferences script as served", () => {
  it("is a standalone ES2020 script", () => {
    expect(() => acorn.parse(preferencesScript, { ecmaVersion: 2020, sourceType: "script" })).not.toThrow()
    expect(preferencesScript).not.toMatch(/\bimport\b|\brequire\(|\bexport\b/)
  })

  it("is named by its content's FNV-1a hash", () => {
    expect([fnv1a(""), fnv1a("a"), fnv1a("foobar")]).toEqual(["811c9dc5", "e40c292c", "bf9cf968"])
    expect(preferencesScriptName).toMatch(/^preferences-[0-9a-f]{8}\.js$/)
    expect(preferencesScriptName).toBe(`preferences-${fnv1a(preferencesScript)}.js`)
  })

  it("runs as compiled with function names kept, under another name", async () => {
    const kept = await keptNamesScript()
    expect(kept.script).toContain("__name(")
    expect(kept.script).not.toBe(preferencesScript)
    expect(kept.name).toMatch(/^preferences-[0-9a-f]{8}\.js$/)
    expect(kept.name).not.toBe(preferencesScriptName)
    const page = await open({ hash: `#token=${token}`, answer: api([{ id: "analytics", enabled: true }]) }, kept.script)
    expect(page.ticked()).toEqual(["analytics"])
    await page.save()
    expect(page.status()).toBe(en.saved)
  })
})
