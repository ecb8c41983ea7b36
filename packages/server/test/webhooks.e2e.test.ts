import { Webhook } from "standardwebhooks"
import { describe, expect, it } from "vitest"
import { expect409 } from "./api/helpers.js"
import {
  authServer,
  closedPort,
  createEvent,
  createHook,
  deliveriesOf,
  deliveryOf,
  expect403,
  expect404,
  expectedFlat,
  purposes,
  type Receiver,
  receiver,
  settled,
  signatureHeaders,
  sleep,
  storeKind,
  type Tenant,
  trackedReceivers,
  unique,
  useServer,
  verifyAtItsTime,
  verifyJwt
} from "./helpers.js"

/**
 * Webhooks end to end, through the HTTP API and a real receiver: the six event types with the
 * parameters of spec section 6 (plain and flattened, Standard Webhooks signatures), the pending
 * rules, filters and regulations, retries on the five-minute schedule (driven by the server's
 * ManualClock, so no real waiting), replay, 410 and 3xx, OAuth2 client credentials against a
 * real authorization server, and the tenant isolation of the delivery log.
 *
 * The crash test (a worker process killed mid-delivery) is in webhooks.crash.e2e.test.ts.
 */

const track = trackedReceivers()

const iso = (ms: number) => new Date(ms).toISOString()

/** Requests of one message (by its `webhook-id`). */
const requestsOf = (r: Receiver, id: string) => r.requests.filter((q) => q.headers["webhook-id"] === id)

describe(`webhooks end to end (${storeKind})`, () => {
  const { server, op } = useServer()


  it("1. each of the six event types arrives with the parameters of spec section 6, signed; flatten off and on", async () => {
    const t = await op.tenant()
    const plain = await track(receiver())
    const flat = await track(receiver())
    const hp = await createHook(t, plain.url)
    const hf = await createHook(t, flat.url, { flatten: true })
    expect(hp).toMatchObject({ enabled: true, event_types: [], flatten: false, regulations: ["gdpr"], auth: null })
    const ouid = unique("user")
    let n = 0
    const arrived = async (k: number) => {
      n += k
      await plain.waitFor(n)
      await flat.waitFor(n)
    }
    const getUser = async (id: string) => {
      const r = await t.call("GET", `/v1/consents/users/${id}`)
      expect(r.status, r.text).toBe(200)
      return r.body
    }

    // event.created + user.created: a confirmed event naming a new user.
    const e1 = await createEvent(t, ouid, [], {
      metadata: { channel: "banner" },
      consents: { purposes: purposes(["analytics", true], ["ads", false]), vendors: { enabled: ["v1"], disabled: ["v2"] } }
    })
    const u1 = await getUser(e1.user.id)
    await arrived(2)

    // event.updated: the event's metadata changes, the user's status does not (no user.updated).
    server.clock.advance(1000)
    const e1b = await t.call("PATCH", `/v1/consents/events/${e1.id}`, { body: { metadata: { channel: "settings" } } })
    expect(e1b.status, e1b.text).toBe(200)
    await arrived(1)

    // event.created + user.updated (source: that event).
    server.clock.advance(1000)
    const e2 = await createEvent(t, ouid, purposes(["ads", true]))
    const u2 = await getUser(e1.user.id)
    expect(u2.consents.purposes).toEqual(purposes(["analytics", true], ["ads", true]))
    await arrived(2)

    // user.updated without an event: source null.
    server.clock.advance(1000)
    const u3 = await t.call("PATCH", `/v1/consents/users/${e1.user.id}`, { body: { country: "FR" } })
    expect(u3.status, u3.text).toBe(200)
    await arrived(1)

    // event.deleted + user.updated (the status is recomputed without it; source: the deleted event).
    server.clock.advance(1000)
    const e2removed = await t.call("DELETE", `/v1/consents/events/${e2.id}`)
    expect(e2removed.status, e2removed.text).toBe(200)
    const u4 = await getUser(e1.user.id)
    expect(u4.consents.purposes).toEqual(purposes(["analytics", true], ["ads", false]))
    await arrived(2)

    // user.deleted.
    const u5 = await t.call("DELETE", `/v1/consents/users/${e1.user.id}`)
    expect(u5.status, u5.text).toBe(200)
    await arrived(1)

    const expected = [
      { type: "event.created", parameters: { source: { type: "api-key", id: t.key.id }, entity: e1 } },
      { type: "user.created", parameters: { entity: u1 } },
      {
        type: "event.updated",
        parameters: { source: { type: "api-key", id: t.key.id }, old_entity: e1, new_entity: e1b.body }
      },
      { type: "event.created", parameters: { source: { type: "api-key", id: t.key.id }, entity: e2 } },
      { type: "user.updated", parameters: { source: e2, old_entity: u1, new_entity: u2 } },
      { type: "user.updated", parameters: { source: null, old_entity: u2, new_entity: u3.body } },
      { type: "event.deleted", parameters: { entity: e2removed.body } },
      { type: "user.updated", parameters: { source: e2removed.body, old_entity: u3.body, new_entity: u4 } },
      { type: "user.deleted", parameters: { entity: u5.body } }
    ].map((b) => ({ ...b, regulation: "gdpr" }))
    expect(new Set(expected.map((b) => b.type)).size).toBe(6)

    // Nothing else arrives.
    await sleep(200)
    expect(plain.requests).toHaveLength(expected.length)
    expect(flat.requests).toHaveLength(expected.length)

    // Plain: exactly { type, parameters, regulation } with the entities as the API shows them.
    const plainBodies = plain.bodies()
    expect(plainBodies).toEqual(expect.arrayContaining(expected))
    for (const b of plainBodies) expect(Object.keys(b).sort()).toEqual(["parameters", "regulation", "type"])

    // Flattened: the same messages as one flat object each.
    const flatBodies = flat.bodies()
    expect(flatBodies).toEqual(expect.arrayContaining(expected.map(expectedFlat)))
    for (const b of flatBodies) {
      expect(Object.values(b).every((v) => v === null || typeof v !== "object")).toBe(true)
      expect(Object.keys(b).every((k) => k === "type" || k === "regulation" || k.startsWith("parameters__entity__"))).toBe(true)
    }
    const flatCreated = flatBodies.find((b) => b.type === "event.created" && b.parameters__entity__id === e1.id)
    expect(flatCreated).toMatchObject({
      type: "event.created",
      regulation: "gdpr",
      parameters__entity__consents__purposes__analytics__enabled: true,
      parameters__entity__consents__purposes__ads__enabled: false,
      parameters__entity__consents__vendors__enabled__0: "v1",
      parameters__entity__user__organization_user_id: ouid
    })
    const flatUser = flatBodies.find((b) => b.type === "user.created")
    expect(flatUser).toMatchObject({
      parameters__entity__id: e1.user.id,
      parameters__entity__regulation: "gdpr",
      parameters__entity__consents__purposes__analytics__enabled: true,
      parameters__entity__consents__purposes__ads__enabled: false,
      parameters__entity__consents__vendors__enabled__0: "v1",
      parameters__entity__consents__vendors__disabled__0: "v2"
    })
    // event.updated: only new_entity, under parameters__entity__.
    const flatUpdated = flatBodies.find((b) => b.type === "event.updated")
    expect(flatUpdated.parameters__entity__metadata__channel).toBe("settings")
    expect(flatUpdated.parameters__entity__version).toBe(2)

    // Every request: JSON, Standard Webhooks headers whose signature verifies with the secret
    // returned once at creation (and not with another webhook's), the webhook-id is the delivery.
    for (const [r, hook, other] of [[plain, hp, hf], [flat, hf, hp]] as const) {
      for (const req of r.requests) {
        expect(req.method).toBe("POST")
        expect(req.headers["content-type"]).toBe("application/json")
        expect(req.headers.authorization).toBeUndefined()
        expect(req.headers["webhook-id"]).toMatch(/^msg_/)
        expect(req.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/)
        expect(Math.abs(Number(req.headers["webhook-timestamp"]) - server.clock.millis / 1000)).toBeLessThan(60)
        expect(new Webhook(hook.signing_secret).verify(req.body, signatureHeaders(req))).toEqual(JSON.parse(req.body))
        expect(() => new Webhook(other.signing_secret).verify(req.body, signatureHeaders(req))).toThrow()
        expect(() => new Webhook(hook.signing_secret).verify(req.body.replace("gdpr", "ccpa"), signatureHeaders(req))).toThrow()
      }
      const log = await settled(t, hook.id, expected.length)
      expect(new Set(r.requests.map((q) => q.headers["webhook-id"]))).toEqual(new Set(log.map((d) => d.id)))
      for (const d of log) {
        const req = requestsOf(r, d.id)
        expect(req).toHaveLength(1)
        expect(d.payload).toEqual(JSON.parse(req[0]!.body))
        expect(d).toMatchObject({ status: "delivered", attempts_count: 1, last_status_code: 204, next_attempt_at: null })
      }
      const one = await deliveryOf(t, log[0].id)
      expect(one.attempts).toHaveLength(1)
      expect(one.attempts[0]).toMatchObject({ delivery_id: log[0].id, status_code: 204, error: null })
    }
  }, 30_000)

  it("2. pending rules: a pending event sends only event.created; its confirmation sends event.updated and user.updated", async () => {
    const t = await op.tenant()
    const r = await track(receiver())
    const hook = await createHook(t, r.url)

    // A pending event that creates a user: event.created and user.created.
    const fresh = await createEvent(t, unique("new"), purposes(["p1", true]), { status: "pending_approval" })
    expect(fresh.status).toBe("pending_approval")
    await r.waitFor(2)
    expect(r.bodies().map((b) => b.type).sort()).toEqual(["event.created", "user.created"])
    expect(r.bodies().find((b) => b.type === "event.created").parameters.entity).toEqual(fresh)

    // An existing user.
    const ouid = unique("user")
    const first = await createEvent(t, ouid, purposes(["p1", true]))
    await r.waitFor(4)
    const userBefore = (await t.call("GET", `/v1/consents/users/${first.user.id}`)).body

    // A pending event on it: event.created only, the user is unchanged.
    server.clock.advance(1000)
    const pending = await createEvent(t, ouid, purposes(["p1", false]), { status: "pending_approval" })
    await r.waitFor(5)
    await sleep(300)
    expect(r.requests).toHaveLength(5)
    expect(r.bodies()[4]).toEqual({ type: "event.created", parameters: { source: { type: "api-key", id: t.key.id }, entity: pending }, regulation: "gdpr" })
    expect((await t.call("GET", `/v1/consents/users/${first.user.id}`)).body).toEqual(userBefore)
    expect((await deliveriesOf(t, hook.id)).map((d) => d.event_type)).toEqual([
      "event.created",
      "user.created",
      "event.created",
      "user.created",
      "event.created"
    ])

    // Its confirmation changes the effective status: event.updated and user.updated (source: the event).
    server.clock.advance(1000)
    const confirmed = await t.call("PATCH", `/v1/consents/events/${pending.id}`, { body: { status: "confirmed" } })
    expect(confirmed.status, confirmed.text).toBe(200)
    const userAfter = (await t.call("GET", `/v1/consents/users/${first.user.id}`)).body
    expect(userAfter.consents.purposes).toEqual(purposes(["p1", false]))
    await r.waitFor(7)
    await settled(t, hook.id, 7)
    await sleep(200)
    expect(r.requests).toHaveLength(7)
    expect(r.bodies().slice(5)).toEqual(expect.arrayContaining([
      {
        type: "event.updated",
        regulation: "gdpr",
        parameters: { source: { type: "api-key", id: t.key.id }, old_entity: pending, new_entity: confirmed.body }
      },
      {
        type: "user.updated",
        regulation: "gdpr",
        parameters: { source: confirmed.body, old_entity: userBefore, new_entity: userAfter }
      }
    ]))
  }, 20_000)

  it("3. filters by event type; ccpa only to a webhook that lists it", async () => {
    const t = await op.tenant()
    const [rUsers, rDefault, rMulti, rCcpa] = await Promise.all([receiver(), receiver(), receiver(), receiver()].map(track))
    const onlyUserCreated = await createHook(t, rUsers!.url, { event_types: ["user.created"] })
    const byDefault = await createHook(t, rDefault!.url)
    const multi = await createHook(t, rMulti!.url, { regulations: ["gdpr", "ccpa"] })
    const ccpaOnly = await createHook(t, rCcpa!.url, { regulations: ["ccpa"], event_types: ["event.created"] })

    const g = await createEvent(t, unique("g"), purposes(["p", true]))
    const c = await createEvent(t, unique("c"), purposes(["p", false]), { regulation: "ccpa" })
    expect(c.regulation).toBe("ccpa")

    await settled(t, onlyUserCreated.id, 1)
    await settled(t, byDefault.id, 2)
    await settled(t, multi.id, 4)
    await settled(t, ccpaOnly.id, 1)
    await sleep(200)
    const seen = (r: Receiver) => r.bodies().map((b) => `${b.type}/${b.regulation}`).sort()
    expect(seen(rUsers!)).toEqual(["user.created/gdpr"])
    expect(seen(rDefault!)).toEqual(["event.created/gdpr", "user.created/gdpr"])
    expect(seen(rMulti!)).toEqual(["event.created/ccpa", "event.created/gdpr", "user.created/ccpa", "user.created/gdpr"])
    expect(seen(rCcpa!)).toEqual(["event.created/ccpa"])
    expect(rCcpa!.bodies()[0].parameters.entity).toEqual(c)
    expect(rDefault!.bodies().find((b) => b.type === "event.created").parameters.entity).toEqual(g)
    // A user entity shows the state of its message's regulation.
    const ccpaUser = rMulti!.bodies().find((b) => b.type === "user.created" && b.regulation === "ccpa").parameters.entity
    expect(ccpaUser).toMatchObject({ id: c.user.id, regulation: "ccpa", consents: { purposes: purposes(["p", false]) } })
    expect(ccpaUser).toEqual((await t.call("GET", `/v1/consents/users/${c.user.id}?regulation=ccpa`)).body)
  }, 20_000)

  it("5. OAuth2 client credentials: a bearer token from the authorization server, reused, refreshed once on 401", async () => {
    const auth = await authServer()
    try {
      const t = await op.tenant()
      const r = await track(receiver())
      const hook = await createHook(t, r.url, {
        event_types: ["event.created"],
        auth: { token_url: auth.tokenUrl, client_id: "cmp-client", client_secret: "s3cret:&=" }
      })
      expect(hook.auth).toEqual({ token_url: auth.tokenUrl, client_id: "cmp-client" })

      // Three deliveries, one token.
      for (let i = 1; i <= 3; i++) {
        await createEvent(t, unique("u"), purposes(["p", true]))
        await r.waitFor(i)
      }
      expect(auth.issued).toHaveLength(1)
      const token = auth.issued[0]!.accessToken
      expect(r.requests.map((q) => q.headers.authorization)).toEqual([1, 2, 3].map(() => `Bearer ${token}`))
      // A JWT the authorization server signed.
      const claims = await verifyJwt(token, auth.jwksUrl)
      expect(claims.iss).toBe(auth.issuer)
      // Client credentials grant with HTTP Basic client authentication.
      expect(auth.issued[0]!.body.grant_type).toBe("client_credentials")
      expect(Buffer.from(auth.issued[0]!.authorization!.replace(/^Basic /, ""), "base64").toString())
        .toBe("cmp-client:s3cret%3A%26%3D")

      // The receiver rejects the token once: a new token, and the call is repeated in the same attempt.
      r.script.push(401)
      await createEvent(t, unique("u"), purposes(["p", true]))
      const all = await r.waitFor(5)
      const [rejected, retried] = all.slice(3)
      expect(rejected!.headers["webhook-id"]).toBe(retried!.headers["webhook-id"])
      expect(rejected!.headers.authorization).toBe(`Bearer ${token}`)
      expect(auth.issued).toHaveLength(2)
      const renewed = auth.issued[1]!.accessToken
      expect(renewed).not.toBe(token)
      expect(retried!.headers.authorization).toBe(`Bearer ${renewed}`)
      await verifyJwt(renewed, auth.jwksUrl)
      const log = await settled(t, hook.id, 4)
      const d = await deliveryOf(t, String(retried!.headers["webhook-id"]))
      expect(d).toMatchObject({ status: "delivered", attempts_count: 1, last_status_code: 204 })
      expect(d.attempts).toHaveLength(1)
      expect(d.attempts[0].status_code).toBe(204)
      expect(log.every((x) => x.status === "delivered")).toBe(true)

      // The renewed token is reused.
      await createEvent(t, unique("u"), purposes(["p", true]))
      await r.waitFor(6)
      expect(r.requests[5]!.headers.authorization).toBe(`Bearer ${renewed}`)
      expect(auth.issued).toHaveLength(2)

      // Refreshed once only: a second 401 ends the attempt (a failure, retried on the schedule).
      r.script.push(401, 401)
      await createEvent(t, unique("u"), purposes(["p", true]))
      await r.waitFor(8)
      await sleep(250)
      expect(r.requests).toHaveLength(8)
      expect(auth.issued).toHaveLength(3)
      expect(r.requests[6]!.headers.authorization).toBe(`Bearer ${renewed}`)
      expect(r.requests[7]!.headers.authorization).toBe(`Bearer ${auth.issued[2]!.accessToken}`)
      const twice = await settled(t, hook.id, 6, (x) => x.status !== "delivering")
      expect(twice[5]).toMatchObject({ status: "pending", attempts_count: 1, last_status_code: 401 })
      expect((await deliveryOf(t, twice[5].id)).attempts).toHaveLength(1)

      // Signatures are there with a token too.
      for (const q of r.requests) verifyAtItsTime(hook.signing_secret, q)
      expect((await t.call("DELETE", `/v1/webhooks/${hook.id}`)).status).toBe(200)
    } finally {
      await auth.close()
    }
  }, 20_000)

  it("6. tenant isolation of the delivery log", async () => {
    const a = await op.tenant()
    const b = await op.tenant()
    const ra = await track(receiver())
    const rb = await track(receiver())
    const hookA = await createHook(a, ra.url)
    const hookB = await createHook(b, rb.url)
    await createEvent(a, unique("ua"), purposes(["p", true]))
    await createEvent(b, unique("ub"), purposes(["p", true]))
    const logA = await settled(a, hookA.id, 2)
    await settled(b, hookB.id, 2)
    const d = logA[0]

    expect404(await b.call("GET", `/v1/webhooks/deliveries/${d.id}`))
    expect404(await b.call("POST", `/v1/webhooks/deliveries/${d.id}/replay`))
    expect404(await b.call("POST", "/v1/webhooks/deliveries/replay", { body: { webhook_id: hookA.id } }))
    expect404(await b.call("GET", `/v1/webhooks/${hookA.id}`))
    expect403(await b.call("GET", `/v1/webhooks/deliveries?organization_id=${a.org.id}`))
    const bList = await b.call("GET", "/v1/webhooks/deliveries?$limit=1000")
    expect(bList.status).toBe(200)
    expect(bList.body.total).toBe(2)
    expect(bList.body.data.every((x: any) => x.organization_id === b.org.id)).toBe(true)
    const aIds = new Set(logA.map((x) => x.id))
    expect(bList.body.data.some((x: any) => aIds.has(x.id))).toBe(false)
    const byHook = await b.call("GET", `/v1/webhooks/deliveries?webhook_id=${hookA.id}`)
    expect(byHook.body.total).toBe(0)
    // Nothing was replayed by B's attempts; A itself reaches its message (the route works): a
    // delivered message is a 409, and is not sent again.
    await sleep(200)
    expect(ra.requests).toHaveLength(2)
    expect409(await a.call("POST", `/v1/webhooks/deliveries/${d.id}/replay`))
    await sleep(200)
    expect(ra.requests).toHaveLength(2)
  }, 20_000)
})

describe(`webhook retries (${storeKind})`, () => {
  const { server, op } = useServer()
  /** Advances server time by one retry interval. Nothing may be in flight (leases are clock time). */
  const nextRetry = () => server.clock.advance(300_000)


  /** Waits until each listed delivery has the attempts count given and is not in flight. */
  const attemptsReach = async (t: Tenant, hookId: string, counts: Record<string, number>, timeoutMs = 5000) => {
    const ids = Object.keys(counts)
    return settled(t, hookId, ids.length, (d) =>
      d.attempts_count === counts[d.id] && (d.status === "pending" || d.status === "failed"), timeoutMs)
  }

  it("4. a 500 is retried every 300 s with the same webhook-id; failed after 5 retries; replay by id and by time range", async () => {
    const t = await op.tenant()
    const r = await track(receiver(500))
    const hook = await createHook(t, r.url, { event_types: ["event.created"] })

    const t1 = server.clock.millis
    await createEvent(t, unique("u"), purposes(["p", true]))
    await r.waitFor(1)
    const m1: string = (await deliveriesOf(t, hook.id))[0].id
    await attemptsReach(t, hook.id, { [m1]: 1 })
    const first = await deliveryOf(t, m1)
    expect(first).toMatchObject({
      status: "pending",
      attempts_count: 1,
      last_status_code: 500,
      next_attempt_at: iso(t1 + 300_000)
    })
    expect(first.attempts).toHaveLength(1)
    expect(first.attempts[0]).toMatchObject({ status_code: 500, attempted_at: iso(t1) })
    expect(r.requests[0]!.headers["webhook-id"]).toBe(m1)

    // Nothing happens before the retry is due.
    server.clock.advance(299_000)
    await sleep(250)
    expect(r.requests).toHaveLength(1)
    server.clock.advance(1_000)
    await r.waitFor(2)
    const [a1, a2] = r.requests
    expect(a2!.headers["webhook-id"]).toBe(m1)
    expect(Number(a2!.headers["webhook-timestamp"]) - Number(a1!.headers["webhook-timestamp"])).toBe(300)
    expect(a2!.headers["webhook-signature"]).not.toBe(a1!.headers["webhook-signature"])
    expect(a2!.body).toBe(a1!.body)
    let counts: Record<string, number> = { [m1]: 2 }
    await attemptsReach(t, hook.id, counts)

    // Three more messages, one minute apart.
    const created: Array<string> = []
    for (let i = 0; i < 3; i++) {
      if (i > 0) server.clock.advance(60_000)
      created.push(iso(server.clock.millis))
      await createEvent(t, unique("u"), purposes(["p", true]))
      const list = await deliveriesOf(t, hook.id)
      counts = { ...counts, [list[list.length - 1].id]: 1 }
      await attemptsReach(t, hook.id, counts)
    }
    const [, m2, m3, m4] = (await deliveriesOf(t, hook.id)).map((d) => d.id) as [string, string, string, string]
    expect((await deliveryOf(t, m2)).created_at).toBe(created[0])
    expect((await deliveryOf(t, m4)).created_at).toBe(created[2])

    // Retry rounds until every message has had 6 attempts (1 + 5 retries).
    for (let round = 0; round < 10 && Object.values(counts).some((c) => c < 6); round++) {
      nextRetry()
      counts = Object.fromEntries(Object.entries(counts).map(([id, c]) => [id, Math.min(6, c + 1)]))
      await attemptsReach(t, hook.id, counts)
    }
    const failed = await deliveryOf(t, m1)
    expect(failed).toMatchObject({ status: "failed", attempts_count: 6, next_attempt_at: null, last_status_code: 500 })
    expect(failed.attempts).toHaveLength(6)
    expect(failed.attempts.every((a: any) => a.status_code === 500)).toBe(true)
    const m1Requests = requestsOf(r, m1)
    expect(m1Requests).toHaveLength(6)
    const stamps = m1Requests.map((q) => Number(q.headers["webhook-timestamp"]))
    expect(stamps).toEqual([...stamps].sort((x, y) => x - y))
    expect(new Set(stamps).size).toBe(6)
    for (const q of m1Requests) expect(verifyAtItsTime(hook.signing_secret, q)).toEqual(JSON.parse(q.body))
    for (const id of [m2, m3, m4]) expect((await deliveryOf(t, id)).status).toBe("failed")

    // Failed messages stay failed: no more attempts however long we wait.
    nextRetry()
    await sleep(250)
    const before = r.requests.length
    expect(before).toBe(24)

    // Replay one message: pending, then delivered once the receiver answers 2xx.
    r.fallback = 204
    const replay = await t.call("POST", `/v1/webhooks/deliveries/${m1}/replay`)
    expect(replay.status, replay.text).toBe(200)
    expect(replay.body).toMatchObject({ id: m1, status: "pending" })
    await r.waitFor(before + 1)
    expect(r.requests[before]!.headers["webhook-id"]).toBe(m1)
    const delivered = await settled(t, hook.id, 4, (d) => d.id !== m1 ? d.status === "failed" : d.status === "delivered")
    expect(delivered.find((d) => d.id === m1)).toMatchObject({ status: "delivered", last_status_code: 204, next_attempt_at: null })
    const m1After = await deliveryOf(t, m1)
    expect(m1After.attempts).toHaveLength(7)
    expect(m1After.attempts[6].status_code).toBe(204)
    // A delivered message is not sent again: its replay is a 409 that changes nothing.
    const again = await t.call("POST", `/v1/webhooks/deliveries/${m1}/replay`)
    expect409(again)
    expect(again.body.message).toMatch(/was delivered: only a failed message can be replayed/)
    expect(await deliveryOf(t, m1)).toMatchObject({ status: "delivered", version: m1After.version })

    // Replay by time range: the failed messages of the webhook created in [from, to], not m4.
    const ranged = await t.call("POST", "/v1/webhooks/deliveries/replay", {
      body: { webhook_id: hook.id, from: created[0], to: created[1] }
    })
    expect(ranged.status, ranged.text).toBe(200)
    expect(ranged.body).toEqual({ webhook_id: hook.id, replayed: 2 })
    await settled(t, hook.id, 4, (d) => (d.id === m4 ? d.status === "failed" : d.status === "delivered"))
    await sleep(250)
    expect(requestsOf(r, m2)).toHaveLength(7)
    expect(requestsOf(r, m3)).toHaveLength(7)
    expect(requestsOf(r, m4)).toHaveLength(6)
    expect(requestsOf(r, m1)).toHaveLength(7)
    expect((await deliveryOf(t, m4))).toMatchObject({ status: "failed", attempts_count: 6 })

    // Without a range: every failed message of the webhook (m4 only now).
    const rest = await t.call("POST", "/v1/webhooks/deliveries/replay", { body: { webhook_id: hook.id } })
    expect(rest.body).toEqual({ webhook_id: hook.id, replayed: 1 })
    await settled(t, hook.id, 4)
  }, 40_000)

  it("4. 410 Gone disables the webhook: no further message is sent to it", async () => {
    const t = await op.tenant()
    const r = await track(receiver(204))
    r.script.push(500, 410)
    const hook = await createHook(t, r.url, { event_types: ["event.created"] })

    await createEvent(t, unique("u"), purposes(["p", true]))
    const [m1] = await settled(t, hook.id, 1, (d) => d.status === "pending" && d.attempts_count === 1)
    await createEvent(t, unique("u"), purposes(["p", true]))
    const log = await settled(t, hook.id, 2, (d) => d.attempts_count === 1 && d.status !== "delivering")
    expect(log[1]).toMatchObject({ status: "failed", last_status_code: 410, next_attempt_at: null })
    expect(r.requests).toHaveLength(2)

    const got = await t.call("GET", `/v1/webhooks/${hook.id}`)
    expect(got.status).toBe(200)
    expect(got.body.enabled).toBe(false)

    // New changes queue nothing for it; the pending retry ends without a call.
    await createEvent(t, unique("u"), purposes(["p", true]))
    nextRetry()
    const after = await settled(t, hook.id, 2, (d) => d.status === "failed")
    expect(after[0]).toMatchObject({ id: m1!.id, attempts_count: 2 })
    const m1Log = await deliveryOf(t, m1!.id)
    expect(m1Log.attempts[1]).toMatchObject({ status_code: null })
    expect(m1Log.attempts[1].error).toMatch(/disabled/)
    await sleep(250)
    expect(r.requests).toHaveLength(2)
  }, 20_000)

  it("4. a 3xx is a failure and the redirect is not followed", async () => {
    const t = await op.tenant()
    const target = await track(receiver(204))
    const r = await track(receiver((_req, res) => {
      res.writeHead(302, { location: target.url })
      res.end()
    }))
    r.script.push((_req, res) => {
      res.writeHead(307, { location: target.url })
      res.end()
    })
    const hook = await createHook(t, r.url, { event_types: ["event.created"] })
    await createEvent(t, unique("u"), purposes(["p", true]))
    await createEvent(t, unique("u"), purposes(["p", true]))
    const log = await settled(t, hook.id, 2, (d) => d.status === "pending" && d.attempts_count === 1)
    expect(log.map((d) => d.last_status_code).sort()).toEqual([302, 307])
    const one = await deliveryOf(t, log[0].id)
    expect([302, 307]).toContain(one.attempts[0].status_code)
    await sleep(250)
    expect(target.requests).toHaveLength(0)
    // Stop the retries of this test before the next one moves the clock.
    expect((await t.call("DELETE", `/v1/webhooks/${hook.id}`)).status).toBe(200)
  }, 20_000)

  it("4. a timeout and a refused connection are attempts with status_code null and an error", async () => {
    const t = await op.tenant()
    const hang = await track(receiver("hang"))
    const port = await closedPort()
    const hHang = await createHook(t, hang.url, { event_types: ["event.created"] })
    const hRefused = await createHook(t, `http://127.0.0.1:${port}/hook`, { event_types: ["event.created"] })
    const t1 = server.clock.millis
    await createEvent(t, unique("u"), purposes(["p", true]))

    const [dRefused] = await settled(t, hRefused.id, 1, (d) => d.status === "pending" && d.attempts_count === 1)
    const refused = await deliveryOf(t, dRefused!.id)
    expect(refused).toMatchObject({ status: "pending", attempts_count: 1, last_status_code: null, next_attempt_at: iso(t1 + 300_000) })
    expect(refused.attempts[0].status_code).toBeNull()
    expect(refused.attempts[0].error).toMatch(/ECONNREFUSED|refused/i)

    const [dHang] = await settled(t, hHang.id, 1, (d) => d.status === "pending" && d.attempts_count === 1, 8000)
    expect(hang.requests).toHaveLength(1)
    const timedOut = await deliveryOf(t, dHang!.id)
    expect(timedOut).toMatchObject({ status: "pending", attempts_count: 1, last_status_code: null, next_attempt_at: iso(t1 + 300_000) })
    expect(timedOut.attempts[0].status_code).toBeNull()
    expect(timedOut.attempts[0].error).toMatch(/timeout/i)
    expect(timedOut.attempts[0].duration_ms).toBeGreaterThanOrEqual(900)

    // The next attempt is recorded the same way.
    nextRetry()
    const again = await settled(t, hRefused.id, 1, (d) => d.status === "pending" && d.attempts_count === 2)
    const refused2 = await deliveryOf(t, again[0].id)
    expect(refused2.attempts.map((a: any) => a.status_code)).toEqual([null, null])
    expect(refused2.attempts[1].error).toMatch(/ECONNREFUSED|refused/i)
    await settled(t, hHang.id, 1, (d) => d.status === "pending" && d.attempts_count === 2, 8000)
    expect(hang.requests).toHaveLength(2)
    expect(hang.requests[1]!.headers["webhook-id"]).toBe(dHang!.id)
  }, 30_000)
})
