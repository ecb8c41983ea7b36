import { deleteSubscriber, saveSubscriber } from "@cmp/core"
import { afterAll, describe, expect, it } from "vitest"
import { expect400, expect401, expect405 } from "./helpers.js"
import {
  call,
  closedPort,
  createEvent,
  createHook,
  deliveriesOf,
  deliveryOf,
  DISPATCHER,
  expect403,
  purposes,
  type Receiver,
  receiver,
  settled,
  storeKind,
  type Tenant,
  unique,
  useServer
} from "../helpers.js"

/**
 * `GET /v1/webhooks/deliveries/stats?organization_id=…` through HTTP: per webhook of the
 * organization, its messages in each status, the age of the oldest pending one, and its last
 * successful and failed attempts; scoped like the delivery log.
 */

const STATS = "/v1/webhooks/deliveries/stats"

const receivers: Array<Receiver> = []
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()))
})

const statsOf = async (t: Pick<Tenant, "call">, organizationId: string) => {
  const r = await t.call("GET", `${STATS}?organization_id=${encodeURIComponent(organizationId)}`)
  expect(r.status, r.text).toBe(200)
  return r.body as Array<any>
}

/** The latest attempt time among the attempts of a webhook's messages that pass `which`. */
const lastAttemptAt = async (t: Tenant, webhookId: string, which: (a: any) => boolean) => {
  const times: Array<string> = []
  for (const d of await deliveriesOf(t, webhookId)) {
    for (const a of (await deliveryOf(t, d.id)).attempts) if (which(a)) times.push(a.attempted_at)
  }
  return times.sort().at(-1) ?? null
}

const zero = { pending: 0, delivering: 0, delivered: 0, failed: 0 }

describe(`delivery stats with a dispatcher (${storeKind})`, () => {
  // Two retries right away: a failing receiver's messages are `failed` within a few polls.
  const { op } = useServer({ dispatcher: { ...DISPATCHER, retrySchedule: [0, 0] } })

  it("counts each webhook's messages by status, with its last successful and failed attempts; every webhook is listed, in id order", async () => {
    const t = await op.tenant()
    const good = await receiver(204)
    const bad = await receiver(500)
    receivers.push(good, bad)
    const hooks = [
      await createHook(t, good.url),
      await createHook(t, bad.url),
      // Switched off: no message reaches it, but it is one of the organization's webhooks.
      await createHook(t, "http://127.0.0.1:9/off", { enabled: false })
    ]
    const [ok, failing, off] = hooks
    await createEvent(t, unique("user"), purposes(["analytics", true]))
    // event.created and user.created, to each enabled webhook.
    await settled(t, ok.id, 2)
    await settled(t, failing.id, 2, (d) => d.status === "failed" && d.attempts_count === 3)
    expect(bad.requests).toHaveLength(6)

    const stats = await statsOf(t, t.org.id)
    expect(stats.map((s) => s.webhook_id)).toEqual(hooks.map((h) => h.id).sort())
    const byId = new Map(stats.map((s) => [s.webhook_id, s]))
    expect(byId.get(ok.id)).toEqual({
      webhook_id: ok.id,
      counts: { ...zero, delivered: 2 },
      oldest_pending_age_s: null,
      last_success_at: await lastAttemptAt(t, ok.id, (a) => a.status_code === 204),
      last_failure_at: null,
      last_error: null
    })
    const lastFailure = await lastAttemptAt(t, failing.id, (a) => a.status_code === 500)
    expect(lastFailure).not.toBeNull()
    expect(byId.get(failing.id)).toEqual({
      webhook_id: failing.id,
      counts: { ...zero, failed: 2 },
      oldest_pending_age_s: null,
      last_success_at: null,
      last_failure_at: lastFailure,
      // The receiver answered: no transport error, so its status is the reason.
      last_error: "receiver answered 500"
    })
    expect(byId.get(off.id)).toEqual({
      webhook_id: off.id,
      counts: zero,
      oldest_pending_age_s: null,
      last_success_at: null,
      last_failure_at: null,
      last_error: null
    })
    // The operator reads the same figures.
    expect(await statsOf(op, t.org.id)).toEqual(stats)
  })

  it("a receiver nobody listens on: the last error is the transport's", async () => {
    const t = await op.tenant()
    const closed = await createHook(t, `http://127.0.0.1:${await closedPort()}/closed`)
    await createEvent(t, unique("user"), purposes(["analytics", true]))
    await settled(t, closed.id, 2, (d) => d.status === "failed")
    const [s] = await statsOf(t, t.org.id)
    expect(s).toMatchObject({ webhook_id: closed.id, counts: { ...zero, failed: 2 }, last_success_at: null })
    expect(s.last_failure_at).toBe(await lastAttemptAt(t, closed.id, () => true))
    expect(s.last_error).toEqual(expect.any(String))
    expect(s.last_error).not.toMatch(/^receiver answered/)
  })
})

describe(`delivery stats of queued messages (${storeKind})`, () => {
  // Nothing is delivered: messages stay pending and the server's clock only moves when told.
  const { op, server } = useServer({ dispatcher: false })

  it("the oldest pending message's age follows the server's clock; a subscriber's messages are not a webhook's", async () => {
    const t = await op.tenant()
    const subscriber = unique("stats")
    await server.api.runtime.runPromise(saveSubscriber(subscriber, {}))
    try {
      // Queued for the subscriber only, before the organization has a webhook.
      await createEvent(t, unique("user"), purposes(["analytics", true]))
      server.clock.advance(10_000)
      const hook = await createHook(t, "http://127.0.0.1:9/later")
      expect(await statsOf(t, t.org.id)).toEqual([{
        webhook_id: hook.id,
        counts: zero,
        oldest_pending_age_s: null,
        last_success_at: null,
        last_failure_at: null,
        last_error: null
      }])
      server.clock.advance(2_000)
      await createEvent(t, unique("user"), purposes(["analytics", true]))
      server.clock.advance(1_500)
      await createEvent(t, unique("user"), purposes(["ads", false]))
      server.clock.advance(90_700)

      const queued = await deliveriesOf(t, hook.id)
      expect(queued).toHaveLength(4)
      const [s] = await statsOf(t, t.org.id)
      // 1.5 s + 90.7 s since the first of them, in whole seconds.
      expect(s).toEqual({
        webhook_id: hook.id,
        counts: { ...zero, pending: 4 },
        oldest_pending_age_s: 92,
        last_success_at: null,
        last_failure_at: null,
        last_error: null
      })
      // The subscriber's older messages are in the log the operator reads, and in no figure.
      const log = await op.call("GET", `/v1/webhooks/deliveries?organization_id=${t.org.id}&webhook_id=subscriber:${subscriber}`)
      expect(log.status, log.text).toBe(200)
      expect(log.body.total).toBe(6)
      expect(await statsOf(op, t.org.id)).toEqual([s])
    } finally {
      await server.api.runtime.runPromise(deleteSubscriber(subscriber))
    }
  })

  it("another organization's figures are refused; organization_id is required", async () => {
    const a = await op.tenant()
    const b = await op.tenant()
    await createHook(a, "http://127.0.0.1:9/a")
    // B asks for A: 403, as a find of A's delivery log is.
    expect403(await b.call("GET", `${STATS}?organization_id=${a.org.id}`))
    expect403(await b.call("GET", `/v1/webhooks/deliveries?organization_id=${a.org.id}`))
    // An organization that does not exist is the same 403 to B, and a 400 to the operator.
    expect403(await b.call("GET", `${STATS}?organization_id=${unique("none")}`))
    expect400(await op.call("GET", `${STATS}?organization_id=${unique("none")}`))
    // Not named (or named twice): a 400 that names the parameter, for B as for the operator.
    for (const r of [await b.call("GET", STATS), await op.call("GET", STATS)]) {
      expect400(r)
      expect(Object.keys(r.body.errors)).toEqual(["organization_id"])
    }
    expect400(await b.call("GET", `${STATS}?organization_id=${b.org.id}&organization_id=${a.org.id}`))
    // A's public key opens consent writes only.
    expect401(await call(server.url, "GET", `${STATS}?organization_id=${a.org.id}`, { headers: { "x-public-api-key": a.org.public_api_key } }))
    // B's own figures: its webhooks only (none).
    expect(await statsOf(b, b.org.id)).toEqual([])
  })

  it("needs the premium feature webhooks, as the delivery log does", async () => {
    const t = await op.tenant({ consents_api: true })
    expect403(await t.call("GET", `${STATS}?organization_id=${t.org.id}`))
    expect403(await t.call("GET", "/v1/webhooks/deliveries"))
    // The operator is never gated.
    expect(await statsOf(op, t.org.id)).toEqual([])
  })

  it("`stats` is the action, never a delivery id", async () => {
    const t = await op.tenant()
    const r = await t.call("GET", STATS)
    expect400(r)
    expect(r.body.errors).toEqual({ organization_id: "is required" })
    expect(await statsOf(t, t.org.id)).toEqual([])
    const removed = await t.call("DELETE", `${STATS}?organization_id=${t.org.id}`)
    expect405(removed)
    expect(removed.headers.get("allow")).toBe("GET, HEAD")
    // Any other id is still a delivery's look-up.
    const unknown = await t.call("GET", "/v1/webhooks/deliveries/statistics")
    expect(unknown.status, unknown.text).toBe(404)
  })
})
