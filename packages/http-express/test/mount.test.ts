import { SqliteStore } from "@cmp/store-sqlite"
import express from "express"
import type * as http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ManualClock } from "@cmp/test-support/clock"
import { ADMIN, as, call, client, expect401, expect404, operatorOf, START } from "@cmp/test-support/http"
import { type Api, createApi, createApiFromRuntime, startServer } from "../src/index.js"

/**
 * The API mounted under a prefix of the host application's own Express app. Requests to
 * /v1/consents/* (the consent events here) stay out of the `api_requests` quota wherever the
 * API is mounted.
 */

/** A tenant whose quota allows `apiRequests` counted requests, with the consents API on. */
const limitedTenant = async (op: Awaited<ReturnType<typeof operatorOf>>, apiRequests: number) => {
  const t = await op.tenant()
  const quota = await op.quotaOf(t.org.id)
  expect((await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { api_requests: apiRequests } })).status).toBe(200)
  const flags = await op.featuresOf(t.org.id)
  expect((await op.call("PATCH", `/v1/premium-features/${flags.id}`, { body: { consents_api: true } })).status).toBe(200)
  return t
}

let api: Api
let server: http.Server
let base: string
let clock: ManualClock

beforeAll(async () => {
  clock = new ManualClock(START)
  api = await createApi({
    store: SqliteStore.layer({ filename: ":memory:" }),
    allowHttp: true,
    hashCost: 1024,
    clock,
    admin: ADMIN,
    logLevel: "None"
  })
  const app = express()
  app.get("/health", (_req, res) => {
    res.json({ ok: true })
  })
  app.use("/api", api.router)
  server = app.listen(0, "127.0.0.1")
  await new Promise<void>((resolve) => server.once("listening", () => resolve()))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  await new Promise<void>((resolve) => {
    server?.close(() => resolve())
    server?.closeAllConnections()
  })
  await api?.dispose()
})

describe("mounted under /api in a host app", () => {
  it("the host app's own route works", async () => {
    const r = await call(base, "GET", "/health")
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ ok: true })
  })

  it("/api/v1/sessions works and the token is accepted under the prefix", async () => {
    const r = await call(base, "POST", "/api/v1/sessions", { body: { type: "api-key", ...ADMIN } })
    expect(r.status).toBe(201)
    expect(typeof r.body.access_token).toBe("string")
    const orgs = await as(base, r.body.access_token)("GET", "/api/v1/organizations")
    expect(orgs.status).toBe(200)
    expect(orgs.body.total).toBeGreaterThanOrEqual(1)
    expect401(await call(base, "GET", "/api/v1/organizations"))
  })

  it("/api/openapi.json and /api/docs/ work", async () => {
    const doc = await call(base, "GET", "/api/openapi.json")
    expect(doc.status).toBe(200)
    expect(doc.body.openapi).toBe("3.1.0")
    expect(doc.body.paths).toHaveProperty(["/v1/sessions"])
    const docs = await call(base, "GET", "/api/docs/")
    expect(docs.status).toBe(200)
    expect(docs.text).toContain("swagger-ui-bundle.js")
    expect((await call(base, "GET", "/api/docs/swagger-ui-bundle.js")).status).toBe(200)
    const redirect = await call(base, "GET", "/api/docs")
    expect(redirect.status).toBe(301)
    expect(redirect.headers.get("location")).toBe("/api/docs/")
  })

  it("unknown routes under the prefix answer the contract's 404; the host app keeps its own", async () => {
    expect404(await call(base, "GET", "/api/v1/nope"))
    const outside = await call(base, "GET", "/elsewhere")
    expect(outside.status).toBe(404)
  })

  it("requests to /v1/consents/* do not count against api_requests when mounted under a prefix", async () => {
    const op = await operatorOf(`${base}/api`)
    const t = await limitedTenant(op, 2)
    const asT = as(base, t.token)
    for (let i = 0; i < 4; i++) {
      const r = await asT("GET", "/api/v1/consents/events")
      expect(r.status, `consents request ${i + 1}: ${r.text}`).toBe(200)
    }
    expect((await asT("GET", "/api/v1/keys")).status).toBe(200)
    expect((await asT("GET", "/api/v1/keys")).status).toBe(200)
    const limited = await asT("GET", "/api/v1/keys")
    expect(limited.status).toBe(429)
    expect(limited.headers.get("retry-after")).toMatch(/^[1-9]\d*$/)
    // Still served: consents are outside the quota.
    expect((await asT("GET", "/api/v1/consents/events")).status).toBe(200)
    const { login } = client(`${base}/api`)
    expect(typeof (await login(t.key.id, t.secret))).toBe("string")
  })
})

describe("the same quota rule at the root (startServer)", () => {
  it("requests to /v1/consents/* do not count; other requests do", async () => {
    const root = await startServer({
      store: SqliteStore.layer({ filename: ":memory:" }),
      port: 0,
      allowHttp: true,
      hashCost: 1024,
      admin: ADMIN,
      logLevel: "None"
    })
    try {
      const op = await operatorOf(root.url)
      const t = await limitedTenant(op, 1)
      const asT = as(root.url, t.token)
      for (let i = 0; i < 3; i++) expect((await asT("GET", "/v1/consents/events")).status).toBe(200)
      expect((await asT("GET", "/v1/keys")).status).toBe(200)
      expect((await asT("GET", "/v1/keys")).status).toBe(429)
      // Every other service stays counted.
      expect((await asT("GET", "/v1/secrets")).status).toBe(429)
    } finally {
      await root.close()
    }
  })
})

describe("HTTPS enforcement when mounted", () => {
  it("the redirect keeps the mount prefix", async () => {
    const strict = await createApi({
      store: SqliteStore.layer({ filename: ":memory:" }),
      hashCost: 1024,
      admin: ADMIN,
      logLevel: "None"
    })
    const app = express()
    app.use("/api", strict.router)
    app.get("/health", (_req, res) => {
      res.json({ ok: true })
    })
    const s = app.listen(0, "127.0.0.1")
    try {
      await new Promise<void>((resolve) => s.once("listening", () => resolve()))
      const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`
      const r = await call(url, "GET", "/api/v1/keys?$limit=1")
      expect(r.status).toBe(301)
      expect(r.headers.get("location")).toBe(`https://${new URL(url).host}/api/v1/keys?$limit=1`)
      // The host's own routes are the host's: the API does not redirect them.
      expect((await call(url, "GET", "/health")).status).toBe(200)
      expect((await call(url, "GET", "/api/elsewhere")).status).toBe(404)
    } finally {
      await new Promise<void>((resolve) => {
        s.close(() => resolve())
        s.closeAllConnections()
      })
      await strict.dispose()
    }
  })
})

describe("mounted after the host's own body parser", () => {
  it("express.json() first: the API still reads JSON bodies; a form is still refused", async () => {
    const parsed = await createApi({
      store: SqliteStore.layer({ filename: ":memory:" }),
      allowHttp: true,
      hashCost: 1024,
      admin: ADMIN,
      logLevel: "None"
    })
    const app = express()
    app.use(express.json())
    app.use(express.urlencoded({ extended: false }))
    app.use("/api", parsed.router)
    const s = app.listen(0, "127.0.0.1")
    try {
      await new Promise<void>((resolve) => s.once("listening", () => resolve()))
      const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`
      const session = await call(url, "POST", "/api/v1/sessions", { body: { type: "api-key", ...ADMIN } })
      expect(session.status, session.text).toBe(201)
      const org = await as(url, session.body.access_token)("POST", "/api/v1/organizations", { body: { name: "parsed-first" } })
      expect(org.status, org.text).toBe(201)
      const form = await call(url, "POST", "/api/v1/sessions", {
        rawBody: `type=api-key&key=${ADMIN.key}&secret=${ADMIN.secret}`,
        headers: { "content-type": "application/x-www-form-urlencoded" }
      })
      expect(form.status).toBe(415)
    } finally {
      await new Promise<void>((resolve) => {
        s.close(() => resolve())
        s.closeAllConnections()
      })
      await parsed.dispose()
    }
  })
})

describe("the hosted pages mounted on their own", () => {
  it("a host serves the pages at its root and the API under /api: each page's links and script point where they are served", async () => {
    const pages = await createApiFromRuntime(api.runtime, { only: "pages", apiBase: "/api/v1", allowHttp: true, logLevel: "None" })
    const app = express()
    app.use(pages.router)
    app.use("/api", api.router)
    app.use((_req, res) => {
      res.status(404).send("the host's own 404")
    })
    const s = app.listen(0, "127.0.0.1")
    try {
      await new Promise<void>((resolve) => s.once("listening", () => resolve()))
      const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`
      const op = await operatorOf(`${url}/api`)
      const t = await op.tenant()
      const center = await as(`${url}/api`, t.token)("POST", "/v1/privacy-centers", {
        body: { organization_id: t.org.id, name: "Mounted apart", display_cookies: "choices", content: { purposes: [{ id: "ads", name: "Ads" }] } }
      })
      expect(center.status, center.text).toBe(201)
      const page = await call(url, "GET", `/privacy/${center.body.id}`)
      expect(page.status).toBe(200)
      expect(page.text).toContain('data-api-base="/api/v1"')
      expect(page.text).toMatch(/<script src="\/privacy\/assets\/preferences-[0-9a-f]{8}\.js" defer>/)
      expect((await call(url, "GET", page.text.match(/src="([^"]+\.js)"/)![1]!)).status).toBe(200)
      // Under the API's own mount the same page links under it.
      const underApi = await call(url, "GET", `/api/privacy/${center.body.id}`)
      expect(underApi.text).toContain('data-api-base="/api/v1"')
      expect(underApi.text).toContain(`href="/api/privacy/${center.body.id}/style.css`)
      // Everything else at the root is the host's: the API is not served there, nor its probes.
      for (const path of ["/v1/organizations", "/openapi.json", "/healthz", "/elsewhere"]) {
        const r = await call(url, "GET", path)
        expect([r.status, r.text], path).toEqual([404, "the host's own 404"])
      }
    } finally {
      await new Promise<void>((resolve) => {
        s.close(() => resolve())
        s.closeAllConnections()
      })
    }
  })
})
