import * as fs from "node:fs"
import * as https from "node:https"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { ADMIN } from "./helpers.js"
import { useServer } from "./fixture.js"

/** Serving HTTPS directly from a certificate and key (`TLS_CERT`/`TLS_KEY`). */
const fixtures = path.join(import.meta.dirname, "fixtures")
const cert = fs.readFileSync(path.join(fixtures, "localhost-cert.pem"), "utf8")
// No allowHttp: TLS connections are secure, so nothing is redirected. The operator signs in
// over plain HTTP, which this server does not speak.
const { server } = useServer(
  { allowHttp: false, tls: { cert, key: fs.readFileSync(path.join(fixtures, "localhost-key.pem"), "utf8") } },
  { operator: false }
)

const request = (method: string, url: string, body?: unknown) =>
  new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = https.request(url, { method, ca: cert, headers: { "content-type": "application/json" } }, (res) => {
      let text = ""
      res.on("data", (d) => (text += d))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }))
    })
    req.on("error", reject)
    req.end(body === undefined ? undefined : JSON.stringify(body))
  })

describe("HTTPS", () => {
  it("serves the API over TLS with the given certificate, without redirecting", async () => {
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/)
    const session = await request("POST", `${server.url}/v1/sessions`, { type: "api-key", ...ADMIN })
    expect(session.status).toBe(201)
    expect(typeof session.body.access_token).toBe("string")
    const unauthenticated = await request("GET", `${server.url}/v1/keys`)
    expect(unauthenticated.status).toBe(401)
  })

  it("a client that does not trust the certificate cannot connect", async () => {
    await expect(
      new Promise((resolve, reject) => https.get(`${server.url}/v1/keys`, resolve).on("error", reject))
    ).rejects.toThrow(/self[- ]signed|certificate/i)
  })
})
