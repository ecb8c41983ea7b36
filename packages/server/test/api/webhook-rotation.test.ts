import { Webhook } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import {
  createEvent,
  createHook,
  expect403,
  expect404,
  expectError,
  purposes,
  type Received,
  type Receiver,
  receiver,
  settled,
  storeKind,
  type Tenant,
  trackedReceivers,
  unique,
  useServer,
  verifyAtItsTime
} from "../helpers.js"
import { call } from "./helpers.js"

/**
 * Rotating a webhook's signing secret (`POST /v1/webhooks/:id/rotate-secret`) while messages
 * flow: none is lost or sent twice, each verifies with the old secret until the overlap ends
 * and with the new one from the rotation on (as a receiver verifies, with the standardwebhooks
 * library), and after the overlap only the new secret signs, retries included. Who may rotate,
 * what `overlap_s` may be, and that no secret reaches the server's log.
 */

// The server's log lines, for the last test: read from the console from before the server
// starts, and handed on to the run's log (searched for personal data after the run).
const lines: Array<string> = []
beforeAll(() => {
  const original = console.log.bind(console)
  vi.spyOn(console, "log").mockImplementation((...args: Array<unknown>) => {
    lines.push(args.map(String).join(" "))
    original(...args)
  })
})
afterAll(() => {
  vi.restoreAllMocks()
})

const track = trackedReceivers()
const { server, op } = useServer({ logLevel: "Debug" })

/** Every secret shown in this file: none may be in the server's log. */
const shown: Array<string> = []
const remember = (secret: string) => {
  expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/)
  shown.push(secret)
  return secret
}

const rotate = (t: Tenant, id: string, body?: unknown) =>
  t.call("POST", `/v1/webhooks/${encodeURIComponent(id)}/rotate-secret`, body === undefined ? {} : { body })

const rotated = async (t: Tenant, id: string, body?: unknown) => {
  const r = await rotate(t, id, body)
  expect(r.status, r.text).toBe(200)
  expect(r.headers.get("cache-control")).toContain("no-store")
  remember(r.body.signing_secret)
  return r.body
}

/** The signatures of a request's `webhook-signature`, in order. */
const signaturesOf = (req: Received) => String(req.headers["webhook-signature"]).split(" ")

const verifies = (secret: string, req: Received) => {
  try {
    verifyAtItsTime(secret, req)
    return true
  } catch {
    return false
  }
}

/** Each message's requests, by `webhook-id`. */
const byMessage = (r: Receiver) => {
  const out = new Map<string, Array<Received>>()
  for (const q of r.requests) {
    const id = String(q.headers["webhook-id"])
    out.set(id, [...(out.get(id) ?? []), q])
  }
  return out
}

/** Creates `n` events of new users one after another (two messages each: event.created, user.created). */
const events = async (t: Tenant, n: number) => {
  for (let i = 0; i < n; i++) await createEvent(t, unique("rot-user"), purposes(["analytics", i % 2 === 0]))
}

const webhookOf = async (t: Tenant, id: string) => {
  const r = await t.call("GET", `/v1/webhooks/${encodeURIComponent(id)}`)
  expect(r.status, r.text).toBe(200)
  return r.body
}

describe(`rotating a webhook's signing secret (${storeKind})`, () => {
  it("messages flowing across a rotation: each delivered once, verifying with the old secret during the overlap and the new one from the rotation on; then only the new one, retries included", async () => {
    const t = await op.tenant()
    const r = await track(receiver())
    const hook = await createHook(t, r.url)
    const oldSecret = remember(hook.signing_secret)
    expect(hook.previous_secret_expires_at).toBeNull()

    // Before: one signature, the old secret's.
    await events(t, 3)
    const before = await settled(t, hook.id, 6)

    // Messages keep coming while the secret is rotated.
    const during = events(t, 6)
    const at = server.clock.millis
    const answer = await rotated(t, hook.id, { overlap_s: 600 })
    await during
    expect(answer).toMatchObject({ id: hook.id, organization_id: t.org.id, url: r.url, version: hook.version + 1 })
    const newSecret = answer.signing_secret
    expect(newSecret).not.toBe(oldSecret)
    expect(Date.parse(answer.previous_secret_expires_at)).toBe(at + 600_000)
    const flowing = await settled(t, hook.id, 18)

    // From here on every message is queued after the rotation: both signatures, new one first.
    await events(t, 3)
    const after = await settled(t, hook.id, 24)
    const afterIds = new Set(after.map((d) => d.id).filter((id) => !flowing.some((d) => d.id === id)))
    expect(afterIds.size).toBe(6)

    // The webhook shows when the overlap ends, and shows the secret to nobody.
    const shownDuring = await webhookOf(t, hook.id)
    expect(shownDuring.previous_secret_expires_at).toBe(answer.previous_secret_expires_at)
    expect(shownDuring).not.toHaveProperty("signing_secret")
    const listed = await t.call("GET", `/v1/webhooks?id=${encodeURIComponent(hook.id)}`)
    expect(listed.body.data[0].previous_secret_expires_at).toBe(answer.previous_secret_expires_at)

    // A message whose first attempt fails during the overlap...
    r.script.push(500)
    await events(t, 1)
    await r.waitFor(26)
    const failedId = String(r.requests[24]!.headers["webhook-id"])
    expect(signaturesOf(r.requests[24]!)).toHaveLength(2)
    const overlapped = await settled(t, hook.id, 26, (d) => d.status === "delivered" || (d.id === failedId && d.status === "pending"))
    const known = new Set(overlapped.map((d) => d.id))

    // ...is retried after it: the overlap is over, only the new secret signs.
    server.clock.advance(601_000)
    await events(t, 2)
    const log = await settled(t, hook.id, 30)
    const shownAfter = await webhookOf(t, hook.id)
    expect(shownAfter.previous_secret_expires_at).toBeNull()
    expect(shownAfter.version).toBe(answer.version)

    // Every message was delivered once: one request each (two for the one answered 500).
    const requests = byMessage(r)
    expect(new Set(requests.keys())).toEqual(new Set(log.map((d) => d.id)))
    for (const d of log) {
      expect(d, d.id).toMatchObject({ status: "delivered", attempts_count: d.id === failedId ? 2 : 1 })
      expect(requests.get(d.id), d.id).toHaveLength(d.id === failedId ? 2 : 1)
    }
    const last = (id: string) => requests.get(id)!.at(-1)!
    for (const d of before) {
      expect(signaturesOf(last(d.id))).toHaveLength(1)
      expect(verifies(oldSecret, last(d.id))).toBe(true)
      expect(verifies(newSecret, last(d.id))).toBe(false)
    }
    // During the overlap, whichever side of the rotation: the old secret verifies.
    for (const d of flowing) expect(verifies(oldSecret, last(d.id)), d.id).toBe(true)
    for (const id of afterIds) {
      const q = last(id)
      expect(signaturesOf(q)).toHaveLength(2)
      expect(new Webhook(newSecret).sign(id, new Date(Number(q.headers["webhook-timestamp"]) * 1000), q.body)).toBe(signaturesOf(q)[0])
      expect(verifies(newSecret, q)).toBe(true)
      expect(verifies(oldSecret, q)).toBe(true)
    }
    const [failedFirst, failedRetry] = requests.get(failedId)!
    expect(verifies(oldSecret, failedFirst!)).toBe(true)
    expect(verifies(newSecret, failedFirst!)).toBe(true)
    expect(signaturesOf(failedRetry!)).toHaveLength(1)
    expect(verifies(newSecret, failedRetry!)).toBe(true)
    expect(verifies(oldSecret, failedRetry!)).toBe(false)
    const afterOverlap = log.filter((d) => !known.has(d.id))
    expect(afterOverlap).toHaveLength(4)
    for (const d of afterOverlap) {
      expect(signaturesOf(last(d.id))).toHaveLength(1)
      expect(verifies(newSecret, last(d.id))).toBe(true)
      expect(verifies(oldSecret, last(d.id))).toBe(false)
    }
  }, 60_000)

  it("without a body the overlap is a day; overlap_s 0 stops the old secret at once", async () => {
    const t = await op.tenant()
    const r = await track(receiver())
    const hook = await createHook(t, r.url)
    remember(hook.signing_secret)

    const at = server.clock.millis
    const daily = await rotated(t, hook.id)
    expect(Date.parse(daily.previous_secret_expires_at)).toBe(at + 86_400_000)

    const now = await rotated(t, hook.id, { overlap_s: 0 })
    expect(now.previous_secret_expires_at).toBeNull()
    expect((await webhookOf(t, hook.id)).previous_secret_expires_at).toBeNull()
    await events(t, 1)
    const [q1, q2] = await r.waitFor(2)
    for (const q of [q1!, q2!]) {
      expect(signaturesOf(q)).toHaveLength(1)
      expect(verifies(now.signing_secret, q)).toBe(true)
      expect(verifies(daily.signing_secret, q)).toBe(false)
      expect(verifies(hook.signing_secret, q)).toBe(false)
    }
  })

  it("rotating again during an overlap: the secret it replaces signs beside the new one, the one before stops", async () => {
    const t = await op.tenant()
    const r = await track(receiver())
    const hook = await createHook(t, r.url)
    remember(hook.signing_secret)
    const first = await rotated(t, hook.id, { overlap_s: 3000 })
    server.clock.advance(1000)
    const at = server.clock.millis
    const second = await rotated(t, hook.id, { overlap_s: 120 })
    // The overlap is the second rotation's own.
    expect(Date.parse(second.previous_secret_expires_at)).toBe(at + 120_000)
    await events(t, 1)
    for (const q of await r.waitFor(2)) {
      expect(signaturesOf(q)).toHaveLength(2)
      expect(verifies(second.signing_secret, q)).toBe(true)
      expect(verifies(first.signing_secret, q)).toBe(true)
      expect(verifies(hook.signing_secret, q)).toBe(false)
    }
  })

  it("who may rotate: the organization's clients and the operator; another organization's webhook is a 404, an end user's credential is refused, and nothing of the webhook changes", async () => {
    const a = await op.tenant()
    const b = await op.tenant()
    const rb = await track(receiver())
    const hookB = await createHook(b, rb.url)
    remember(hookB.signing_secret)
    const hookA = await createHook(a, "http://127.0.0.1:9/a")
    remember(hookA.signing_secret)

    // A's client on B's webhook: as for an id that does not exist, with or without a body.
    for (const body of [undefined, { overlap_s: 0 }, { overlap_s: 600 }]) {
      const theirs = await rotate(a, hookB.id, body)
      expect404(theirs)
      const none = await rotate(a, `${hookB.id}0`, body)
      expect(none.status).toBe(404)
      expect(theirs.body.message).toBe(`No webhook found for id '${hookB.id}'`)
      expect(theirs.text).not.toContain("whsec_")
    }
    // Naming B's organization in the query changes nothing.
    expect404(await a.call("POST", `/v1/webhooks/${hookB.id}/rotate-secret?organization_id=${b.org.id}`))

    // End users' credentials: A's public key (401) and a consent token of A's user (403).
    const user = unique("rot-token-user")
    await createEvent(a, user, purposes(["analytics", true]))
    const granted = await a.call("POST", "/v1/consents/tokens", { body: { organization_id: a.org.id, organization_user_id: user } })
    expect(granted.status, granted.text).toBe(201)
    for (const id of [hookA.id, hookB.id]) {
      const url = `/v1/webhooks/${id}/rotate-secret`
      expectError(await call(server.url, "POST", url, { headers: { "x-public-api-key": a.org.public_api_key } }), 401, "NotAuthenticated", "not-authenticated")
      expectError(await call(server.url, "POST", `${url}?public_api_key=${a.org.public_api_key}`), 401, "NotAuthenticated", "not-authenticated")
      expect403(await call(server.url, "POST", url, { token: granted.body.id_token }))
    }

    // No token at all.
    expectError(await call(server.url, "POST", `/v1/webhooks/${hookA.id}/rotate-secret`), 401, "NotAuthenticated", "not-authenticated")

    // An organization without the premium feature `webhooks`: 403, as for the webhook itself.
    const c = await op.tenant()
    const hookC = await createHook(c, "http://127.0.0.1:9/c")
    remember(hookC.signing_secret)
    const flags = await op.featuresOf(c.org.id)
    expect((await op.call("PATCH", `/v1/premium-features/${flags.id}`, { body: { webhooks: false } })).status).toBe(200)
    expect403(await rotate(c, hookC.id))
    expect403(await rotate(c, hookC.id, { overlap_s: -1 }))

    // B's webhook is as it was, and B's messages still carry B's one secret.
    const stillB = await webhookOf(b, hookB.id)
    expect(stillB).toMatchObject({ version: hookB.version, updated_at: hookB.updated_at, previous_secret_expires_at: null })
    await events(b, 1)
    for (const q of await rb.waitFor(2)) {
      expect(signaturesOf(q)).toHaveLength(1)
      expect(verifies(hookB.signing_secret, q)).toBe(true)
    }

    // The organization's own client, and the operator, may.
    const own = await rotated(a, hookA.id, { overlap_s: 60 })
    expect(own.organization_id).toBe(a.org.id)
    const byOperator = await op.call("POST", `/v1/webhooks/${hookA.id}/rotate-secret`, { body: { overlap_s: 60 } })
    expect(byOperator.status, byOperator.text).toBe(200)
    remember(byOperator.body.signing_secret)
    expect(byOperator.body.version).toBe(own.version + 1)
  })

  it("overlap_s: an integer from 0 to 604800, else a 400 naming it; nothing else in the body; output only elsewhere", async () => {
    const t = await op.tenant()
    const hook = await createHook(t, "http://127.0.0.1:9/bad")
    remember(hook.signing_secret)
    for (const overlap of [-1, 604_801, 1.5, "60", null, true, [60], { s: 60 }]) {
      const r = await rotate(t, hook.id, { overlap_s: overlap })
      expectError(r, 400, "BadRequest", "bad-request")
      expect(Object.keys(r.body.errors), JSON.stringify(overlap)).toEqual(["overlap_s"])
      expect(r.body.message).toContain("overlap_s")
    }
    const extra = await rotate(t, hook.id, { overlap_s: 60, signing_secret: "whsec_AAAA" })
    expectError(extra, 400, "BadRequest", "bad-request")
    expect(Object.keys(extra.body.errors)).toEqual(["signing_secret"])
    expectError(await rotate(t, hook.id, [60]), 400, "BadRequest", "bad-request")
    // Nothing of it changed the webhook.
    expect((await webhookOf(t, hook.id)).version).toBe(hook.version)

    const longest = await rotated(t, hook.id, { overlap_s: 604_800 })
    expect(Date.parse(longest.previous_secret_expires_at)).toBe(server.clock.millis + 604_800_000)

    // The end of an overlap is not written through the webhook's own writes.
    for (const method of ["PATCH", "PUT"] as const) {
      const body = { url: "http://127.0.0.1:9/bad", enabled: true, event_types: [], flatten: false, regulations: ["gdpr"], previous_secret_expires_at: null }
      const r = await t.call(method, `/v1/webhooks/${hook.id}`, { body })
      expectError(r, 400, "BadRequest", "bad-request")
      expect(Object.keys(r.body.errors)).toContain("previous_secret_expires_at")
    }
    // An update keeps the overlap.
    const patched = await t.call("PATCH", `/v1/webhooks/${hook.id}`, { body: { enabled: false } })
    expect(patched.status, patched.text).toBe(200)
    expect(patched.body.previous_secret_expires_at).toBe(longest.previous_secret_expires_at)
    expect(patched.body).not.toHaveProperty("signing_secret")
  })

  it("no secret, old or new, is ever in the server's log", async () => {
    expect(shown.length).toBeGreaterThan(10)
    const all = lines.join("\n")
    expect(all).toContain("/v1/webhooks/:id/rotate-secret")
    for (const secret of shown) {
      expect(all).not.toContain(secret)
      expect(all).not.toContain(secret.slice("whsec_".length))
    }
  })
})
