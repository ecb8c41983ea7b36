import { type Api, createApi } from "@cmp/http-express"
import express from "express"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as net from "node:net"
import { describe, expect, it } from "vitest"
import { ADMIN, as, call, expect405, ManualClock, type Reply, start, START, testStore, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * Headers every answer carries (`X-Content-Type-Options: nosniff`), those of answers showing a
 * credential (`Cache-Control: no-store`, declared per resource and route) and `Allow` on a 405,
 * through the standalone server and through the router mounted in a host's Express app.
 */

const { server, op, tenants: [t] } = useServer({ urlSigningKey: "test-url-signing-key-0123456789-abcdef" }, { tenants: [{ webhooks: true }] })
const asT = t.call

const expectNosniff = (r: Reply, what: string) => expect(r.headers.get("x-content-type-options"), what).toBe("nosniff")
const expectNoStore = (r: Reply, what: string) => expect(r.headers.get("cache-control"), what).toBe("no-store")
const expectCacheable = (r: Reply, what: string) => expect(r.headers.get("cache-control"), what).toBeNull()

/** What a client sends that Node's parser refuses before any route runs. */
const garbage = (url: string) =>
  new Promise<string>((resolve, reject) => {
    const { hostname, port } = new URL(url)
    const socket = net.connect(Number(port), hostname, () => socket.write("NOT HTTP AT ALL\r\n\r\n"))
    let text = ""
    socket.setEncoding("utf8")
    socket.on("data", (c) => (text += c))
    socket.on("end", () => resolve(text))
    socket.on("error", reject)
  })

/** Answers of every kind, from the API served at `base` (root or a mount path). */
const answersOfEveryKind = async (base: string, token: string) => {
  const big = JSON.stringify({ name: "x".repeat(1024 * 1024 + 10) })
  return {
    "200 find": await as(base, token)("GET", "/v1/keys"),
    "201 session": await call(base, "POST", "/v1/sessions", { body: { type: "api-key", ...ADMIN } }),
    "400 malformed JSON": await call(base, "POST", "/v1/sessions", { rawBody: "{" }),
    "400 bad path": await as(base, token)("GET", "/v1/keys/%E0%A4%A"),
    "401": await call(base, "GET", "/v1/keys"),
    "404 unknown /v1 path": await call(base, "GET", "/v1/nope"),
    "404 unknown path": await call(base, "GET", "/nope"),
    "405": await as(base, token)("DELETE", "/v1/quotas"),
    "413": await call(base, "POST", "/v1/sessions", { rawBody: big }),
    "415": await call(base, "POST", "/v1/sessions", { rawBody: "x", headers: { "content-type": "text/plain" } }),
    "301 docs": await call(base, "GET", "/docs"),
    "200 docs page": await call(base, "GET", "/docs/"),
    "200 openapi.json": await call(base, "GET", "/openapi.json")
  }
}

describe("X-Content-Type-Options: nosniff on every answer", () => {
  it("the standalone server: success, errors, 404 of unknown paths, redirects, docs and the OpenAPI document", async () => {
    for (const [what, r] of Object.entries(await answersOfEveryKind(server.url, t.token))) expectNosniff(r, what)
  })

  it("the 301 to https, and a request Node cannot parse (answered in the contract's shape)", async () => {
    const strict = await start({ allowHttp: false })
    try {
      const r = await call(strict.url, "GET", "/v1/keys")
      expect(r.status).toBe(301)
      expectNosniff(r, "301 to https")
      const raw = await garbage(strict.url)
      expect(raw).toMatch(/^HTTP\/1\.1 400 /)
      expect(raw.toLowerCase()).toContain("x-content-type-options: nosniff")
      expect(JSON.parse(raw.slice(raw.indexOf("\r\n\r\n") + 4))).toMatchObject({ name: "BadRequest", code: 400, className: "bad-request" })
    } finally {
      await strict.close()
    }
  })

  it("the router mounted under a path of a host's Express app", async () => {
    const store = await testStore()
    let api: Api | undefined
    let host: http.Server | undefined
    try {
      api = await createApi({
        store: store.layer,
        allowHttp: true,
        hashCost: 1024,
        clock: new ManualClock(START),
        admin: ADMIN,
        logLevel: "None"
      })
      const app = express()
      app.use("/api", api.router)
      const listening = app.listen(0, "127.0.0.1")
      host = listening
      await new Promise<void>((resolve) => listening.once("listening", () => resolve()))
      const base = `http://127.0.0.1:${(listening.address() as AddressInfo).port}/api`
      const token = (await call(base, "POST", "/v1/sessions", { body: { type: "api-key", ...ADMIN } })).body.access_token
      for (const [what, r] of Object.entries(await answersOfEveryKind(base, token))) expectNosniff(r, `mounted: ${what}`)
    } finally {
      await new Promise<void>((resolve) => {
        if (!host) return resolve()
        host.close(() => resolve())
        host.closeAllConnections()
      })
      await api?.dispose()
      await store.close()
    }
  })
})

describe("Cache-Control: no-store on answers that show a credential", () => {
  it("sessions: API key, platform integration and invitation acceptance, failed ones too", async () => {
    expectNoStore(await call(server.url, "POST", "/v1/sessions", { body: { type: "api-key", ...ADMIN } }), "session")
    expectNoStore(await call(server.url, "POST", "/v1/sessions", { body: { type: "api-key", key: "nope", secret: "nope" } }), "failed session")
    const integration = await op.call("POST", "/v1/platform-integrations", { body: { name: "Plugin", organization_id: t.org.id } })
    expect(integration.status, integration.text).toBe(201)
    expectNoStore(integration, "integration create (token)")
    expectCacheable(await op.call("GET", `/v1/platform-integrations/${integration.body.id}`), "integration get")
    const pis = await call(server.url, "POST", "/v1/platform-integrations/sessions", {
      headers: { "x-platform-authorization": integration.body.token }
    })
    expect(pis.status, pis.text).toBe(201)
    expectNoStore(pis, "platform-integration session")
    const invited = await asT("POST", "/v1/members", { body: { name: "Ivo", email: `${unique("ivo")}@example.com`, organization_id: t.org.id } })
    expect(invited.status, invited.text).toBe(201)
    expectNoStore(invited, "invite (invitation token)")
    const accepted = await call(server.url, "POST", "/v1/invitations/accept", {
      body: { token: invited.body.invitation.token, password: "a long enough password" }
    })
    expect(accepted.status, accepted.text).toBe(201)
    expectNoStore(accepted, "accepted invitation (session)")
    expectCacheable(await asT("GET", "/v1/members"), "members find")
  })

  it("keys: the created key with its secret; not the list", async () => {
    const created = await asT("POST", "/v1/keys", { body: { organization_id: t.org.id, name: unique("key") } })
    expect(created.status, created.text).toBe(201)
    expectNoStore(created, "key create")
    expectCacheable(await asT("GET", "/v1/keys"), "keys find")
    expectCacheable(await asT("GET", `/v1/keys/${created.body.id}`), "key get")
  })

  it("secrets: every answer, find and get included", async () => {
    const created = await asT("POST", "/v1/secrets", { body: { organization_id: t.org.id, name: unique("secret") } })
    expect(created.status, created.text).toBe(201)
    expectNoStore(created, "secret create")
    expectNoStore(await asT("GET", "/v1/secrets"), "secrets find")
    expectNoStore(await asT("GET", `/v1/secrets/${created.body.id}`), "secret get")
    expectNoStore(await asT("PATCH", `/v1/secrets/${created.body.id}`, { body: { description: "d" } }), "secret patch")
    expectNoStore(await asT("DELETE", `/v1/secrets/${created.body.id}`), "secret remove")
  })

  it("webhooks: every answer (the signing secret at creation, receiver URLs that carry tokens)", async () => {
    const created = await asT("POST", "/v1/webhooks", { body: { organization_id: t.org.id, url: "https://hooks.example.com/in?token=abc" } })
    expect(created.status, created.text).toBe(201)
    expectNoStore(created, "webhook create")
    expectNoStore(await asT("GET", "/v1/webhooks"), "webhooks find")
    expectNoStore(await asT("GET", `/v1/webhooks/${created.body.id}`), "webhook get")
    expectNoStore(await asT("PATCH", `/v1/webhooks/${created.body.id}`, { body: { enabled: false } }), "webhook patch")
  })

  it("signed dashboard URLs; ordinary answers carry no Cache-Control", async () => {
    const urls = await asT("GET", "/v1/analytics/dashboards-urls")
    expect(urls.status, urls.text).toBe(200)
    expectNoStore(urls, "dashboard urls")
    expectCacheable(await asT("GET", "/v1/quotas"), "quotas")
    expectCacheable(await asT("GET", `/v1/organizations/${t.org.id}`), "organization")
  })
})

describe("Allow on every 405", () => {
  const expectAllow = (r: Reply, allow: string) => {
    expect405(r)
    expect(r.headers.get("allow")).toBe(allow)
  }

  it("services, actions, action paths with an id, the docs and the OpenAPI document", async () => {
    expectAllow(await asT("DELETE", "/v1/quotas"), "GET, HEAD, POST")
    expectAllow(await asT("DELETE", "/v1/quotas/some-id"), "GET, HEAD, PATCH")
    expectAllow(await asT("PATCH", "/v1/keys", { body: {} }), "GET, HEAD, POST")
    expectAllow(await call(server.url, "GET", "/v1/sessions"), "POST")
    expectAllow(await call(server.url, "GET", "/v1/platform-integrations/sessions"), "POST")
    expectAllow(await call(server.url, "GET", "/v1/invitations/accept"), "POST")
    expectAllow(await asT("GET", "/v1/webhooks/deliveries/some-id/replay"), "POST")
    expectAllow(await asT("POST", "/v1/consents/events/some-id/tcstring", { body: {} }), "GET, HEAD")
    expectAllow(await asT("POST", "/v1/languages", { body: {} }), "GET, HEAD")
    expectAllow(await call(server.url, "PUT", "/openapi.json", { body: {} }), "GET, HEAD")
    expectAllow(await call(server.url, "POST", "/docs/", { body: {} }), "GET, HEAD")
  })
})
