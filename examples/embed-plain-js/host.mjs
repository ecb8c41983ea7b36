// A host service in plain JavaScript (no TypeScript, no loader): an Express app with its own
// body parser and routes mounts the consent API, records a consent event through the typed
// in-process API, reads it back over HTTP, downloads a proof report's PDF, receives its
// webhook, signed, on a local receiver, and verifies the consent log. It exits 0 only when all
// of that held.
//
// Until the packages are published, install them from the tarballs this repository packs
// (docs/embedding.md), every one in the same command: they need each other at versions no
// registry has yet. `pnpm pack:check` runs it so.
//
//   pnpm pack:packages                                  # at this repository's root: packed/*.tgz
//   npm install /path/to/this/repository/packed/*.tgz express standardwebhooks  # in the host's project
//   node host.mjs
//
// Once they are published (docs/releasing.md):
//   npm install @cmp/platform @cmp/http-express @cmp/store-sqlite express standardwebhooks
import { createApiFromRuntime } from "@cmp/http-express"
import { createPlatform } from "@cmp/platform"
import { sqlite } from "@cmp/store-sqlite"
import express from "express"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { Webhook } from "standardwebhooks"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-host-"))
const closers = []
const fail = (message) => {
  console.error(`host: FAILED: ${message}`)
  process.exitCode = 1
}
const check = (condition, message) => {
  if (!condition) throw new Error(message)
  console.log(`host: ok: ${message}`)
}
const listen = (server) =>
  new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${server.address().port}`)))

try {
  // 1. A receiver for the organization's webhook: it keeps each call's raw body and headers.
  const received = []
  const receiver = http.createServer((req, res) => {
    const chunks = []
    req.on("data", (c) => chunks.push(c))
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") })
      res.writeHead(204).end()
    })
  })
  const receiverUrl = await listen(receiver)
  closers.push(() => new Promise((resolve) => receiver.close(resolve)))

  // 2. The platform, made once: SQLite in a file, webhooks delivered from this process.
  const cmp = await createPlatform({
    store: sqlite({ filename: path.join(dir, "consent.db") }),
    webhookAllowHosts: ["127.0.0.1"], // the receiver is on this machine (plain http, loopback)
    dispatcher: { pollIntervalMs: 50 },
    logLevel: "Warning"
  })
  closers.unshift(() => cmp.dispose())

  // 3. The host's Express app: its own JSON parser and routes, and the API mounted beside them.
  const api = await createApiFromRuntime(cmp.runtime, { allowHttp: true })
  const app = express()
  app.use(express.json())
  app.get("/hello", (_req, res) => res.json({ hello: "from the host" }))
  app.use("/consent-api", api.router)
  const server = http.createServer(app)
  const base = await listen(server)
  closers.unshift(() => new Promise((resolve) => server.close(resolve)))

  // 4. Through the typed API, as the operator: an organization with consents and webhooks, its webhook.
  const operator = { as: cmp.asOperator() }
  const org = await cmp.organizations.create({ name: "Host Inc" }, operator)
  const flags = await cmp.premiumFeatures.find({ organization_id: org.id }, operator)
  await cmp.premiumFeatures.patch(flags.data[0].id, { consents_api: true, webhooks: true, versions_and_proofs: true }, operator)
  const hook = await cmp.webhooks.create({ organization_id: org.id, url: `${receiverUrl}/consents`, event_types: ["event.created"] }, operator)
  check(hook.signing_secret.startsWith("whsec_"), "the webhook's signing secret is shown once")

  // 5. A consent event, recorded in-process as the organization (gated like its own key).
  const asOrg = { as: cmp.asOrganization(org.id) }
  const event = await cmp.consents.events.create({
    organization_id: org.id,
    user: { organization_user_id: "crm-42" },
    consents: { purposes: [{ id: "analytics", enabled: true }] }
  }, asOrg)
  check(event.status === "confirmed" && event.organization_id === org.id, `the typed API recorded event ${event.id}`)

  // 6. Read back over HTTP, with a session of the organization's own key.
  const key = await cmp.keys.create({ organization_id: org.id, name: "backend" }, asOrg)
  const session = await fetch(`${base}/consent-api/v1/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ type: "api-key", key: key.id, secret: key.secret })
  })
  check(session.status === 201, `a session over HTTP (${session.status})`)
  const { access_token } = await session.json()
  const read = await fetch(`${base}/consent-api/v1/consents/events/${event.id}`, { headers: { authorization: `Bearer ${access_token}` } })
  const readBody = await read.json()
  check(read.status === 200 && JSON.stringify(readBody) === JSON.stringify(event), "the event reads back over HTTP as the typed API answered it")
  const hello = await fetch(`${base}/hello`)
  check(hello.status === 200 && (await hello.json()).hello === "from the host", "the host's own route still answers")

  // 7. A proof report of the event's user, made in-process, and its PDF over HTTP, set in the
  //    DejaVu faces the platform found in the packages installed with it.
  const report = await cmp.consents.proofReports.create({ organization_id: org.id, user_id: event.user.id }, asOrg)
  const pdf = await fetch(`${base}/consent-api/v1/consents/proof-reports/${report.id}/pdf`, {
    headers: { authorization: `Bearer ${access_token}` }
  })
  const pdfBytes = Buffer.from(await pdf.arrayBuffer())
  check(
    pdf.status === 200 && pdfBytes.subarray(0, 5).toString("latin1") === "%PDF-" && pdfBytes.includes("+DejaVuSans"),
    "the proof report's PDF embeds its fonts"
  )

  // 8. The webhook: arrives, verifies with the signing secret, and names the event.
  const until = Date.now() + 15_000
  while (received.length === 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 50))
  check(received.length === 1, "the receiver got the event.created message")
  const { body, headers } = received[0]
  const payload = new Webhook(hook.signing_secret).verify(body, {
    "webhook-id": headers["webhook-id"],
    "webhook-timestamp": headers["webhook-timestamp"],
    "webhook-signature": headers["webhook-signature"]
  })
  check(payload.type === "event.created" && payload.parameters.entity.id === event.id, "its Standard Webhooks signature verifies")

  // 9. The organization's consent log verifies: every chain, and every row against its last entry.
  const verification = await cmp.consents.log.verify(asOrg)
  check(verification.valid === true && verification.entries > 0, `the consent log verifies (${verification.entries} entries)`)
  console.log("host: all checks passed")
} catch (error) {
  fail(error instanceof Error ? error.stack ?? error.message : String(error))
} finally {
  for (const close of closers) await close().catch((e) => fail(`closing: ${e}`))
  fs.rmSync(dir, { recursive: true, force: true })
}
