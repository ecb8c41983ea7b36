import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { expect400, expect403, expect404, expect405, expect409 } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * Export configurations (quotas exports_configs and exports_destinations) and manual runs
 * (premium feature batch_exports_manual_run): NDJSON of a time range's events and users,
 * streamed to a directory under EXPORTS_ROOT and to a receiver that takes a POST.
 */
let root: string

interface Got {
  readonly url: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
  readonly chunks: number
}
const received: Array<Got> = []
let answer = 200
let receiver: http.Server
let receiverUrl: string

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-exports-"))
  receiver = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      received.push({ url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), chunks: chunks.length })
      res.statusCode = answer
      res.end("ok")
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/exports`
})
// Registered before the server's hooks: the directory and the receiver outlive the server.
afterAll(async () => {
  receiver?.closeAllConnections()
  await new Promise<void>((resolve) => receiver ? receiver.close(() => resolve()) : resolve())
  fs.rmSync(root, { recursive: true, force: true })
})

const { server, op, tenant: withFeatures } = useServer(() => ({ webhookAllowHosts: ["127.0.0.1"], exportsRoot: root }))

const tenant = (features: Record<string, boolean> = { batch_exports_manual_run: true, consents_api: true }) => withFeatures(features)
type T = Awaited<ReturnType<typeof tenant>>

const setQuota = async (orgId: string, changes: Record<string, number>) => {
  const q = await op.quotaOf(orgId)
  const r = await op.call("PATCH", `/v1/quotas/${q.id}`, { body: changes })
  expect(r.status, r.text).toBe(200)
}

const dir = (p: string) => ({ type: "directory", path: p })
const newConfig = async (t: T, destinations: Array<unknown>, extra: Record<string, unknown> = {}) => {
  const r = await t.call("POST", "/v1/exports/configs", { body: { organization_id: t.org.id, name: "nightly", destinations, ...extra } })
  expect(r.status, r.text).toBe(201)
  return r.body
}

const event = (t: T, ouid: string, createdAt: string) =>
  t.call("POST", "/v1/consents/events", {
    body: {
      organization_id: t.org.id,
      created_at: createdAt,
      user: { organization_user_id: ouid },
      consents: { purposes: [{ id: "analytics", enabled: true }] }
    }
  })

const readNdjson = (text: string) => text.split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l))

describe("exports: configurations", () => {
  it("validates destinations: relative paths without '..', https or allowed hosts", async () => {
    const t = await tenant()
    for (
      const destinations of [
        [],
        [dir("../escape")],
        [dir("a/../../escape")],
        [dir("/etc")],
        [{ type: "ftp", url: "ftp://x" }],
        [{ type: "https", url: "http://example.com/x" }],
        [{ type: "https", url: "https://10.0.0.1/x" }],
        // The address policy of every outbound call: mapped, metadata and loopback names too.
        [{ type: "https", url: "https://[::ffff:127.0.0.1]/x" }],
        [{ type: "https", url: "https://[::ffff:a9fe:a9fe]/x" }],
        [{ type: "https", url: "https://[fe80::1]/x" }],
        [{ type: "https", url: "https://169.254.169.254/latest/meta-data" }],
        [{ type: "https", url: "https://localhost/x" }]
      ]
    ) {
      expect400(await t.call("POST", "/v1/exports/configs", { body: { organization_id: t.org.id, name: "n", destinations } }))
    }
    await newConfig(t, [dir("ok/sub"), { type: "https", url: "https://example.com/in" }, { type: "https", url: receiverUrl }])
  })

  it("exports_configs bounds the enabled configurations (create and enabling)", async () => {
    const t = await tenant()
    await setQuota(t.org.id, { exports_configs: 1 })
    await newConfig(t, [dir("a")])
    const r = await t.call("POST", "/v1/exports/configs", { body: { organization_id: t.org.id, name: "b", destinations: [dir("b")] } })
    expect403(r)
    expect(r.body.errors.exports_configs).toBeTruthy()
    const off = await newConfig(t, [dir("c")], { enabled: false })
    const on = await t.call("PATCH", `/v1/exports/configs/${off.id}`, { body: { enabled: true } })
    expect403(on)
    expect(on.body.errors.exports_configs).toBeTruthy()
  })

  it("exports_destinations bounds the destinations of a configuration (create and change)", async () => {
    const t = await tenant()
    await setQuota(t.org.id, { exports_destinations: 2 })
    const r = await t.call("POST", "/v1/exports/configs", {
      body: { organization_id: t.org.id, name: "n", destinations: [dir("a"), dir("b"), dir("c")] }
    })
    expect403(r)
    expect(r.body.errors.exports_destinations).toBeTruthy()
    const c = await newConfig(t, [dir("a"), dir("b")])
    const p = await t.call("PATCH", `/v1/exports/configs/${c.id}`, { body: { destinations: [dir("a"), dir("b"), dir("c")] } })
    expect403(p)
    expect(p.body.errors.exports_destinations).toBeTruthy()
  })
})

describe("exports: execute", () => {
  it("needs the premium feature batch_exports_manual_run", async () => {
    const t = await tenant({ consents_api: true })
    const c = await newConfig(t, [dir("gated")])
    const r = await t.call("POST", "/v1/exports/execute", {
      body: { organization_id: t.org.id, export_config_id: c.id, from: "2026-01-01T00:00:00Z", to: "2027-01-01T00:00:00Z" }
    })
    expect403(r)
    expect(r.body.message).toContain("batch_exports_manual_run")
    expect405(await t.call("GET", "/v1/exports/execute"))
  })

  it("writes the range's events and users as NDJSON to a directory and to a receiver, and records the run", async () => {
    const t = await tenant()
    const other = await tenant()
    expect((await event(t, "before", "2026-11-01T00:00:00.000Z")).status).toBe(201)
    const inRange: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const r = await event(t, `u${i}`, `2026-11-10T00:00:0${i}.000Z`)
      expect(r.status, r.text).toBe(201)
      inRange.push(r.body.id)
    }
    expect((await event(other, "theirs", "2026-11-10T00:00:00.000Z")).status).toBe(201)
    const sub = `t-${t.org.id}`
    const c = await newConfig(t, [dir(sub), { type: "https", url: receiverUrl }])
    received.length = 0
    answer = 200
    const r = await t.call("POST", "/v1/exports/execute", {
      body: { organization_id: t.org.id, export_config_id: c.id, from: "2026-11-05T00:00:00Z", to: "2026-11-15T00:00:00Z" }
    })
    expect(r.status, r.text).toBe(201)
    // Users are exported by updated_at: every user of the tenant was written at server time (START).
    expect(r.body).toMatchObject({ status: "succeeded", events_count: 3, users_count: 0, destinations_count: 2, error: null })
    const files = fs.readdirSync(path.join(root, sub))
    expect(files).toHaveLength(1)
    const lines = readNdjson(fs.readFileSync(path.join(root, sub, files[0]!), "utf8"))
    expect(lines.filter((l) => l.type === "event").map((l) => l.id)).toEqual(inRange)
    expect(lines.every((l) => l.organization_id === t.org.id)).toBe(true)
    expect(received).toHaveLength(1)
    expect(received[0]!.headers["content-type"]).toBe("application/x-ndjson")
    expect(received[0]!.headers["transfer-encoding"]).toBe("chunked")
    expect(readNdjson(received[0]!.body)).toEqual(lines)

    // Users of a range that covers their last change.
    const now = new Date(server.clock.millis)
    const u = await t.call("POST", "/v1/exports/execute", {
      body: {
        organization_id: t.org.id,
        export_config_id: c.id,
        from: new Date(now.getTime() - 1000).toISOString(),
        to: new Date(now.getTime() + 1000).toISOString()
      }
    })
    expect(u.status, u.text).toBe(201)
    expect(u.body).toMatchObject({ status: "succeeded", users_count: 4, events_count: 0 })
    const users = readNdjson(received[1]!.body)
    expect(users.map((l) => l.type)).toEqual(["user", "user", "user", "user"])
    expect(users.map((l) => l.organization_user_id).sort()).toEqual(["before", "u0", "u1", "u2"])

    const runs = await t.call("GET", "/v1/exports/runs")
    expect(runs.body.total).toBe(2)
    const first = await t.call("GET", "/v1/exports/runs?events_count=3")
    expect(first.body.data).toHaveLength(1)
    expect(first.body.data[0]).toMatchObject({ id: r.body.id, export_config_id: c.id, users_count: 0 })
  })

  it("two organizations using the same event and user ids each export their own, named by that id", async () => {
    const tenants = [await tenant(), await tenant()]
    const eventId = `order-${Math.random().toString(36).slice(2, 8)}`
    for (const [i, t] of tenants.entries()) {
      const r = await t.call("POST", "/v1/consents/events", {
        body: {
          id: eventId,
          organization_id: t.org.id,
          created_at: "2026-11-10T00:00:00.000Z",
          user: { id: "customer-7" },
          consents: { purposes: [{ id: "analytics", enabled: i === 0 }] }
        }
      })
      expect(r.status, r.text).toBe(201)
    }
    for (const [i, t] of tenants.entries()) {
      const sub = `same-${t.org.id}`
      const c = await newConfig(t, [dir(sub)])
      const r = await t.call("POST", "/v1/exports/execute", {
        body: { organization_id: t.org.id, export_config_id: c.id, from: "2026-11-05T00:00:00Z", to: "2026-11-15T00:00:00Z" }
      })
      expect(r.status, r.text).toBe(201)
      const [file] = fs.readdirSync(path.join(root, sub))
      const lines = readNdjson(fs.readFileSync(path.join(root, sub, file!), "utf8"))
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatchObject({
        type: "event",
        id: eventId,
        organization_id: t.org.id,
        user: { id: "customer-7" },
        consents: { purposes: [{ id: "analytics", enabled: i === 0 }] }
      })
    }
  })

  it("a user is written once per regulation it has a status for, each line as the API shows it", async () => {
    const t = await tenant()
    const gdpr = await event(t, "both", "2026-11-10T00:00:00.000Z")
    expect(gdpr.status, gdpr.text).toBe(201)
    const ccpa = await t.call("POST", "/v1/consents/events", {
      body: { organization_id: t.org.id, regulation: "ccpa", user: { organization_user_id: "both" }, consents: { purposes: [{ id: "sale", enabled: false }] } }
    })
    expect(ccpa.status, ccpa.text).toBe(201)
    const sub = `regs-${t.org.id}`
    const c = await newConfig(t, [dir(sub)])
    const now = new Date(server.clock.millis)
    const r = await t.call("POST", "/v1/exports/execute", {
      body: {
        organization_id: t.org.id,
        export_config_id: c.id,
        from: new Date(now.getTime() - 1000).toISOString(),
        to: new Date(now.getTime() + 1000).toISOString()
      }
    })
    expect(r.status, r.text).toBe(201)
    expect(r.body.users_count).toBe(1)
    const [file] = fs.readdirSync(path.join(root, sub))
    const users = readNdjson(fs.readFileSync(path.join(root, sub, file!), "utf8")).filter((l) => l.type === "user")
    const id = gdpr.body.user.id
    const asApi = async (regulation: string) =>
      ({ type: "user", ...(await t.call("GET", `/v1/consents/users/${id}?regulation=${regulation}`)).body })
    expect(users.sort((a, b) => a.regulation.localeCompare(b.regulation))).toEqual([await asApi("ccpa"), await asApi("gdpr")])
  })

  it("pages through more rows than one page, in order", async () => {
    const t = await tenant()
    const n = 530
    for (let i = 0; i < n; i += 30) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(30, n - i) }, (_, k) =>
          event(t, `p${i + k}`, new Date(Date.parse("2026-10-01T00:00:00Z") + (i + k) * 1000).toISOString()))
      )
      for (const r of batch) expect(r.status, r.text).toBe(201)
    }
    const c = await newConfig(t, [dir(`many-${t.org.id}`)])
    const r = await t.call("POST", "/v1/exports/execute", {
      body: { organization_id: t.org.id, export_config_id: c.id, from: "2026-10-01T00:00:00Z", to: "2026-10-02T00:00:00Z" }
    })
    expect(r.status, r.text).toBe(201)
    expect(r.body.events_count).toBe(n)
    const [file] = fs.readdirSync(path.join(root, `many-${t.org.id}`))
    const lines = readNdjson(fs.readFileSync(path.join(root, `many-${t.org.id}`, file!), "utf8"))
    expect(lines).toHaveLength(n)
    expect(new Set(lines.map((l) => l.id)).size).toBe(n)
    const times = lines.map((l) => l.created_at as string)
    expect([...times].sort()).toEqual(times)
  }, 60_000)

  it("a failing destination makes a failed run, recorded with its error", async () => {
    const t = await tenant()
    expect((await event(t, "u", "2026-11-10T00:00:00.000Z")).status).toBe(201)
    const c = await newConfig(t, [{ type: "https", url: receiverUrl }])
    answer = 500
    const r = await t.call("POST", "/v1/exports/execute", {
      body: { organization_id: t.org.id, export_config_id: c.id, from: "2026-11-01T00:00:00Z", to: "2026-12-01T00:00:00Z" }
    })
    answer = 200
    expect(r.status, r.text).toBe(201)
    expect(r.body.status).toBe("failed")
    expect(r.body.error).toContain("500")
    const got = await t.call("GET", `/v1/exports/runs/${r.body.id}`)
    expect(got.body.status).toBe("failed")
  })

  it("refuses a disabled configuration (409) and a bad range (400)", async () => {
    const t = await tenant()
    const c = await newConfig(t, [dir("x")], { enabled: false })
    expect409(await t.call("POST", "/v1/exports/execute", {
      body: { organization_id: t.org.id, export_config_id: c.id, from: "2026-11-01T00:00:00Z", to: "2026-12-01T00:00:00Z" }
    }))
    expect400(await t.call("POST", "/v1/exports/execute", {
      body: { organization_id: t.org.id, export_config_id: c.id, from: "2026-12-01T00:00:00Z", to: "2026-11-01T00:00:00Z" }
    }))
  })
})

describe("exports: tenant isolation", () => {
  it("404 on another organization's configurations and runs, 403 to write into or filter on it", async () => {
    const a = await tenant()
    const b = await tenant()
    const c = await newConfig(a, [dir(`iso-${a.org.id}`)])
    const run = await a.call("POST", "/v1/exports/execute", {
      body: { organization_id: a.org.id, export_config_id: c.id, from: "2026-11-01T00:00:00Z", to: "2026-12-01T00:00:00Z" }
    })
    expect(run.status, run.text).toBe(201)
    expect404(await b.call("GET", `/v1/exports/configs/${c.id}`))
    expect404(await b.call("PATCH", `/v1/exports/configs/${c.id}`, { body: { name: "mine" } }))
    expect404(await b.call("DELETE", `/v1/exports/configs/${c.id}`))
    expect404(await b.call("GET", `/v1/exports/runs/${run.body.id}`))
    expect403(await b.call("GET", `/v1/exports/configs?organization_id=${a.org.id}`))
    expect403(await b.call("GET", `/v1/exports/runs?organization_id=${a.org.id}`))
    expect((await b.call("GET", "/v1/exports/runs")).body.total).toBe(0)
    expect403(await b.call("POST", "/v1/exports/configs", { body: { organization_id: a.org.id, name: "x", destinations: [dir("x")] } }))
    expect403(await b.call("POST", "/v1/exports/execute", {
      body: { organization_id: a.org.id, export_config_id: c.id, from: "2026-11-01T00:00:00Z", to: "2026-12-01T00:00:00Z" }
    }))
    // Its own organization, another's configuration: as if it did not exist.
    expect404(await b.call("POST", "/v1/exports/execute", {
      body: { organization_id: b.org.id, export_config_id: c.id, from: "2026-11-01T00:00:00Z", to: "2026-12-01T00:00:00Z" }
    }))
  })
})

describe("exports: one run at a time per organization", () => {
  /** A receiver that takes the body, then answers only when the test lets it: the run stays open meanwhile. */
  let held: http.Server
  let heldUrl: string
  const waiting: Array<{ readonly body: Promise<string>; readonly answer: (status: number) => void }> = []
  let arrived: () => void = () => {}
  beforeAll(async () => {
    held = http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      const body = new Promise<string>((resolve) => req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8"))))
      req.on("data", (c: Buffer) => chunks.push(c))
      waiting.push({ body, answer: (status) => res.writeHead(status).end("ok") })
      arrived()
    })
    await new Promise<void>((resolve) => held.listen(0, "127.0.0.1", resolve))
    heldUrl = `http://127.0.0.1:${(held.address() as AddressInfo).port}/held`
  })
  afterAll(async () => {
    held?.closeAllConnections()
    await new Promise<void>((resolve) => held ? held.close(() => resolve()) : resolve())
  })

  /** Starts a run to the held receiver and waits until the receiver has its request. */
  const startHeld = async (t: T, configId: string) => {
    const request = new Promise<void>((resolve) => (arrived = resolve))
    const run = t.call("POST", "/v1/exports/execute", {
      body: { organization_id: t.org.id, export_config_id: configId, from: "2026-11-01T00:00:00Z", to: "2026-12-01T00:00:00Z" }
    })
    await request
    return { run, request: waiting.shift()! }
  }

  it("a second run of the same organization is a 429 with Retry-After; another organization's run is not held up", async () => {
    const a = await tenant()
    const b = await tenant()
    expect((await event(a, "u", "2026-11-10T00:00:00.000Z")).status).toBe(201)
    const first = await newConfig(a, [{ type: "https", url: heldUrl }])
    const second = await newConfig(a, [dir(`second-${a.org.id}`)])
    const theirs = await newConfig(b, [dir(`theirs-${b.org.id}`)])
    const { run, request } = await startHeld(a, first.id)

    for (const configId of [first.id, second.id]) {
      const busy = await a.call("POST", "/v1/exports/execute", {
        body: { organization_id: a.org.id, export_config_id: configId, from: "2026-11-01T00:00:00Z", to: "2026-12-01T00:00:00Z" }
      })
      expect(busy.status, busy.text).toBe(429)
      expect(busy.body).toMatchObject({ name: "TooManyRequests", code: 429, className: "too-many-requests" })
      const retryAfter = Number(busy.headers.get("retry-after"))
      expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`).toBe(true)
    }
    // Refused runs are not recorded: only the one that ran will be.
    expect((await a.call("GET", "/v1/exports/runs")).body.total).toBe(0)

    const other = await b.call("POST", "/v1/exports/execute", {
      body: { organization_id: b.org.id, export_config_id: theirs.id, from: "2026-11-01T00:00:00Z", to: "2026-12-01T00:00:00Z" }
    })
    expect(other.status, other.text).toBe(201)
    expect(other.body.status).toBe("succeeded")

    expect(readNdjson(await request.body).filter((l) => l.type === "event")).toHaveLength(1)
    request.answer(200)
    const done = await run
    expect(done.status, done.text).toBe(201)
    expect(done.body).toMatchObject({ status: "succeeded", events_count: 1 })

    // Finished: the organization may run again.
    const again = await a.call("POST", "/v1/exports/execute", {
      body: { organization_id: a.org.id, export_config_id: second.id, from: "2026-11-01T00:00:00Z", to: "2026-12-01T00:00:00Z" }
    })
    expect(again.status, again.text).toBe(201)
    expect(again.body).toMatchObject({ status: "succeeded", events_count: 1 })
  })

  it("a failed run frees the organization too", async () => {
    const t = await tenant()
    const c = await newConfig(t, [{ type: "https", url: heldUrl }])
    const { run, request } = await startHeld(t, c.id)
    request.answer(500)
    expect((await run).body.status).toBe("failed")
    const next = await startHeld(t, c.id)
    next.request.answer(200)
    expect((await next.run).body.status).toBe("succeeded")
  })

  it("a run whose lease lapsed (its server stopped mid-run) no longer holds the organization", async () => {
    const t = await tenant()
    const c = await newConfig(t, [{ type: "https", url: heldUrl }])
    const stuck = await startHeld(t, c.id)
    const busy = await t.call("POST", "/v1/exports/execute", {
      body: { organization_id: t.org.id, export_config_id: c.id, from: "2026-11-01T00:00:00Z", to: "2026-12-01T00:00:00Z" }
    })
    expect(busy.status, busy.text).toBe(429)
    server.clock.advance((Number(busy.headers.get("retry-after")) + 1) * 1000)
    const next = await startHeld(t, c.id)
    next.request.answer(200)
    expect((await next.run).body.status).toBe("succeeded")
    stuck.request.answer(200)
    expect((await stuck.run).status).toBe(201)
  })
})
