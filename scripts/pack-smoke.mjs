/**
 * The host that `scripts/pack-check.mjs` runs in a plain npm project where the packed packages
 * were installed: plain JavaScript, run by `node` without any loader. It imports every installed
 * `@cmp/*` package, mounts the REST API in an Express app over a SQLite file, opens the operator
 * key's session and reads `GET /consent-api/v1/languages`. Exits 0 when all of it worked.
 */
import * as fs from "node:fs"
import { once } from "node:events"
import * as os from "node:os"
import * as path from "node:path"

const check = (ok, message) => {
  if (!ok) throw new Error(message)
}

// Every package loads as JavaScript (its exports point at compiled files, not TypeScript).
const names = (process.env.CMP_PACKAGES ?? "").split(",").filter(Boolean)
const packages = names.length > 0 ? names : fs.readdirSync(path.resolve("node_modules/@cmp")).map((n) => `@cmp/${n}`)
for (const name of packages) {
  const module = await import(name)
  check(Object.keys(module).length > 0, `${name} exports nothing`)
  console.log(`imported ${name}: ${Object.keys(module).sort().join(", ")}`)
}

const { createApi } = await import("@cmp/http-express")
const { sqlite } = await import("@cmp/store-sqlite")
const { default: express } = await import("express")

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-smoke-"))
const admin = { key: "admin", secret: "a-long-operator-secret-for-the-smoke-test" }
const api = await createApi({ store: sqlite({ filename: path.join(dir, "consent.db") }), admin, allowHttp: true })
const app = express()
app.get("/health", (_req, res) => res.json({ ok: true }))
app.use("/consent-api", api.router)
const server = app.listen(0, "127.0.0.1")
await once(server, "listening")
const base = `http://127.0.0.1:${server.address().port}`

try {
  const health = await fetch(`${base}/health`)
  check(health.status === 200, `GET /health: ${health.status}`)

  const anonymous = await fetch(`${base}/consent-api/v1/languages`)
  check(anonymous.status === 401, `GET /consent-api/v1/languages without a session: ${anonymous.status}, expected 401`)

  const opened = await fetch(`${base}/consent-api/v1/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ type: "api-key", key: admin.key, secret: admin.secret })
  })
  const session = await opened.json()
  check(opened.status === 201 && typeof session.access_token === "string", `POST /consent-api/v1/sessions: ${opened.status} ${JSON.stringify(session)}`)

  const languages = await fetch(`${base}/consent-api/v1/languages`, { headers: { authorization: `Bearer ${session.access_token}` } })
  const text = await languages.text()
  check(languages.status === 200, `GET /consent-api/v1/languages: ${languages.status} ${text}`)
  console.log(`GET /consent-api/v1/languages: 200 ${text.slice(0, 120)}${text.length > 120 ? "…" : ""}`)
  check(fs.existsSync(path.join(dir, "consent.db")), "the SQLite file was not created")
} finally {
  server.close()
  await api.dispose()
  fs.rmSync(dir, { recursive: true, force: true })
}
console.log("smoke: the packed packages serve the API from plain JavaScript")
