import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"

/**
 * kill -9 of the server while clients stream consent events: after a restart on the same
 * database every event that got a 201 is there, once, and has its webhook message. Consent is
 * legal evidence: an acknowledged write must survive a crash.
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-fault-"))
const main = path.join(import.meta.dirname, "..", "src", "main.ts")
const tsx = path.join(import.meta.dirname, "..", "node_modules", ".bin", "tsx")
const children: Array<ChildProcess> = []
const { DATABASE_URL: _unused, ...inherited } = process.env
const env = {
  ...inherited,
  SQLITE_PATH: path.join(dir, "consent.db"),
  ALLOW_HTTP: "true",
  LOG_LEVEL: "Warning",
  PORT: "0",
  ADMIN_API_KEY: "admin",
  ADMIN_API_SECRET: "admin-secret-0123456789",
  WEBHOOK_ALLOW_HOSTS: "127.0.0.1",
  // Messages stay in the outbox, so the test counts what was queued, not what was sent.
  WEBHOOK_DISPATCHER: "false"
}

afterAll(() => {
  for (const c of children) c.kill("SIGKILL")
  fs.rmSync(dir, { recursive: true, force: true })
})

const startServer = () =>
  new Promise<{ url: string; pid: number }>((resolve, reject) => {
    const child = spawn(tsx, [main], { env })
    children.push(child)
    let out = ""
    child.stdout.on("data", (d) => {
      out += String(d)
      const m = /"url":"([^"]+)".*"pid":(\d+)/.exec(out)
      if (m) resolve({ url: m[1]!, pid: Number(m[2]) })
    })
    child.stderr.on("data", (d) => (out += String(d)))
    child.on("exit", (code) => reject(new Error(`server exited with ${code}: ${out}`)))
  })

const json = async (url: string, method: string, body?: unknown, token?: string) => {
  const res = await fetch(url, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  return { status: res.status, body: await res.json() as any }
}

describe("kill -9 while streaming consent events (SQLite file)", () => {
  it("every acknowledged event survives, once, with its webhook message", async () => {
    const first = await startServer()
    const op = (await json(`${first.url}/v1/sessions`, "POST", { type: "api-key", key: "admin", secret: env.ADMIN_API_SECRET })).body.access_token
    const org = (await json(`${first.url}/v1/organizations`, "POST", { name: "fault" }, op)).body
    const flags = (await json(`${first.url}/v1/premium-features?organization_id=${org.id}`, "GET", undefined, op)).body.data[0]
    await json(`${first.url}/v1/premium-features/${flags.id}`, "PATCH", { consents_api: true, webhooks: true }, op)
    const hook = await json(`${first.url}/v1/webhooks`, "POST", {
      organization_id: org.id,
      url: "http://127.0.0.1:9/hook",
      event_types: ["event.created"]
    }, op)
    expect(hook.status).toBe(201)

    // Eight clients stream events with ids of their own; the server is killed mid-stream.
    const acknowledged = new Set<string>()
    const attempted = new Set<string>()
    let stop = false
    const client = async (c: number) => {
      for (let i = 0; !stop; i++) {
        const id = `evt-${c}-${i}`
        attempted.add(id)
        try {
          const r = await json(`${first.url}/v1/consents/events`, "POST", {
            id,
            organization_id: org.id,
            user: { organization_user_id: `user-${c}-${i % 5}` },
            consents: { purposes: [{ id: "analytics", enabled: i % 2 === 0 }] }
          }, op)
          if (r.status === 201) acknowledged.add(id)
          else if (r.status !== 201) throw new Error(`unexpected ${r.status}`)
        } catch {
          return
        }
      }
    }
    const streaming = Promise.all(Array.from({ length: 8 }, (_, c) => client(c)))
    while (acknowledged.size < 150) await new Promise((r) => setTimeout(r, 20))
    process.kill(first.pid, "SIGKILL")
    stop = true
    await streaming
    expect(acknowledged.size).toBeGreaterThanOrEqual(150)

    const second = await startServer()
    const token = (await json(`${second.url}/v1/sessions`, "POST", { type: "api-key", key: "admin", secret: env.ADMIN_API_SECRET })).body.access_token
    const events: Array<string> = []
    for (let skip = 0;; skip += 1000) {
      const page = (await json(`${second.url}/v1/consents/events?organization_id=${org.id}&$limit=1000&$skip=${skip}&$select[]=id`, "GET", undefined, token)).body
      events.push(...page.data.map((e: { id: string }) => e.id))
      if (page.data.length < 1000) break
    }
    // Every acknowledged event is there; none twice; only attempted ones (in flight at the kill) besides.
    for (const id of acknowledged) expect(events).toContain(id)
    expect(new Set(events).size).toBe(events.length)
    for (const id of events) expect(attempted.has(id)).toBe(true)
    expect(events.length - acknowledged.size).toBeLessThanOrEqual(8)

    // Every stored event has its message in the outbox (written in the same transaction).
    const messaged = new Set<string>()
    for (let skip = 0;; skip += 1000) {
      const page = (await json(`${second.url}/v1/webhooks/deliveries?webhook_id=${hook.body.id}&$limit=1000&$skip=${skip}`, "GET", undefined, token)).body
      for (const d of page.data) messaged.add(d.payload.parameters.entity.id)
      if (page.data.length < 1000) break
    }
    expect([...events].filter((id) => !messaged.has(id))).toEqual([])
    expect(messaged.size).toBe(events.length)
  })
})
