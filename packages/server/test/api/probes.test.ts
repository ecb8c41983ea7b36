import { createApi } from "@cmp/http-express"
import express from "express"
import type * as http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ADMIN, call, expect401, expect404, expectError, ManualClock, START, start, testStore, type TestServer } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * The probes (`/healthz`, `/readyz`) and `/metrics` as an orchestrator and Prometheus meet them:
 * outside `/v1`, unauthenticated (the metrics behind their own token), on any mount path.
 */

const METRICS_TOKEN = "metrics-token-0123456789abcdef"

describe("probes", () => {
  const fixture = useServer({}, { operator: false })
  const base = () => fixture.base

  it("/healthz answers 200 while the process runs, with no credential", async () => {
    const r = await call(base(), "GET", "/healthz")
    expect(r.status, r.text).toBe(200)
    expect(r.body).toEqual({ status: "ok" })
    expect(r.headers.get("cache-control")).toBe("no-store")
  })

  it("/readyz answers 200 when the database answers and the migrations ran", async () => {
    const r = await call(base(), "GET", "/readyz")
    expect(r.status, r.text).toBe(200)
    expect(r.body).toEqual({ status: "ready" })
  })

  it("HEAD is answered like GET; other methods are 405 with Allow", async () => {
    expect((await call(base(), "HEAD", "/healthz")).status).toBe(200)
    expect((await call(base(), "HEAD", "/readyz")).status).toBe(200)
    for (const path of ["/healthz", "/readyz"]) {
      const r = await call(base(), "POST", path, { body: {} })
      expectError(r, 405, "MethodNotAllowed", "method-not-allowed")
      expect(r.headers.get("allow")).toBe("GET, HEAD")
    }
  })

  it("a bearer token is not needed and not looked at", async () => {
    expect((await call(base(), "GET", "/readyz", { token: "not-a-token" })).status).toBe(200)
  })

  it("/metrics is a 404 like any unknown path while METRICS_TOKEN is unset, whatever is sent", async () => {
    expect404(await call(base(), "GET", "/metrics"))
    expect404(await call(base(), "GET", "/metrics", { token: METRICS_TOKEN }))
    expect404(await call(base(), "POST", "/metrics"))
  })

  it("only the exact paths are probes", async () => {
    expect404(await call(base(), "GET", "/healthz/more"))
    expect404(await call(base(), "GET", "/v1/healthz"))
  })
})

describe("probes on a server that redirects plain HTTP to HTTPS", () => {
  let server: TestServer
  beforeAll(async () => {
    server = await start({ allowHttp: false, metricsToken: METRICS_TOKEN })
  })
  afterAll(async () => {
    await server?.close()
  })

  it("are answered over plain HTTP, where the API itself redirects", async () => {
    expect((await call(server.url, "GET", "/v1/keys")).status).toBe(301)
    expect((await call(server.url, "GET", "/healthz")).status).toBe(200)
    expect((await call(server.url, "GET", "/readyz")).status).toBe(200)
    expect((await call(server.url, "GET", "/metrics", { token: METRICS_TOKEN })).status).toBe(200)
  })
})

describe("probes under a mount path", () => {
  let mounted: { base: string; close: () => Promise<void> }
  beforeAll(async () => {
    const store = await testStore()
    const api = await createApi({
      store: store.layer,
      allowHttp: true,
      hashCost: 1024,
      clock: new ManualClock(START),
      admin: ADMIN,
      logLevel: "None",
      dispatcher: false,
      metricsToken: METRICS_TOKEN
    })
    const app = express()
    app.use("/consent-api", api.router)
    const listening: http.Server = app.listen(0, "127.0.0.1")
    await new Promise<void>((resolve) => listening.once("listening", () => resolve()))
    mounted = {
      base: `http://127.0.0.1:${(listening.address() as AddressInfo).port}`,
      close: async () => {
        await new Promise<void>((resolve) => {
          listening.close(() => resolve())
          listening.closeAllConnections()
        })
        await api.dispose()
        await store.close()
      }
    }
  })
  afterAll(async () => {
    await mounted?.close()
  })

  it("are answered under the mount path, and only there", async () => {
    expect((await call(mounted.base, "GET", "/consent-api/healthz")).status).toBe(200)
    expect((await call(mounted.base, "GET", "/consent-api/readyz")).body).toEqual({ status: "ready" })
    const scraped = await call(mounted.base, "GET", "/consent-api/metrics", { token: METRICS_TOKEN })
    expect(scraped.status).toBe(200)
    expect(scraped.text).toContain("cmp_webhook_outbox_pending")
    // The host's own paths are its own.
    expect((await call(mounted.base, "GET", "/healthz")).status).toBe(404)
  })
})

describe("/metrics with METRICS_TOKEN", () => {
  const fixture = useServer({ metricsToken: METRICS_TOKEN }, { operator: false })
  const base = () => fixture.base

  it("is 401 without the token or with another one", async () => {
    expect401(await call(base(), "GET", "/metrics"))
    expect401(await call(base(), "GET", "/metrics", { token: "wrong" }))
    expect401(await call(base(), "GET", "/metrics", { token: `${METRICS_TOKEN}x` }))
    expect401(await call(base(), "GET", "/metrics", { token: METRICS_TOKEN.slice(0, -1) }))
    expect401(await call(base(), "GET", "/metrics", { headers: { authorization: `Basic ${METRICS_TOKEN}` } }))
  })

  it("answers the Prometheus text with the token", async () => {
    const r = await call(base(), "GET", "/metrics", { token: METRICS_TOKEN })
    expect(r.status, r.text).toBe(200)
    expect(r.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/)
    expect(r.headers.get("cache-control")).toBe("no-store")
    expect(r.text).toMatch(/^# HELP cmp_/m)
  })
})
