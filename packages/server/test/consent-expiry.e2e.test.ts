import { saveSubscriber } from "@cmp/core"
import { startServer } from "@cmp/http-express"
import type { StoreLayer } from "@cmp/platform"
import { PgStore } from "@cmp/store-postgres"
import { SqliteStore } from "@cmp/store-sqlite"
import { createTestDatabase, type TestDatabase } from "@cmp/test-support/database"
import { type SubscriberMessage, Subscribers } from "@cmp/webhooks"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { ManualClock } from "./api/helpers.js"
import {
  ADMIN,
  as,
  createEvent,
  createHook,
  deliveriesOf,
  DISPATCHER,
  eventually,
  expectedFlat,
  operatorOf,
  purposes,
  type Receiver,
  receiver,
  sleep,
  storeKind,
  type Tenant,
  trackedReceivers,
  unique,
  useServer,
  verifyAtItsTime
} from "./helpers.js"

/**
 * `user.consent_expired` end to end: the server's own dispatcher sweeps for lapsed consents
 * every 50 ms (real time) while the test moves the server's clock past users' `expires_at`.
 * The message goes once per user, regulation and last merged event, only to webhooks (and
 * in-process subscribers) that name the type, only for expiries after the policy took its
 * current form; a restart or a second process sweeping the same database sends nothing twice.
 */

const SWEEP_MS = 50
const SECOND = 1000
const MINUTE = 60_000
const DAY = 86_400_000

const track = trackedReceivers()

const EXPIRED = ["user.consent_expired"]

const policy = async (t: Tenant, body: Record<string, unknown>) => {
  const r = await t.call("POST", "/v1/consents/policies", { body: { organization_id: t.org.id, ...body } })
  expect(r.status, r.text).toBe(201)
  return r.body
}
const userOf = async (t: Tenant, ouid: string) => {
  const r = await t.call("GET", `/v1/consents/users/${ouid}?$by_organization_user_id=true`)
  expect(r.status, r.text).toBe(200)
  return r.body
}
/** The expiry messages a receiver got, as `[organization_user_id, expired_at]`, in arrival order. */
const expiries = (r: Receiver) =>
  r.bodies().filter((b) => b.type === "user.consent_expired").map((b) => [b.parameters.entity.organization_user_id, b.parameters.expired_at])
/** Several sweeps' time, for "nothing more arrives". */
const quiet = () => sleep(SWEEP_MS * 8)

describe(`consent expiry webhook (${storeKind})`, () => {
  const { server, op } = useServer({ expirySweepIntervalMs: SWEEP_MS })
  const now = () => server.clock.millis
  const iso = (ms: number) => new Date(ms).toISOString()

  it("sent once per expiry, with the user as it is then; only to webhooks naming the type; flattened beside the entity's keys", async () => {
    const t = await op.tenant()
    const named = await track(receiver())
    const flat = await track(receiver())
    const spec = await track(receiver())
    const hook = await createHook(t, named.url, { event_types: EXPIRED })
    await createHook(t, flat.url, { event_types: ["user.created", ...EXPIRED], flatten: true })
    // An empty list: the six types of the spec, and not this one.
    await createHook(t, spec.url)
    await policy(t, { consent_duration: 60, consent_duration_unit: "seconds", denied_consent_duration: 30, denied_consent_duration_unit: "seconds" })
    const given = await createEvent(t, "given", purposes(["analytics", true]))
    const refused = await createEvent(t, "refused", purposes(["analytics", false]))
    await spec.waitFor(4)
    await quiet()
    expect(named.requests).toHaveLength(0)

    // The refusal lapses first (its own duration), then the consent.
    server.clock.advance(30 * SECOND)
    await named.waitFor(1)
    const refusedUser = await userOf(t, "refused")
    expect(refusedUser).toMatchObject({ consent_state: "expired", expires_at: iso(Date.parse(refused.created_at) + 30 * SECOND) })
    server.clock.advance(30 * SECOND)
    await named.waitFor(2)
    const givenUser = await userOf(t, "given")
    expect(givenUser).toMatchObject({ consent_state: "expired", expires_at: iso(Date.parse(given.created_at) + 60 * SECOND) })

    // Later sweeps send nothing more. (The clock moves by minutes: the tenants' tokens last an hour.)
    server.clock.advance(10 * MINUTE)
    await quiet()
    const bodies = named.bodies()
    expect(bodies).toStrictEqual([
      { type: "user.consent_expired", regulation: "gdpr", parameters: { entity: refusedUser, expired_at: refusedUser.expires_at } },
      { type: "user.consent_expired", regulation: "gdpr", parameters: { entity: givenUser, expired_at: givenUser.expires_at } }
    ])
    // Signed like every message.
    expect(verifyAtItsTime(hook.signing_secret, named.requests[0]!)).toStrictEqual(bodies[0])
    const log = await deliveriesOf(t, hook.id)
    expect(log.map((d) => [d.event_type, d.status])).toStrictEqual([["user.consent_expired", "delivered"], ["user.consent_expired", "delivered"]])

    await flat.waitFor(4)
    // (Two deliveries to one webhook may arrive in either order.)
    const flatExpired = flat.bodies().filter((b) => b.type === "user.consent_expired")
    expect(flatExpired).toHaveLength(2)
    expect(flatExpired).toEqual(expect.arrayContaining(bodies.map(expectedFlat)))
    expect(flatExpired.find((b) => b.parameters__entity__id === refusedUser.id))
      .toMatchObject({ parameters__entity__consent_state: "expired", parameters__expired_at: refusedUser.expires_at })
    expect(spec.bodies().map((b) => b.type).sort()).toStrictEqual(["event.created", "event.created", "user.created", "user.created"])
  }, 30_000)

  it("the OpenAPI document lists the type among those a webhook may name", async () => {
    const doc = await (await fetch(`${server.url}/openapi.json`)).json()
    for (const name of ["Webhooks", "WebhooksCreate", "WebhooksUpdate", "WebhooksPatch"]) {
      const eventTypes = doc.components.schemas[name].properties.event_types
      expect(JSON.stringify(eventTypes), name).toContain("\"user.consent_expired\"")
    }
  })

  it("a policy created, or changed, over users already expired announces nothing for them; a later expiry is announced", async () => {
    const t = await op.tenant()
    const r = await track(receiver())
    await createHook(t, r.url, { event_types: EXPIRED })
    await createEvent(t, "long-ago", purposes(["analytics", true]), { created_at: iso(now() - 3 * DAY) })
    await createEvent(t, "today", purposes(["analytics", true]))
    const p = await policy(t, { consent_duration: 600, consent_duration_unit: "seconds" })
    expect((await userOf(t, "long-ago")).consent_state).toBe("expired")
    await quiet()
    expect(r.requests).toHaveLength(0)

    server.clock.advance(10 * MINUTE)
    await r.waitFor(1)
    expect(expiries(r).map(([u]) => u)).toStrictEqual(["today"])

    // A change that makes a user's choice lapse in the past: nothing for it.
    await createEvent(t, "earlier", purposes(["analytics", true]))
    server.clock.advance(2 * MINUTE)
    const patched = await t.call("PATCH", `/v1/consents/policies/${p.id}`, { body: { consent_duration: 60, consent_duration_unit: "seconds" } })
    expect(patched.status, patched.text).toBe(200)
    expect((await userOf(t, "earlier")).consent_state).toBe("expired")
    const later = await createEvent(t, "later", purposes(["analytics", true]))
    await quiet()
    expect(r.requests).toHaveLength(1)
    server.clock.advance(MINUTE)
    await r.waitFor(2)
    await quiet()
    expect(expiries(r)).toStrictEqual([
      ["today", expect.any(String)],
      ["later", iso(Date.parse(later.created_at) + MINUTE)]
    ])
  }, 30_000)

  it("a newer event starts a new period, whose expiry is announced in turn", async () => {
    const t = await op.tenant()
    const r = await track(receiver())
    await createHook(t, r.url, { event_types: EXPIRED })
    await policy(t, { consent_duration: 60, consent_duration_unit: "seconds" })
    const first = await createEvent(t, "u", purposes(["analytics", true]))
    server.clock.advance(61 * SECOND)
    await r.waitFor(1)
    const second = await createEvent(t, "u", purposes(["analytics", false]))
    await quiet()
    expect(r.requests).toHaveLength(1)
    server.clock.advance(61 * SECOND)
    await r.waitFor(2)
    await quiet()
    expect(expiries(r)).toStrictEqual([
      ["u", iso(Date.parse(first.created_at) + 60 * SECOND)],
      ["u", iso(Date.parse(second.created_at) + 60 * SECOND)]
    ])
    expect(r.bodies()[1].parameters.entity.consents.purposes).toStrictEqual(purposes(["analytics", false]))
  }, 30_000)

  it("in-process subscribers get it when they name the type, not with their default types", async () => {
    const t = await op.tenant()
    const named = unique("expiry")
    const plain = unique("plain")
    const got: Record<string, Array<SubscriberMessage>> = { [named]: [], [plain]: [] }
    await server.api.runtime.runPromise(Effect.zipRight(saveSubscriber(named, { event_types: EXPIRED }), saveSubscriber(plain, {})))
    // This process's registry of handlers, as `createPlatform(...).subscribe` uses it.
    const registry = Option.getOrThrow(await server.api.runtime.runPromise(Effect.serviceOption(Subscribers)))
    for (const name of [named, plain]) {
      await Effect.runPromise(registry.add(name, (m) => {
        if (m.organization_id === t.org.id) got[name]!.push(m)
      }))
    }
    await policy(t, { consent_duration: 60, consent_duration_unit: "seconds" })
    await createEvent(t, "u", purposes(["analytics", true]))
    await eventually(() => got[plain]!.length === 2, "the plain subscriber's event.created and user.created")
    server.clock.advance(61 * SECOND)
    await eventually(() => got[named]!.length === 1, "the expiry at the subscriber")
    await quiet()
    expect(got[named]!.map((m) => [m.event_type, (m.payload as any).parameters.entity.organization_user_id])).toStrictEqual([["user.consent_expired", "u"]])
    expect(got[plain]!.map((m) => m.event_type).sort()).toStrictEqual(["event.created", "user.created"])
  }, 30_000)
})

describe(`consent expiry webhook across processes of one database (${storeKind})`, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-expiry-"))
  let db: TestDatabase | undefined
  afterAll(async () => {
    await db?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })
  const storeLayer = async (): Promise<StoreLayer> => {
    if (storeKind === "sqlite") return SqliteStore.layer({ filename: path.join(dir, "consent.db") })
    db ??= await createTestDatabase({ clients: 3 })
    return PgStore.layer({ url: db.url, maxConnections: db.kind === "pglite" ? 1 : db.maxConnections })
  }

  it("two processes sweeping at once send each expiry once; a new process over the same database sends nothing again", async () => {
    const clock = new ManualClock(Date.now())
    const start = async () =>
      startServer({
        store: await storeLayer(),
        port: 0,
        allowHttp: true,
        hashCost: 1024,
        clock,
        admin: ADMIN,
        logLevel: "None",
        webhookAllowHosts: ["127.0.0.1"],
        dispatcher: DISPATCHER,
        expirySweepIntervalMs: 20
      })
    const a = await start()
    const b = await start()
    const r = await track(receiver())
    try {
      const op = await operatorOf(a.url)
      const t = await op.tenant()
      const hook = await createHook(t, r.url, { event_types: EXPIRED })
      await policy(t, { consent_duration: 60, consent_duration_unit: "seconds" })
      const users = Array.from({ length: 40 }, (_, i) => `u${String(i).padStart(2, "0")}`)
      for (const u of users) await createEvent(t, u, purposes(["analytics", i(u) % 2 === 0]))
      clock.advance(61 * SECOND)
      await r.waitFor(users.length, 15_000)
      await sleep(500)
      expect(expiries(r).map(([u]) => u).sort()).toStrictEqual(users)
      await a.close()
      await b.close()

      const c = await start()
      try {
        clock.advance(10 * MINUTE)
        await sleep(500)
        expect(r.requests).toHaveLength(users.length)
        const log = await deliveriesOf({ ...t, call: as(c.url, t.token) }, hook.id)
        expect(log).toHaveLength(users.length)
      } finally {
        await c.close()
      }
    } finally {
      await a.close().catch(() => undefined)
      await b.close().catch(() => undefined)
    }
  }, 90_000)
})

const i = (u: string) => Number(u.slice(1))
