import { postgres } from "@cmp/store-postgres"
import { sqlite } from "@cmp/store-sqlite"
import { createTestDatabase } from "@cmp/test-support/database"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, describe, expect, it, vi } from "vitest"
import {
  BadRequest,
  type ConsentPlatformApi,
  createPlatform,
  type StoreLayer,
  type SubscriberMessage
} from "../src/index.js"

/**
 * In-process subscribers: durable registrations whose messages go through the webhook outbox
 * and are delivered by calling a handler of the process. On SQLite, and on PostgreSQL where a
 * server is named (`DATABASE_URL`, as CI does) or `CMP_TEST_STORE=postgres` asks for it.
 */

type StoreKind = "sqlite" | "postgres"
const stores: ReadonlyArray<StoreKind> = process.env.DATABASE_URL || process.env.CMP_TEST_STORE === "postgres"
  ? ["sqlite", "postgres"]
  : ["sqlite"]

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** A fresh database that several platforms (processes) can open. */
const database = async (kind: StoreKind): Promise<StoreLayer> => {
  if (kind === "postgres") {
    const db = await createTestDatabase({ clients: 3 })
    cleanups.push(db.close)
    return postgres({ url: db.url, ...(db.maxConnections ? { maxConnections: db.maxConnections } : {}) })
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-subscribers-"))
  cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }))
  return sqlite({ filename: path.join(dir, "consent.db") })
}

const open = async (store: StoreLayer, dispatcher: boolean = true) => {
  const cmp = await createPlatform({
    store,
    hashCost: 1024,
    logLevel: "None",
    // The webhook of the first test points at a closed local port: refused at once.
    webhookAllowHosts: ["127.0.0.1"],
    dispatcher: dispatcher ? { retrySchedule: [0.05, 0.05], pollIntervalMs: 20 } : false
  })
  cleanups.push(() => cmp.dispose())
  return cmp
}

const organization = async (cmp: ConsentPlatformApi, name: string) => {
  const as = cmp.asOperator()
  const org = await cmp.organizations.create({ name }, { as })
  const flags = await cmp.premiumFeatures.find({ organization_id: org.id }, { as })
  await cmp.premiumFeatures.patch(flags.data[0]!.id, { consents_api: true, webhooks: true }, { as })
  return org
}

const consent = (cmp: ConsentPlatformApi, organizationId: string, user: string, regulation = "gdpr") =>
  cmp.consents.events.create({
    organization_id: organizationId,
    user: { organization_user_id: user },
    consents: { purposes: [{ id: "analytics", enabled: true }] },
    regulation
  }, { as: cmp.asOrganization(organizationId) })

/** Every message of one target in the delivery log, as the operator sees it. */
const log = async (cmp: ConsentPlatformApi, webhookId: string) =>
  (await cmp.webhooks.deliveries.find({ webhook_id: webhookId, $limit: 100 }, { as: cmp.asOperator() })).data

/** Waits (polling) until every message of the target has left `pending`/`delivering`. */
const settled = (cmp: ConsentPlatformApi, webhookId: string, count: number) =>
  vi.waitFor(async () => {
    const rows = await log(cmp, webhookId)
    expect(rows).toHaveLength(count)
    for (const r of rows) expect(["delivered", "failed"]).toContain(r.status)
    return rows
  }, { timeout: 15000, interval: 20 })

describe.each(stores)("subscribe on %s", (kind) => {
  it("delivers each event's messages to the handler with a webhook's filters and payload", async () => {
    const cmp = await open(await database(kind))
    const org = await organization(cmp, "Subscribed")
    const every: Array<SubscriberMessage> = []
    const created: Array<SubscriberMessage> = []
    await cmp.subscribe("every", {}, (m) => void every.push(m))
    await cmp.subscribe("created", { event_types: ["event.created"], regulations: ["gdpr", "ccpa"], flatten: true }, (m) =>
      void created.push(m))
    // A webhook with the same filters as `created`: its messages carry the same payloads.
    const hook = await cmp.runtime.runPromise(cmp.effect.webhooks.create({
      organization_id: org.id,
      url: "http://127.0.0.1:9/hook",
      event_types: ["event.created"],
      regulations: ["gdpr", "ccpa"],
      flatten: true
    }, { as: cmp.asOperator() }))

    const gdpr = await consent(cmp, org.id, "u-1")
    const ccpa = await consent(cmp, org.id, "u-2", "ccpa")

    const everyLog = await settled(cmp, "subscriber:every", 2)
    const createdLog = await settled(cmp, "subscriber:created", 2)
    for (const r of [...everyLog, ...createdLog]) {
      expect(r).toMatchObject({ status: "delivered", organization_id: org.id, attempts_count: 1, last_status_code: 204 })
    }

    // Default filters: every event type, GDPR only.
    expect(every.map((m) => m.regulation)).toEqual(every.map(() => "gdpr"))
    expect(new Set(every.map((m) => m.event_type))).toEqual(new Set(["event.created", "user.created"]))
    expect(every.find((m) => m.event_type === "event.created")!.payload).toMatchObject({
      type: "event.created",
      regulation: "gdpr",
      parameters: { entity: { id: gdpr.id } }
    })
    expect(every.map((m) => m.id).sort()).toEqual(everyLog.map((r) => r.id).sort())

    // Its filters: event.created only, both regulations; flattened like the webhook's.
    expect(created.map((m) => m.event_type)).toEqual(["event.created", "event.created"])
    expect(created.map((m) => m.regulation).sort()).toEqual(["ccpa", "gdpr"])
    const hookLog = await log(cmp, hook.id)
    expect(hookLog).toHaveLength(2)
    for (const m of created) {
      expect(m).toMatchObject({ subscriber: "created", organization_id: org.id, attempt: 1 })
      expect(m.payload).toEqual(hookLog.find((r) => r.regulation === m.regulation)!.payload)
      expect(m.payload).not.toHaveProperty("parameters")
    }
    expect(created.some((m) => JSON.stringify(m.payload).includes(ccpa.id))).toBe(true)
  })

  it("retries a handler that throws, logging each attempt, and fails it after the schedule", async () => {
    const cmp = await open(await database(kind))
    const org = await organization(cmp, "Flaky")
    let calls = 0
    await cmp.subscribe("flaky", { event_types: ["event.created"] }, (m) => {
      calls++
      if (m.attempt === 1) throw new Error("not ready yet")
    })
    await cmp.subscribe("broken", { event_types: ["event.created"] }, async () => {
      throw new Error("always broken")
    })
    await consent(cmp, org.id, "u-1")

    const [flaky] = await settled(cmp, "subscriber:flaky", 1)
    expect(flaky).toMatchObject({ status: "delivered", attempts_count: 2, last_status_code: 204 })
    expect(calls).toBe(2)
    const flakyAttempts = (await cmp.webhooks.deliveries.get(flaky!.id, { as: cmp.asOperator() })).attempts ?? []
    expect(flakyAttempts.map((a) => [a.status_code, a.error])).toEqual([[null, "not ready yet"], [204, null]])

    const [broken] = await settled(cmp, "subscriber:broken", 1)
    expect(broken).toMatchObject({ status: "failed", attempts_count: 3, last_status_code: null })
    const brokenAttempts = (await cmp.webhooks.deliveries.get(broken!.id, { as: cmp.asOperator() })).attempts ?? []
    expect(brokenAttempts.map((a) => a.error)).toEqual(["always broken", "always broken", "always broken"])
  })

  it("logs a handler's failure without what it threw, which may name a person; the delivery log keeps it for the organization", async () => {
    const lines: Array<string> = []
    // The platform writes the lines of one turn of the event loop in one call.
    const spy = vi.spyOn(console, "log").mockImplementation((...args: Array<unknown>) => void lines.push(...args.map(String).join(" ").split("\n")))
    cleanups.push(async () => spy.mockRestore())
    const cmp = await createPlatform({
      store: await database(kind),
      hashCost: 1024,
      logLevel: "Info",
      dispatcher: { retrySchedule: [0.05], pollIntervalMs: 20 }
    })
    cleanups.push(() => cmp.dispose())
    const org = await organization(cmp, "Telling")
    await cmp.subscribe("telling", { event_types: ["event.created"] }, () => {
      throw new Error("no CRM contact for ada.lovelace@example.com")
    })
    await consent(cmp, org.id, "u-1")
    const [failed] = await settled(cmp, "subscriber:telling", 1)
    expect(failed).toMatchObject({ status: "failed", attempts_count: 2 })
    const attempts = (await cmp.webhooks.deliveries.get(failed!.id, { as: cmp.asOperator() })).attempts ?? []
    expect(attempts.map((a) => a.error)).toEqual(["no CRM contact for ada.lovelace@example.com", "no CRM contact for ada.lovelace@example.com"])
    // An attempt's line is logged once its completion committed, and written at the end of that
    // turn of the event loop: it may come a moment after the delivery log shows the attempt.
    await vi.waitFor(() => expect(lines.filter((l) => l.includes("webhook attempt failed"))).toHaveLength(2), { timeout: 5000, interval: 20 })
    // Each line names the message it is about, and nothing of what the handler threw.
    for (const line of lines.filter((l) => l.includes("webhook attempt failed"))) {
      expect(JSON.parse(line).annotations).toMatchObject({ delivery_id: failed!.id, error: "handler failed" })
    }
    expect(lines.join("\n")).not.toContain("ada.lovelace")
  })

  it("writes the messages of a registered subscriber that no process handles, and handles them once one does", async () => {
    const store = await database(kind)
    const first = await open(store)
    const org = await organization(first, "Durable")
    const stop = await first.subscribe("durable", { event_types: ["event.created"] }, () => {
      throw new Error("never called")
    })
    stop()

    // Another process without a dispatcher records consents meanwhile; it cannot subscribe.
    const writer = await open(store, false)
    await expect(writer.subscribe("durable", {}, () => {})).rejects.toThrow(/dispatcher: false/)
    const events = [await consent(writer, org.id, "u-1"), await consent(writer, org.id, "u-2")]
    const waiting = await log(writer, "subscriber:durable")
    expect(waiting.map((r) => r.status)).toEqual(["pending", "pending"])

    const later = await open(store)
    const got: Array<SubscriberMessage> = []
    await later.subscribe("durable", { event_types: ["event.created"] }, (m) => void got.push(m))
    await settled(later, "subscriber:durable", 2)
    expect(got.map((m) => (m.payload.parameters as { entity: { id: string } }).entity.id).sort()).toEqual(events.map((e) => e.id).sort())

    // Removed (through the process that writes: another one sees it within a second): no new messages.
    expect(await writer.removeSubscriber("durable")).toBe(true)
    await consent(writer, org.id, "u-3")
    expect(await log(later, "subscriber:durable")).toHaveLength(2)
    expect(await later.removeSubscriber("durable")).toBe(false)
  })

  it("handles each message once in total when two processes subscribe the same name", async () => {
    const store = await database(kind)
    const a = await open(store)
    const b = await open(store)
    const org = await organization(a, "Shared")
    const handled: Array<string> = []
    await a.subscribe("shared", { event_types: ["event.created"] }, (m) => void handled.push(`a:${m.id}`))
    await b.subscribe("shared", { event_types: ["event.created"] }, (m) => void handled.push(`b:${m.id}`))
    for (let i = 0; i < 12; i++) await consent(i % 2 === 0 ? a : b, org.id, `u-${i}`)

    const rows = await settled(a, "subscriber:shared", 12)
    expect(rows.every((r) => r.status === "delivered" && r.attempts_count === 1)).toBe(true)
    expect(handled).toHaveLength(12)
    expect(handled.map((h) => h.slice(2)).sort()).toEqual(rows.map((r) => r.id).sort())
  })

  it("refuses an invalid name or filter, and a second handler of the same name in one process", async () => {
    const cmp = await open(await database(kind))
    await expect(cmp.subscribe("has space", {}, () => {})).rejects.toBeInstanceOf(BadRequest)
    // @ts-expect-error an unknown event type
    await expect(cmp.subscribe("typo", { event_types: ["event.created", "nope"] }, () => {})).rejects.toBeInstanceOf(BadRequest)
    await cmp.subscribe("once", {}, () => {})
    await expect(cmp.subscribe("once", {}, () => {})).rejects.toThrow(/already handles/)
    cmp.unsubscribe("once")
    await cmp.subscribe("once", {}, () => {})
  })
})
