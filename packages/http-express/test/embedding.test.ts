import { sqlite } from "@cmp/store-sqlite"
import { as, call, expect400 } from "@cmp/test-support/http"
import express from "express"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Api, createApi } from "../src/index.js"

/**
 * The embedding example of docs/embedding.md with its own options (a SQLite file, the operator key, plain
 * http, a local webhook receiver allowed, the dispatcher left at its default), in a host app that
 * has its own `express.json()` and routes, with the API under /consent-api. Only the file and
 * port differ.
 */

const README_ADMIN = { key: "admin", secret: "change-me-to-a-long-secret" }

let dir: string

const listening = async (app: express.Express) => {
  const server = app.listen(0, "127.0.0.1")
  await new Promise<void>((resolve) => server.once("listening", () => resolve()))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}

/** The example's API with `createApi`, on a fresh SQLite file. */
const readmeApi = (name: string): Promise<Api> =>
  createApi({
    store: sqlite({ filename: path.join(dir, name, "data", "consent.db") }), // a directory not made yet, as ./data may be
    admin: README_ADMIN,
    allowHttp: true,
    webhookAllowHosts: ["127.0.0.1"],
    logLevel: "None"
  })

/** A receiver that keeps the first request it gets. */
const receiver = async () => {
  let got: (r: { headers: http.IncomingHttpHeaders; body: string }) => void = () => undefined
  const first = new Promise<{ headers: http.IncomingHttpHeaders; body: string }>((resolve) => (got = resolve))
  const server = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      res.statusCode = 204
      res.end()
      got({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    first,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** Standard Webhooks: HMAC-SHA256 of `id.timestamp.body` under the secret after `whsec_`. */
const signatureOf = (secret: string, id: string, timestamp: string, body: string) =>
  "v1," + crypto.createHmac("sha256", Buffer.from(secret.slice("whsec_".length), "base64")).update(`${id}.${timestamp}.${body}`).digest("base64")

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-embedding-"))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

describe("the embedding example of docs/embedding.md", () => {
  it("host express.json() first: sessions, organizations, features, a webhook and a signed delivery", async () => {
    const api = await readmeApi("readme")
    const app = express()
    app.use(express.json())
    app.get("/health", (_req, res) => {
      res.json({ ok: true })
    })
    app.use("/consent-api", api.router)
    const host = await listening(app)
    const hook = await receiver()
    try {
      expect((await call(host.url, "GET", "/health")).body).toEqual({ ok: true })
      const session = await call(host.url, "POST", "/consent-api/v1/sessions", { body: { type: "api-key", ...README_ADMIN } })
      expect(session.status, session.text).toBe(201)
      const op = as(host.url, session.body.access_token)
      const org = await op("POST", "/consent-api/v1/organizations", { body: { name: "Acme" } })
      expect(org.status, org.text).toBe(201)
      const features = await op("GET", `/consent-api/v1/premium-features?organization_id=${org.body.id}`)
      expect(features.status, features.text).toBe(200)
      const on = await op("PATCH", `/consent-api/v1/premium-features/${features.body.data[0].id}`, {
        body: { consents_api: true, webhooks: true }
      })
      expect(on.status, on.text).toBe(200)
      const webhook = await op("POST", "/consent-api/v1/webhooks", { body: { organization_id: org.body.id, url: hook.url } })
      expect(webhook.status, webhook.text).toBe(201)
      const event = await op("POST", "/consent-api/v1/consents/events", {
        body: { organization_id: org.body.id, user: { organization_user_id: "u-1" }, consents: { purposes: [{ id: "ads", enabled: true }] } }
      })
      expect(event.status, event.text).toBe(201)

      // Delivered by the mounted API itself: no worker, no dispatcher option.
      const got = await hook.first
      const id = String(got.headers["webhook-id"])
      const timestamp = String(got.headers["webhook-timestamp"])
      expect(got.headers["webhook-signature"]).toBe(signatureOf(webhook.body.signing_secret, id, timestamp, got.body))
      const message = JSON.parse(got.body)
      expect(["event.created", "user.created"]).toContain(message.type)
    } finally {
      await host.close()
      await api.dispose()
      await hook.close()
    }
  })

  it("host express.json() after mounting: the API reads its own bodies", async () => {
    const api = await readmeApi("after")
    const app = express()
    app.use("/consent-api", api.router)
    app.use(express.json())
    app.post("/echo", (req, res) => {
      res.json(req.body)
    })
    const host = await listening(app)
    try {
      const session = await call(host.url, "POST", "/consent-api/v1/sessions", { body: { type: "api-key", ...README_ADMIN } })
      expect(session.status, session.text).toBe(201)
      expect((await call(host.url, "POST", "/echo", { body: { a: 1 } })).body).toEqual({ a: 1 })
      // Not parsed by the host: the API's own parser answers the contract's 400.
      expect400(await call(host.url, "POST", "/consent-api/v1/sessions", { rawBody: "{\"type\": " }))
    } finally {
      await host.close()
      await api.dispose()
    }
  })

  it("a body the host's parser already made is the one the API takes", async () => {
    const api = await readmeApi("parsed")
    const app = express()
    // A host parser that also accepts bodies the API's own limit would refuse.
    app.use(express.json({ limit: "4mb" }))
    app.use("/consent-api", api.router)
    const host = await listening(app)
    try {
      const session = await call(host.url, "POST", "/consent-api/v1/sessions", { body: { type: "api-key", ...README_ADMIN } })
      expect(session.status, session.text).toBe(201)
      const op = as(host.url, session.body.access_token)
      const name = "parsed by the host"
      const org = await op("POST", "/consent-api/v1/organizations", { body: { name } })
      expect(org.status, org.text).toBe(201)
      expect(org.body.name).toBe(name)
      // Read once, by the host: larger than the API's 1 MiB, within the host's 4 MB.
      const big = await op("POST", "/consent-api/v1/organizations", { body: { name: "big", padding: "x".repeat(1_200_000) } })
      expect(big.status).not.toBe(413)
    } finally {
      await host.close()
      await api.dispose()
    }
  })
})
