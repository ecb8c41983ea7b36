import { describe, expect, it } from "vitest"
import { expect400 } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * Plain-http URLs the service would call (webhook receivers, OAuth token endpoints, export
 * destinations) are refused with one message that says what to do, unless the host is allowed.
 */

const PLAIN_HTTP = "plain http is only allowed for hosts listed in WEBHOOK_ALLOW_HOSTS; use https"

const { tenants: [t] } = useServer({ webhookAllowHosts: ["allowed.example"] }, { tenants: [{ webhooks: true, batch_exports_manual_run: true }] })
const asT = t.call

describe("plain-http receiver URLs", () => {
  it("a webhook url says plain http needs WEBHOOK_ALLOW_HOSTS; an allowed host is accepted", async () => {
    const r = await asT("POST", "/v1/webhooks", { body: { organization_id: t.org.id, url: "http://example.com/hook" } })
    expect400(r)
    expect(r.body.message).toBe(`Invalid url: ${PLAIN_HTTP}`)
    expect(r.body.errors).toEqual({ url: PLAIN_HTTP })
    const allowed = await asT("POST", "/v1/webhooks", { body: { organization_id: t.org.id, url: "http://allowed.example/hook" } })
    expect(allowed.status, allowed.text).toBe(201)
    const patched = await asT("PATCH", `/v1/webhooks/${allowed.body.id}`, { body: { url: "http://example.com/other" } })
    expect400(patched)
    expect(patched.body.errors).toEqual({ url: PLAIN_HTTP })
  })

  it("an OAuth token url says the same", async () => {
    const r = await asT("POST", "/v1/webhooks", {
      body: {
        organization_id: t.org.id,
        url: "https://example.com/hook",
        auth: { token_url: "http://auth.example.com/token", client_id: "cid", client_secret: "secret" }
      }
    })
    expect400(r)
    expect(r.body.errors).toEqual({ "auth.token_url": PLAIN_HTTP })
  })

  it("an export destination says the same", async () => {
    const r = await asT("POST", "/v1/exports/configs", {
      body: { organization_id: t.org.id, name: "n", destinations: [{ type: "https", url: "http://example.com/x" }] }
    })
    expect400(r)
    expect(r.body.errors).toEqual({ "destinations.0.url": PLAIN_HTTP })
  })
})

describe("non-public receiver URLs in every IPv6 form", () => {
  const forms = [
    "https://[::ffff:127.0.0.1]/x",
    "https://[::ffff:7f00:1]/x",
    // IPv4-translated (SIIT): what a translator turns into the loopback or the metadata endpoint
    "https://[::ffff:0:7f00:1]/x",
    "https://[::ffff:0:127.0.0.1]/x",
    "https://[::ffff:0:a9fe:a9fe]/x",
    "https://[64:ff9b:1::a9fe:a9fe]/x",
    "https://[2001::1]/x"
  ]

  it("are refused when an export destination, a webhook or a token url is saved", async () => {
    for (const url of forms) {
      const exp = await asT("POST", "/v1/exports/configs", {
        body: { organization_id: t.org.id, name: "n", destinations: [{ type: "https", url }] }
      })
      expect400(exp)
      expect(Object.keys(exp.body.errors), url).toEqual(["destinations.0.url"])
      const hook = await asT("POST", "/v1/webhooks", { body: { organization_id: t.org.id, url } })
      expect400(hook)
      expect(Object.keys(hook.body.errors), url).toEqual(["url"])
      const token = await asT("POST", "/v1/webhooks", {
        body: { organization_id: t.org.id, url: "https://example.com/hook", auth: { token_url: url, client_id: "c", client_secret: "s" } }
      })
      expect400(token)
      expect(Object.keys(token.body.errors), url).toEqual(["auth.token_url"])
    }
    const ok = await asT("POST", "/v1/exports/configs", {
      body: { organization_id: t.org.id, name: "n", destinations: [{ type: "https", url: "https://[::ffff:0:808:808]/x" }] }
    })
    expect(ok.status, ok.text).toBe(201)
  })
})
