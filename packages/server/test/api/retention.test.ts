import {
  AttemptsTable,
  DeliveriesTable,
  type DeliveryRecord,
  eq,
  MailOutboxTable,
  Retention,
  saveSubscriber,
  Storage
} from "@cmp/core"
import { dataUri, samplePng } from "@cmp/test-support/proof-samples"
import * as Effect from "effect/Effect"
import { afterAll, describe, expect, it } from "vitest"
import { expect400 } from "./helpers.js"
import {
  as,
  createEvent,
  createHook,
  deliveriesOf,
  DISPATCHER,
  eventually,
  operatorOf,
  purposes,
  receiver,
  type Receiver,
  start,
  storeKind,
  type Tenant,
  type TestServer,
  unique
} from "../helpers.js"
import { client } from "@cmp/test-support/http"

/**
 * Retention (operating.md "Retention"): delivered webhook messages (with their attempts) and
 * finished invitation mails are purged `RETENTION_DELIVERED_DAYS` after they finished, failed,
 * pending and recent ones stay; an organization's `consent_retention_days` purges the consent
 * events of its inactive users, the consent log still verifying. The purges run on their
 * schedule in the process that delivers; the server's clock is moved by hand.
 */

const DAY = 24 * 3600_000
const SECONDS_A_DAY = 24 * 3600

const receivers: Array<Receiver> = []
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()))
})

/** The purges at a quick pace: each round a few ms of real time apart, the first at once. */
const QUICK = { everyMs: 30, firstAfterMs: 0, pauseMs: 1 }

/** A tenant's caller signed in again (a session does not outlive the days the clock moves). */
const again = async (s: TestServer, t: Tenant) => as(s.url, await client(s.url).login(t.key.id, t.secret))

const run = <A>(s: TestServer, effect: Effect.Effect<A, unknown, any>) => s.api.runtime.runPromise(effect as Effect.Effect<A>)

const rowsOf = (s: TestServer, table: typeof DeliveriesTable | typeof AttemptsTable | typeof MailOutboxTable, where: Parameters<typeof eq>) =>
  run(s, Effect.flatMap(Storage, (storage) =>
    Effect.map(
      Effect.orDie(storage.repository(table as typeof DeliveriesTable).find({ count: false, where: [eq(...where)], sort: [], limit: 100_000, skip: 0 })),
      (page) => page.data as ReadonlyArray<any>
    )))

describe(`retention of delivered messages (${storeKind})`, () => {
  it("delivered messages older than 30 days (by when they were delivered) go with their attempts; failed, pending and recent ones stay; the stats follow", async () => {
    // One retry, twenty days after the first attempt.
    const s = await start({ dispatcher: { ...DISPATCHER, retrySchedule: [20 * SECONDS_A_DAY] }, retention: QUICK })
    try {
      const op = await operatorOf(s.url)
      const t = await op.tenant()
      const good = await receiver(204)
      const bad = await receiver(500)
      // Fails first, takes the retry.
      const flaky = await receiver(204)
      flaky.script.push(500, 500)
      receivers.push(good, bad, flaky)
      const subscriber = unique("unhandled")
      // No process has this subscriber's handler: its messages stay pending.
      await run(s, saveSubscriber(subscriber, {}))
      const [okHook, badHook, flakyHook] = [await createHook(t, good.url), await createHook(t, bad.url), await createHook(t, flaky.url)]
      await createEvent(t, unique("user"), purposes(["analytics", true]))
      await good.waitFor(2)
      await bad.waitFor(2)
      await flaky.waitFor(2)
      const first = await eventually(async () => {
        const list = await deliveriesOf(t, okHook.id)
        return list.length === 2 && list.every((d) => d.status === "delivered") ? list : undefined
      }, "the first messages delivered")
      const attemptsOfFirst = await rowsOf(s, AttemptsTable, ["delivery_id", first[0].id])
      expect(attemptsOfFirst).toHaveLength(1)

      // Twenty days on: the retry fails for good at one webhook, succeeds at the other.
      s.clock.advance(20 * DAY + 60_000)
      await bad.waitFor(4)
      await flaky.waitFor(4)
      const c = await again(s, t)
      const tc = { ...t, call: c }
      await eventually(async () => (await deliveriesOf(tc, badHook.id)).every((d) => d.status === "failed"), "failed messages")
      await eventually(async () => (await deliveriesOf(tc, flakyHook.id)).every((d) => d.status === "delivered"), "the retried messages delivered")

      // Thirty-one days after the first delivery (eleven after the retried ones).
      s.clock.advance(11 * DAY)
      const c2 = await again(s, t)
      const t2 = { ...t, call: c2 }
      await eventually(async () => (await deliveriesOf(t2, okHook.id)).length === 0, "the old delivered messages purged")
      expect(await rowsOf(s, AttemptsTable, ["delivery_id", first[0].id])).toEqual([])
      expect(await rowsOf(s, AttemptsTable, ["delivery_id", first[1].id])).toEqual([])
      // Created 31 days ago, delivered 11 days ago: kept.
      expect((await deliveriesOf(t2, flakyHook.id)).map((d) => d.status)).toEqual(["delivered", "delivered"])
      expect((await deliveriesOf(t2, badHook.id)).map((d) => d.status)).toEqual(["failed", "failed"])
      const pending = await rowsOf(s, DeliveriesTable, ["webhook_id", `subscriber:${subscriber}`])
      expect(pending.map((d) => d.status)).toEqual(["pending", "pending"])
      const retried = (await deliveriesOf(t2, flakyHook.id)).map((d) => d.id)
      // New messages, delivered now (the flaky receiver takes them at once), stay through the rounds that follow.
      await createEvent(t2, unique("user"), purposes(["analytics", false]))
      await good.waitFor(4)
      await flaky.waitFor(6)
      await eventually(async () => {
        const list = await deliveriesOf(t2, okHook.id)
        return list.length === 2 && list.every((d) => d.status === "delivered")
      }, "the recent messages delivered")
      await eventually(async () => (await deliveriesOf(t2, flakyHook.id)).every((d) => d.status === "delivered"), "the flaky receiver's new messages")
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect(await deliveriesOf(t2, okHook.id)).toHaveLength(2)

      // The stats count what is left: the delivered count drops with the purge.
      const stats = await c2("GET", `/v1/webhooks/deliveries/stats?organization_id=${t.org.id}`)
      expect(stats.status, stats.text).toBe(200)
      const byId = new Map((stats.body as Array<any>).map((x) => [x.webhook_id, x.counts]))
      expect(byId.get(okHook.id)).toEqual({ pending: 0, delivering: 0, delivered: 2, failed: 0 })
      expect(byId.get(flakyHook.id)).toEqual({ pending: 0, delivering: 0, delivered: 4, failed: 0 })
      // The new messages to the failing receiver wait for their retry.
      expect(byId.get(badHook.id)).toEqual({ pending: 2, delivering: 0, delivered: 0, failed: 2 })

      // Twenty more days: the retried ones are 31 days delivered, and go; failed and pending stay.
      s.clock.advance(20 * DAY)
      const t3 = { ...t, call: await again(s, t) }
      await eventually(async () => (await deliveriesOf(t3, flakyHook.id)).length === 2, "the retried messages purged")
      expect((await deliveriesOf(t3, flakyHook.id)).filter((d) => retried.includes(d.id))).toEqual([])
      expect(await deliveriesOf(t3, okHook.id)).toHaveLength(2)
      // Every message of the failing receiver is still there, whatever its retry made of it.
      const failing = await deliveriesOf(t3, badHook.id)
      expect(failing).toHaveLength(4)
      expect(failing.filter((d) => d.status === "failed").length).toBeGreaterThanOrEqual(2)
      // The subscriber's, 51 days pending and 20 days, all stay.
      expect((await rowsOf(s, DeliveriesTable, ["webhook_id", `subscriber:${subscriber}`])).map((d) => d.status)).toEqual(["pending", "pending", "pending", "pending"])
    } finally {
      await s.close()
    }
  }, 30_000)
})

// ---------------------------------------------------------------- seeded rows

/** `n` outbox rows of the organization's webhook, in the given status, finished at `at`. */
const seedDeliveries = (s: TestServer, organizationId: string, webhookId: string, n: number, status: DeliveryRecord["status"], at: string, prefix = unique("d")) =>
  run(s, Effect.gen(function*() {
    const storage = yield* Storage
    const deliveries = storage.repository(DeliveriesTable)
    const attempts = storage.repository(AttemptsTable)
    for (let from = 0; from < n; from += 1000) {
      const ids = Array.from({ length: Math.min(1000, n - from) }, (_, i) => `${prefix}-${from + i}`)
      yield* Effect.orDie(deliveries.insert(ids.map((id) => ({
        id,
        organization_id: organizationId,
        webhook_id: webhookId,
        event_type: "event.created",
        regulation: "gdpr",
        status,
        attempts_count: 1,
        next_attempt_at: status === "pending" ? at : null,
        last_status_code: 200,
        payload: {},
        created_at: at,
        updated_at: at,
        version: 2,
        lease_until: status === "delivering" ? at : null,
        leased_by: status === "delivering" ? "someone" : null,
        trace_context: null
      } as any))))
      yield* Effect.orDie(attempts.insert(ids.map((id) => ({
        id: `a-${id}`,
        delivery_id: id,
        organization_id: organizationId,
        webhook_id: webhookId,
        attempted_at: at,
        status_code: 200,
        succeeded: status === "delivered",
        duration_ms: 3,
        error: null,
        response_excerpt: null
      }))))
    }
    return prefix
  }))

/** Mails of the outbox in each status, finished at `at`. */
const seedMails = (s: TestServer, organizationId: string, at: string) =>
  run(s, Effect.gen(function*() {
    const repo = (yield* Storage).repository(MailOutboxTable)
    const ids: Record<string, string> = {}
    for (const status of ["pending", "sending", "sent", "failed"]) {
      const id = unique(`mail-${status}`)
      ids[status] = id
      yield* Effect.orDie(repo.create({
        id,
        organization_id: organizationId,
        invitation_id: unique("inv"),
        status,
        attempts_count: 1,
        next_attempt_at: status === "pending" ? at : null,
        mail_sealed: status === "pending" || status === "sending" ? "sealed" : null,
        last_error: null,
        lease_until: status === "sending" ? at : null,
        leased_by: status === "sending" ? "someone" : null,
        created_at: at,
        updated_at: at,
        version: 1
      }))
    }
    return ids
  }))

const count = (s: TestServer, table: typeof DeliveriesTable | typeof MailOutboxTable | typeof AttemptsTable, organizationId: string) =>
  rowsOf(s, table, ["organization_id", organizationId]).then((rows) => rows.length)

describe(`retention: mails, concurrent purgers, a large purge (${storeKind})`, () => {
  it("sent and given-up mails older than the retention go; pending and sending ones stay, and younger ones", async () => {
    const s = await start({ dispatcher: false, retention: false })
    try {
      const op = await operatorOf(s.url)
      const t = await op.tenant()
      const now = s.clock.millis
      const old = await seedMails(s, t.org.id, new Date(now - 31 * DAY).toISOString())
      const young = await seedMails(s, t.org.id, new Date(now - 29 * DAY).toISOString())
      const removed = await run(s, Retention.runPurges([Retention.finishedMails(30)], Retention.paceOf({ pauseMs: 1 })))
      expect(removed).toEqual({ "finished invitation mails": 2 })
      const left = new Set((await rowsOf(s, MailOutboxTable, ["organization_id", t.org.id])).map((m) => m.id))
      expect([old.pending, old.sending, old.sent, old.failed].map((id) => left.has(id))).toEqual([true, true, false, false])
      expect(Object.values(young).every((id) => left.has(id))).toBe(true)
    } finally {
      await s.close()
    }
  })

  it("two purgers at once remove each message once, between them, and nothing else", async () => {
    const s = await start({ dispatcher: false, retention: false })
    try {
      const op = await operatorOf(s.url)
      const t = await op.tenant()
      const hook = await createHook(t, "http://127.0.0.1:9/off", { enabled: false })
      const old = new Date(s.clock.millis - 40 * DAY).toISOString()
      await seedDeliveries(s, t.org.id, hook.id, 2_600, "delivered", old)
      await seedDeliveries(s, t.org.id, hook.id, 30, "failed", old)
      await seedDeliveries(s, t.org.id, hook.id, 30, "pending", new Date(s.clock.millis + DAY).toISOString())
      await seedDeliveries(s, t.org.id, hook.id, 30, "delivered", new Date(s.clock.millis - DAY).toISOString())
      const purge = run(s, Retention.runPurges([Retention.deliveredMessages(30)], Retention.paceOf({ pauseMs: 1 })))
      const [a, b] = await Promise.all([purge, run(s, Retention.runPurges([Retention.deliveredMessages(30)], Retention.paceOf({ pauseMs: 1 })))])
      expect(a["delivered webhook messages"]! + b["delivered webhook messages"]!).toBe(2_600)
      const left = await rowsOf(s, DeliveriesTable, ["organization_id", t.org.id])
      expect(left.filter((d) => d.status === "failed")).toHaveLength(30)
      expect(left.filter((d) => d.status === "pending")).toHaveLength(30)
      expect(left.filter((d) => d.status === "delivered")).toHaveLength(30)
      expect(await count(s, AttemptsTable, t.org.id)).toBe(90)
      const stats = await t.call("GET", `/v1/webhooks/deliveries/stats?organization_id=${t.org.id}`)
      expect(stats.body[0].counts).toEqual({ pending: 30, delivering: 0, delivered: 30, failed: 30 })
    } finally {
      await s.close()
    }
  }, 60_000)

  it("consent events are taken, each within a generous bound, while 20,000 delivered messages are purged", async () => {
    const s = await start({ dispatcher: false, retention: false })
    try {
      const op = await operatorOf(s.url)
      const t = await op.tenant({ consents_api: true, webhooks: true })
      const hook = await createHook(t, "http://127.0.0.1:9/off", { enabled: false })
      await seedDeliveries(s, t.org.id, hook.id, 20_000, "delivered", new Date(s.clock.millis - 40 * DAY).toISOString())
      let done = false
      const purge = run(s, Retention.runPurges([Retention.deliveredMessages(30)], Retention.paceOf({}))).finally(() => (done = true))
      const latencies: Array<number> = []
      const statuses: Array<number> = []
      while (!done || latencies.length < 20) {
        const began = performance.now()
        const r = await t.call("POST", "/v1/consents/events", {
          body: { organization_id: t.org.id, user: { organization_user_id: unique("u") }, consents: { purposes: purposes(["analytics", true]) } }
        })
        latencies.push(performance.now() - began)
        statuses.push(r.status)
      }
      expect((await purge)["delivered webhook messages"]).toBe(20_000)
      expect(statuses.every((st) => st === 201)).toBe(true)
      // A guard that a purge never holds writers for long, not a measure: far above a request's time.
      expect(Math.max(...latencies)).toBeLessThan(1000)
      expect(await count(s, DeliveriesTable, t.org.id)).toBe(0)
    } finally {
      await s.close()
    }
  }, 120_000)
})

// ---------------------------------------------------------------- consent events

describe(`retention of consent events (${storeKind})`, () => {
  it("consent_retention_days: an integer from 1, or null; written like the organization's other settings", async () => {
    const s = await start({ retention: false, dispatcher: false })
    try {
      const op = await operatorOf(s.url)
      const t = await op.tenant()
      const c = as(s.url, t.token)
      const org = await c("GET", `/v1/organizations/${t.org.id}`)
      expect(org.body.consent_retention_days).toBe(null)
      for (const bad of [0, -1, 1.5, "30", 36_501, true]) {
        const r = await c("PATCH", `/v1/organizations/${t.org.id}`, { body: { consent_retention_days: bad } })
        expect400(r)
        expect(Object.keys(r.body.errors ?? {})).toContain("consent_retention_days")
      }
      const set = await c("PATCH", `/v1/organizations/${t.org.id}`, { body: { consent_retention_days: 90 } })
      expect(set.status, set.text).toBe(200)
      expect(set.body.consent_retention_days).toBe(90)
      // An update (PUT) that leaves it out clears it, as it clears the other optional settings: kept forever.
      const put = await c("PUT", `/v1/organizations/${t.org.id}`, { body: { name: set.body.name } })
      expect(put.status, put.text).toBe(200)
      expect(put.body.consent_retention_days).toBe(null)
      await c("PATCH", `/v1/organizations/${t.org.id}`, { body: { consent_retention_days: 90 } })
      const cleared = await c("PATCH", `/v1/organizations/${t.org.id}`, { body: { consent_retention_days: null } })
      expect(cleared.body.consent_retention_days).toBe(null)
      const made = await op.call("POST", "/v1/organizations", { body: { name: unique("org"), consent_retention_days: 365 } })
      expect(made.status, made.text).toBe(201)
      expect(made.body.consent_retention_days).toBe(365)
      expect400(await op.call("POST", "/v1/organizations", { body: { name: unique("org"), consent_retention_days: 0 } }))
    } finally {
      await s.close()
    }
  })

  it("an inactive user's events (and the proofs sent with them) go after the organization's days; an active user's stay; the user stays; the log verifies", async () => {
    const s = await start({ retention: QUICK })
    try {
      const op = await operatorOf(s.url)
      const t = await op.tenant({ consents_api: true, webhooks: true, versions_and_proofs: true })
      const idle = unique("idle")
      const busy = unique("busy")
      const e1 = await createEvent(t, idle, purposes(["analytics", true]), { proofs: [{ file: dataUri("image/png", samplePng()) }] })
      await createEvent(t, idle, purposes(["analytics", false]))
      const b1 = await createEvent(t, busy, purposes(["analytics", true]))
      expect(e1.proofs_id).toHaveLength(1)
      const set = await t.call("PATCH", `/v1/organizations/${t.org.id}`, { body: { consent_retention_days: 30 } })
      expect(set.status, set.text).toBe(200)
      // Another organization keeps its events forever.
      const other = await op.tenant({ consents_api: true, webhooks: true })
      await createEvent(other, idle, purposes(["analytics", true]))

      // 29 days on: nothing goes (several rounds run).
      s.clock.advance(29 * DAY)
      await new Promise((resolve) => setTimeout(resolve, 200))
      let c = await again(s, t)
      const eventsOf = async (caller: typeof c, ouid: string) => {
        const r = await caller("GET", `/v1/consents/events?organization_user_id=${ouid}&$limit=100`)
        expect(r.status, r.text).toBe(200)
        return r.body.data as Array<any>
      }
      expect(await eventsOf(c, idle)).toHaveLength(2)
      // The busy user is active again.
      await createEvent({ ...t, call: c }, busy, purposes(["analytics", false]))

      // 31 days after the first events.
      s.clock.advance(2 * DAY)
      c = await again(s, t)
      await eventually(async () => (await eventsOf(c, idle)).length === 0, "the idle user's events purged")
      // The proof sent with its event goes too, bytes and all (in the batch after the events').
      await eventually(async () => (await c("GET", `/v1/consents/proofs/${e1.proofs_id[0]}`)).status === 404, "the idle user's proof purged")
      // The user stays, with the status its events gave it.
      const user = await c("GET", `/v1/consents/users/${idle}?$by_organization_user_id=true`)
      expect(user.status, user.text).toBe(200)
      expect(user.body.consents.purposes).toEqual([{ id: "analytics", enabled: false }])
      // The busy user's events, old and new, stay.
      const busyEvents = await eventsOf(c, busy)
      expect(busyEvents.map((e) => e.id)).toContain(b1.id)
      expect(busyEvents).toHaveLength(2)
      // Another organization's stay.
      expect(await eventsOf(await again(s, other), idle)).toHaveLength(1)
      // The log says the rows were removed, and still verifies.
      const verified = await c("GET", `/v1/consents/log/verify?organization_id=${t.org.id}`)
      expect(verified.status, verified.text).toBe(200)
      expect(verified.body).toMatchObject({ valid: true, first_invalid: null })

      // Inactive in turn, the busy user's events go too; the verify stays green.
      s.clock.advance(31 * DAY)
      c = await again(s, t)
      await eventually(async () => (await eventsOf(c, busy)).length === 0, "the busy user's events purged")
      expect((await c("GET", `/v1/consents/log/verify?organization_id=${t.org.id}`)).body).toMatchObject({ valid: true, first_invalid: null })
    } finally {
      await s.close()
    }
  }, 30_000)
})

describe(`retention of the audit trail (${storeKind})`, () => {
  it("entries older than RETENTION_AUDIT_DAYS (400 by default) go, younger ones stay; 0 keeps every entry", async () => {
    const purging = await start({ retention: QUICK })
    const keeping = await start({ retention: { ...QUICK, auditDays: null } })
    try {
      const entriesOf = async (s: TestServer, organizationId: string) => {
        const op = await operatorOf(s.url)
        const r = await op.call("GET", `/v1/audit-logs?organization_id=${organizationId}&$limit=100`)
        expect(r.status, r.text).toBe(200)
        return r.body.data as ReadonlyArray<{ readonly resource: string; readonly resource_id: string; readonly created_at: string }>
      }
      const made = await Promise.all([purging, keeping].map(async (s) => {
        const op = await operatorOf(s.url)
        const t = await op.tenant()
        const old = await op.call("POST", "/v1/properties", { body: { organization_id: t.org.id, name: unique("old") } })
        expect(old.status, old.text).toBe(201)
        s.clock.advance(401 * DAY)
        const op2 = await operatorOf(s.url)
        const young = await op2.call("POST", "/v1/properties", { body: { organization_id: t.org.id, name: unique("young") } })
        expect(young.status, young.text).toBe(201)
        return { t, old: old.body.id as string, young: young.body.id as string }
      }))
      const [p, k] = made as [typeof made[0], typeof made[0]]
      await eventually(async () => !(await entriesOf(purging, p.t.org.id)).some((e) => e.resource_id === p.old), "the old entries purged")
      const left = await entriesOf(purging, p.t.org.id)
      expect(left.map((e) => e.resource_id)).toContain(p.young)
      const cutoff = purging.clock.millis - 400 * DAY
      expect(left.every((e) => Date.parse(e.created_at) >= cutoff)).toBe(true)
      // The keeping server's purges ran too (its delivered messages'), yet its old entries stay.
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect((await entriesOf(keeping, k.t.org.id)).map((e) => e.resource_id)).toEqual(expect.arrayContaining([k.old, k.young]))
    } finally {
      await purging.close()
      await keeping.close()
    }
  }, 60_000)
})
