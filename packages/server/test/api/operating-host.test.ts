import { type ConsentPlatformApi, createPlatform, Operating, Platform } from "@cmp/platform"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it, vi } from "vitest"
import { listenProbes } from "../../src/ProbeServer.js"
import { childEnv, killLeftovers, startServer, startWorker } from "../built.js"
import { call, expect401, expect404, expectError, testStore } from "./helpers.js"
import { scrape, valueOf } from "./scrape.js"
import { getMetricsFromIterator } from "prom2javascript"

/**
 * The same checks for a host that calls the platform in-process (`health()`, `readiness()`,
 * `metrics()` and their Effects), the delivery metrics of its dispatcher, and the probe server of
 * a worker process (`pnpm worker`), which serves no API.
 */

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const open = async (dispatcher: boolean) => {
  const store = await testStore()
  cleanups.push(store.close)
  const cmp = await createPlatform({
    store: store.layer,
    hashCost: 1024,
    logLevel: "None",
    dispatcher: dispatcher ? { retrySchedule: [], pollIntervalMs: 20 } : false
  })
  cleanups.push(() => cmp.dispose())
  return cmp
}

const parse = (text: string) => getMetricsFromIterator(text.split("\n")[Symbol.iterator]())

const organization = async (cmp: ConsentPlatformApi) => {
  const as = cmp.asOperator()
  const org = await cmp.organizations.create({ name: "Operated" }, { as })
  const flags = await cmp.premiumFeatures.find({ organization_id: org.id }, { as })
  await cmp.premiumFeatures.patch(flags.data[0]!.id, { consents_api: true, webhooks: true }, { as })
  return org
}

describe("the typed host API", () => {
  it("answers health, readiness and the metrics text, as Promises and as Effects", async () => {
    const cmp = await open(false)
    expect(await cmp.health()).toEqual({ status: "ok" })
    expect(await cmp.readiness()).toEqual({ ready: true })
    expect(await cmp.runtime.runPromise(Operating.readiness)).toEqual({ ready: true })
    expect(await Effect.runPromise(Operating.health)).toEqual({ status: "ok" })
    const text = await cmp.metrics()
    expect(await cmp.runtime.runPromise(Operating.metrics)).toContain("# TYPE cmp_webhook_outbox_pending gauge")
    const parsed = await parse(text)
    expect(parsed.cmp_webhook_outbox_pending?.type).toBe("gauge")
  })

  it("counts delivery attempts by outcome, and the messages given up", async () => {
    const cmp = await open(true)
    const org = await organization(cmp)
    let calls = 0
    await cmp.subscribe("fine", { event_types: ["event.created"] }, () => void calls++)
    await cmp.subscribe("broken", { event_types: ["event.created"] }, () => {
      throw new Error("refused")
    })
    await cmp.consents.events.create({
      organization_id: org.id,
      user: { organization_user_id: "u-1" },
      consents: { purposes: [{ id: "analytics", enabled: true }] }
    }, { as: cmp.asOrganization(org.id) })
    await vi.waitFor(async () => {
      const m = await parse(await cmp.metrics())
      // No retries are scheduled: the broken subscriber's one attempt gives its message up.
      expect(valueOf(m, "cmp_webhook_delivery_attempts_total", { outcome: "delivered" })).toBe(1)
      expect(valueOf(m, "cmp_webhook_delivery_attempts_total", { outcome: "failed" })).toBe(1)
      expect(valueOf(m, "cmp_webhook_deliveries_failed_total")).toBe(1)
      expect(valueOf(m, "cmp_webhook_delivery_duration_seconds", { outcome: "delivered" })).toBe(1)
      expect(valueOf(m, "cmp_webhook_outbox_pending")).toBe(0)
    }, { timeout: 15_000, interval: 50 })
    expect(calls).toBe(1)
  })

  it("keeps two platforms' metrics apart in one process", async () => {
    const a = await open(false)
    const b = await open(false)
    const org = await organization(a)
    await a.consents.events.create({
      organization_id: org.id,
      user: { organization_user_id: "u-1" },
      consents: { purposes: [{ id: "analytics", enabled: true }] }
    }, { as: a.asOrganization(org.id) })
    const orgB = await organization(b)
    await b.webhooks.create({ organization_id: orgB.id, url: "https://receiver.example/hook" }, { as: b.asOperator() })
    await b.consents.events.create({
      organization_id: orgB.id,
      user: { organization_user_id: "u-1" },
      consents: { purposes: [{ id: "analytics", enabled: true }] }
    }, { as: b.asOrganization(orgB.id) })
    // b's outbox holds its webhook's messages; a's, with no webhook, none.
    expect(valueOf(await parse(await a.metrics()), "cmp_webhook_outbox_pending")).toBe(0)
    expect(valueOf(await parse(await b.metrics()), "cmp_webhook_outbox_pending")).toBeGreaterThan(0)
  })
})

describe("a worker's probe server", () => {
  const TOKEN = "worker-metrics-token-0123456789"

  it("serves /healthz, /readyz and /metrics on its own port, and nothing else", async () => {
    const store = await testStore()
    cleanups.push(store.close)
    const runtime = ManagedRuntime.make(Platform.layer({ store: store.layer, hashCost: 1024, logLevel: "None", dispatcher: { pollIntervalMs: 20 } }))
    cleanups.push(() => runtime.dispose())
    await runtime.runtime()
    const served = await listenProbes(runtime, { port: 0, host: "127.0.0.1", metricsToken: TOKEN })
    cleanups.push(served.close)

    expect((await call(served.url, "GET", "/healthz")).body).toEqual({ status: "ok" })
    expect((await call(served.url, "GET", "/readyz")).body).toEqual({ status: "ready" })
    expect((await call(served.url, "HEAD", "/readyz")).status).toBe(200)
    expectError(await call(served.url, "POST", "/readyz"), 405, "MethodNotAllowed", "method-not-allowed")
    expect401(await call(served.url, "GET", "/metrics"))
    const m = await scrape(served.url, TOKEN)
    expect(valueOf(m, "cmp_webhook_outbox_pending")).toBe(0)
    expect404(await call(served.url, "GET", "/v1/keys"))
    expect404(await call(served.url, "GET", "/openapi.json"))
  })

  it("says not ready once the platform stops", async () => {
    const store = await testStore()
    cleanups.push(store.close)
    const runtime = ManagedRuntime.make(Platform.layer({ store: store.layer, hashCost: 1024, logLevel: "None", dispatcher: { pollIntervalMs: 20 } }))
    await runtime.runtime()
    const served = await listenProbes(runtime, { port: 0, host: "127.0.0.1", metricsToken: undefined })
    cleanups.push(served.close)
    expect((await call(served.url, "GET", "/readyz")).status).toBe(200)
    expect404(await call(served.url, "GET", "/metrics"))
    await runtime.dispose()
    expectError(await call(served.url, "GET", "/readyz"), 503, "Unavailable", "unavailable")
    // Still alive: the process answers.
    expect((await call(served.url, "GET", "/healthz")).status).toBe(200)
  })
})

describe("readiness of a process that delivers", () => {
  it("is 503 once it starts stopping, while a call is still in flight", async () => {
    const cmp = await open(true)
    const served = await listenProbes(cmp.runtime, { port: 0, host: "127.0.0.1", metricsToken: undefined })
    cleanups.push(served.close)
    const org = await organization(cmp)
    let release: () => void = () => {}
    const gate = new Promise<void>((resolve) => (release = resolve))
    let called = false
    await cmp.subscribe("slow", { event_types: ["event.created"] }, async () => {
      called = true
      await gate
    })
    await cmp.consents.events.create({
      organization_id: org.id,
      user: { organization_user_id: "u-1" },
      consents: { purposes: [{ id: "analytics", enabled: true }] }
    }, { as: cmp.asOrganization(org.id) })
    await vi.waitFor(() => expect(called).toBe(true), { timeout: 15_000, interval: 20 })
    expect((await call(served.url, "GET", "/readyz")).status).toBe(200)

    // Stopping drains: the dispatcher claims nothing more and waits for its call in flight.
    const stopped = cmp.dispose()
    try {
      const r = await vi.waitFor(async () => {
        const answer = await call(served.url, "GET", "/readyz")
        expect(answer.status).toBe(503)
        return answer
      }, { timeout: 5_000, interval: 20 })
      expectError(r, 503, "Unavailable", "unavailable")
      expect(r.body.message).toMatch(/^Not ready: /)
      expect((await call(served.url, "GET", "/healthz")).status).toBe(200)
    } finally {
      release()
      await stopped
    }
  })
})

describe("pnpm worker", () => {
  afterEach(() => killLeftovers())

  it("serves the probes and the metrics on PORT", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-worker-probes-"))
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }))
    const TOKEN = "worker-metrics-token-0123456789"
    const worker = await startWorker(childEnv({ SQLITE_PATH: path.join(dir, "consent.db"), PORT: "0", METRICS_TOKEN: TOKEN, LOG_LEVEL: "Warning" }))
    const url = /"probes":"([^"]+)"/.exec(worker.output())?.[1]
    expect(url, worker.output()).toBeDefined()
    expect((await call(url!, "GET", "/healthz")).status).toBe(200)
    expect((await call(url!, "GET", "/readyz")).body).toEqual({ status: "ready" })
    expect(valueOf(await scrape(url!, TOKEN), "cmp_webhook_outbox_pending")).toBe(0)
    worker.child.kill("SIGTERM")
    expect(await worker.exited).toBe(0)
  }, 60_000)

  it("serves nothing without PORT, so several workers share a machine", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-worker-probes-"))
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }))
    const env = childEnv({ SQLITE_PATH: path.join(dir, "consent.db"), LOG_LEVEL: "Warning" })
    delete env.PORT
    const worker = await startWorker(env)
    expect(worker.output()).not.toContain("probes")
  }, 60_000)
})

describe("pnpm start", () => {
  afterEach(() => killLeftovers())

  it("reads METRICS_TOKEN: /metrics answers with it, and is a 404 without it", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-start-probes-"))
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }))
    const TOKEN = "server-metrics-token-0123456789"
    const env = { SQLITE_PATH: path.join(dir, "consent.db"), ALLOW_HTTP: "true", LOG_LEVEL: "Warning" }
    const server = await startServer(childEnv({ ...env, METRICS_TOKEN: TOKEN }))
    expect((await call(server.url, "GET", "/readyz")).body).toEqual({ status: "ready" })
    expect401(await call(server.url, "GET", "/metrics"))
    expect(valueOf(await scrape(server.url, TOKEN), "cmp_webhook_outbox_pending")).toBe(0)
    server.child.kill("SIGTERM")
    await server.exited

    const without = await startServer(childEnv(env))
    expect404(await call(without.url, "GET", "/metrics", { token: TOKEN }))
  }, 60_000)
})
