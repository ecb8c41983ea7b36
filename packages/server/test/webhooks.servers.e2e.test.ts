import type { RunningServer } from "@cmp/http-express"
import { afterAll, describe, expect, it } from "vitest"
import { useTwoPgServers } from "./api/two-pg-servers.js"
import {
  as,
  createEvent,
  createHook,
  deliveriesOf,
  DISPATCHER,
  operatorOf,
  purposes,
  type Receiver,
  receiver,
  storeKind,
  type Tenant,
  verifyAtItsTime
} from "./helpers.js"

/**
 * Two servers on one PostgreSQL database hear each other's changes (LISTEN/NOTIFY): a webhook
 * written through one is addressed by the other's consent events once the news has crossed,
 * though the other keeps an organization's webhooks a second; and a message committed through a server that delivers
 * nothing is delivered by the other's dispatcher at once, though it polls the outbox once an
 * hour. Without the news, both would wait for their bound (docs/operating.md).
 */

const receivers: Array<Receiver> = []
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()))
})

/** Hooks on consent events alone: one message per event. */
const events = { event_types: ["event.created"] }

/**
 * The news's transit: it reaches the other server within milliseconds of the commit, but on a
 * connection of its own, so a request sent to that server at once may be read first (under a
 * busy machine's load it was). Well under the second that server keeps its copy without news.
 */
const transit = () => new Promise((resolve) => setTimeout(resolve, 200))

/** The events a webhook's messages are about. */
const eventsOf = async (t: Tenant, webhookId: string) =>
  (await deliveriesOf(t, webhookId)).map((d) => (d.payload as { parameters: { entity: { id: string } } }).parameters.entity.id)

describe.runIf(storeKind === "postgres")("two servers hear each other's webhook changes and messages", () => {
  // A delivers nothing; B's dispatcher would poll the outbox only once an hour.
  const servers = useTwoPgServers({ webhookAllowHosts: ["127.0.0.1"] }, [
    { dispatcher: false },
    { dispatcher: { ...DISPATCHER, pollIntervalMs: 3_600_000 } }
  ])

  it("a webhook created, then switched off, through one server is used, then left out, by the other's next event", async () => {
    const [a, b] = servers as [RunningServer, RunningServer]
    const t = await (await operatorOf(a.url)).tenant()
    const throughB = { ...t, call: as(b.url, t.token) }
    const hook = await track(receiver())
    const first = await createHook(t, hook.url, events)
    // B reads, and keeps, the organization's webhooks: the first alone.
    const e1 = await createEvent(throughB, "kept", purposes(["analytics", true]))

    const second = await createHook(t, hook.url, events)
    await transit()
    const e2 = await createEvent(throughB, "kept", purposes(["analytics", false]))
    expect(await eventsOf(t, second.id)).toEqual([e2.id])

    const off = await t.call("PATCH", `/v1/webhooks/${first.id}`, { body: { enabled: false } })
    expect(off.status, off.text).toBe(200)
    await transit()
    const e3 = await createEvent(throughB, "kept", purposes(["analytics", true]))
    expect(await eventsOf(t, first.id)).toEqual([e1.id, e2.id])
    expect(await eventsOf(t, second.id)).toEqual([e2.id, e3.id])
  }, 30_000)

  it("a message committed through the server that delivers nothing is delivered by the other's dispatcher before its poll", async () => {
    const [a] = servers as [RunningServer, RunningServer]
    const t = await (await operatorOf(a.url)).tenant()
    const hook = await track(receiver())
    await createHook(t, hook.url, events)
    const event = await createEvent(t, "rung", purposes(["analytics", true]))
    const [arrived] = await hook.waitFor(1, 15_000)
    expect(JSON.parse(arrived!.body).parameters.entity.id).toBe(event.id)
  }, 30_000)

  it("a signing secret rotated through one server signs the other's next message beside the old one", async () => {
    const [a] = servers as [RunningServer, RunningServer]
    const t = await (await operatorOf(a.url)).tenant()
    const hook = await track(receiver())
    const created = await createHook(t, hook.url, events)
    // B's dispatcher reads, and keeps, the webhook with its one secret.
    await createEvent(t, "before", purposes(["analytics", true]))
    const [first] = await hook.waitFor(1, 15_000)
    expect(String(first!.headers["webhook-signature"]).split(" ")).toHaveLength(1)

    const rotated = await t.call("POST", `/v1/webhooks/${created.id}/rotate-secret`, { body: { overlap_s: 600 } })
    expect(rotated.status, rotated.text).toBe(200)
    await createEvent(t, "after", purposes(["analytics", false]))
    const [, second] = await hook.waitFor(2, 15_000)
    expect(String(second!.headers["webhook-signature"]).split(" ")).toHaveLength(2)
    expect(verifyAtItsTime(rotated.body.signing_secret, second!)).toEqual(JSON.parse(second!.body))
    expect(verifyAtItsTime(created.signing_secret, second!)).toEqual(JSON.parse(second!.body))
  }, 30_000)
})

async function track(r: Promise<Receiver>) {
  const got = await r
  receivers.push(got)
  return got
}
