import { saveSubscriber } from "@cmp/core"
import { organizationUserIdAuth } from "@cmp/platform"
import * as crypto from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DISPATCHER, receiver, type Receiver } from "../helpers.js"
import { call, type CallOptions, expect400, expect401, expect403, expect409, expectError, type Reply, unique } from "./helpers.js"
import { type TestTenant, useServer } from "./fixture.js"

/**
 * Consent events recorded from browsers and apps with the organization's public key: how the key
 * is sent and what it reaches, the body it takes and the answer it gives, guests and the users
 * the organization vouches for with a signed id, and what follows a write (not an API request;
 * a webhook message whose source is the key, never its value).
 */

/** Every write of a file comes from one address: the rate limits have their own file. */
const unlimited = { publicRateLimit: { perKey: 1_000_000, perAddress: 1_000_000 } }
const { server, op, tenant } = useServer({ webhookAllowHosts: ["127.0.0.1"], ...unlimited })

const GUEST = { store_guest_cmp_consents: true }
const KNOWN = { store_cmp_consents: true }
/** `consents_api` lets the organization's backend read what its pages recorded. */
const BACKEND = { consents_api: true, webhooks: true }
const ANSWER = ["created_at", "id", "regulation", "status"]

const purposes = (...list: Array<[string, boolean]>) => list.map(([id, enabled]) => ({ id, enabled }))

const keyOf = (t: TestTenant): string => t.org.public_api_key

interface PublicOptions {
  /** The key in `?public_api_key=` instead of the header. */
  readonly query?: boolean
  /** Sent as is instead of the body's JSON. */
  readonly rawBody?: string
  readonly headers?: Record<string, string>
}

/** A write as a page sends it: the key and a JSON body, no bearer. */
const publicWrite = (key: string, body: unknown, options: PublicOptions = {}) =>
  call(server.url, "POST", options.query ? `/v1/consents/events?public_api_key=${encodeURIComponent(key)}` : "/v1/consents/events", {
    rawBody: options.rawBody ?? JSON.stringify(body),
    headers: { ...(options.query ? {} : { "x-public-api-key": key }), ...options.headers }
  })

/** Any request with the public key alone, by header or by query. */
const withKey = (key: string, method: string, path: string, how: "header" | "query", options: CallOptions = {}) => {
  const url = how === "query" ? `${path}${path.includes("?") ? "&" : "?"}public_api_key=${encodeURIComponent(key)}` : path
  return call(server.url, method, url, { ...options, headers: { ...(how === "header" ? { "x-public-api-key": key } : {}), ...options.headers } })
}

const guestEvent = (t: TestTenant, userId: string = unique("device"), extra: Record<string, unknown> = {}) => ({
  organization_id: t.org.id,
  user: { id: userId },
  consents: { purposes: purposes(["analytics", true]) },
  ...extra
})

const knownEvent = (t: TestTenant, organizationUserId: string, auth: unknown, extra: Record<string, unknown> = {}) => ({
  organization_id: t.org.id,
  user: { organization_user_id: organizationUserId, ...(auth === undefined ? {} : { organization_user_id_auth: auth }) },
  consents: { purposes: purposes(["analytics", true]) },
  ...extra
})

/** The lowercase hex HMAC-SHA256 of the id, the salt and the expiration, keyed with the Secret's value. */
const digestOf = (secret: string, organizationUserId: string, salt?: string, expiration?: number) =>
  crypto
    .createHmac("sha256", Buffer.from(secret, "utf8"))
    .update(organizationUserId + (salt ?? "") + (expiration === undefined ? "" : String(expiration)), "utf8")
    .digest("hex")

const authOf = (secret: { id: string; secret: string }, organizationUserId: string, salt?: string, expiration?: number) => ({
  algorithm: "hmac-sha256",
  secret_id: secret.id,
  digest: digestOf(secret.secret, organizationUserId, salt, expiration),
  ...(salt === undefined ? {} : { salt }),
  ...(expiration === undefined ? {} : { expiration })
})

/** `hmac-sha256-v2`: the id, the salt and the expiration joined by a newline. */
const digestV2Of = (secret: string, organizationUserId: string, salt?: string, expiration?: number) =>
  crypto
    .createHmac("sha256", Buffer.from(secret, "utf8"))
    .update([organizationUserId, salt ?? "", expiration === undefined ? "" : String(expiration)].join("\n"), "utf8")
    .digest("hex")

const authV2Of = (secret: { id: string; secret: string }, organizationUserId: string, salt?: string, expiration?: number) => ({
  algorithm: "hmac-sha256-v2",
  secret_id: secret.id,
  digest: digestV2Of(secret.secret, organizationUserId, salt, expiration),
  ...(salt === undefined ? {} : { salt }),
  ...(expiration === undefined ? {} : { expiration })
})

/** A Secret of the organization, with its value as shown once. */
const secretOf = async (t: TestTenant, extra: Record<string, unknown> = {}): Promise<{ id: string; secret: string }> => {
  const r = await t.call("POST", "/v1/secrets", { body: { organization_id: t.org.id, name: unique("signing"), ...extra } })
  expect(r.status, r.text).toBe(201)
  expect(r.body.secret).toEqual(expect.any(String))
  return { id: r.body.id, secret: r.body.secret }
}

/** The server's time, in the unix seconds of `expiration`. */
const nowSeconds = () => Math.floor(server.clock.millis / 1000)

const expectCreated = (r: Reply, what = "") => {
  expect(r.status, `${what} ${r.text}`).toBe(201)
  expect(Object.keys(r.body).sort(), what).toEqual(ANSWER)
}

/** The event as the organization's backend reads it. */
const eventAsBackend = async (t: TestTenant, id: string) => {
  const r = await t.call("GET", `/v1/consents/events/${encodeURIComponent(id)}`)
  expect(r.status, r.text).toBe(200)
  return r.body
}

/** The event as the operator reads it (for organizations without `consents_api`). */
const eventAsOperator = async (t: TestTenant, id: string) => {
  const r = await op.call("GET", `/v1/consents/events/${encodeURIComponent(id)}?organization_id=${t.org.id}`)
  expect(r.status, r.text).toBe(200)
  return r.body
}

const countEvents = async (t: TestTenant, filter = "") => {
  const r = await op.call("GET", `/v1/consents/events?organization_id=${t.org.id}${filter}&$limit=0`)
  expect(r.status, r.text).toBe(200)
  return r.body.total as number
}

const expectNoUser = async (t: TestTenant, organizationUserId: string) => {
  const r = await op.call("GET", `/v1/consents/users/${encodeURIComponent(organizationUserId)}?$by_organization_user_id=true&organization_id=${t.org.id}`)
  expect(r.status, `${organizationUserId}: ${r.text}`).toBe(404)
}

describe("the public key", () => {
  let t: TestTenant
  beforeAll(async () => {
    t = await tenant({ ...GUEST, ...BACKEND })
  })

  it("records an event by header or by ?public_api_key=, for the key's organization", async () => {
    expect(keyOf(t)).toMatch(/^pk_/)
    for (const query of [false, true]) {
      const r = await publicWrite(keyOf(t), guestEvent(t), { query })
      expectCreated(r, query ? "query" : "header")
      const stored = await eventAsBackend(t, r.body.id)
      expect(stored).toMatchObject({ id: r.body.id, organization_id: t.org.id, status: "confirmed", regulation: "gdpr" })
    }
  })

  it("an unknown key is 401, by header or by query; a public key is no bearer", async () => {
    const before = await countEvents(t)
    for (const key of [`pk_${"x".repeat(32)}`, `${keyOf(t)}x`, keyOf(t).slice(0, -1), "not-a-key"]) {
      for (const query of [false, true]) expect401(await publicWrite(key, guestEvent(t), { query }))
    }
    expect401(await call(server.url, "POST", "/v1/consents/events", { token: keyOf(t), body: guestEvent(t) }))
    expect(await countEvents(t)).toBe(before)
  })

  it("the key of a removed organization is unknown: 401", async () => {
    const gone = await tenant(GUEST)
    expectCreated(await publicWrite(keyOf(gone), guestEvent(gone)))
    const removed = await op.call("DELETE", `/v1/organizations/${gone.org.id}`)
    expect(removed.status, removed.text).toBe(200)
    for (const query of [false, true]) expect401(await publicWrite(keyOf(gone), guestEvent(gone), { query }))
  })

  it("reaches nothing else: every other method and path is 401 and changes nothing", async () => {
    const ouid = unique("crm")
    const pending = await t.call("POST", "/v1/consents/events", {
      body: { organization_id: t.org.id, user: { organization_user_id: ouid }, consents: { purposes: purposes(["p", true]) }, status: "pending_approval" }
    })
    expect(pending.status, pending.text).toBe(201)
    const eventId = pending.body.id as string
    const userId = pending.body.user.id as string
    const property = await t.call("POST", "/v1/properties", { body: { organization_id: t.org.id, name: "Shop", website: "https://shop.example.com" } })
    expect(property.status, property.text).toBe(201)
    const requests: ReadonlyArray<readonly [string, string, unknown?]> = [
      ["GET", "/v1/consents/events"],
      ["GET", `/v1/consents/events?user_id=${userId}`],
      ["GET", `/v1/consents/events/${eventId}`],
      ["PATCH", `/v1/consents/events/${eventId}`, { status: "confirmed" }],
      ["DELETE", `/v1/consents/events/${eventId}`],
      ["GET", "/v1/consents/users"],
      ["GET", `/v1/consents/users/${userId}`],
      ["GET", `/v1/consents/users/${encodeURIComponent(ouid)}?$by_organization_user_id=true`],
      ["POST", "/v1/consents/users", { organization_id: t.org.id, organization_user_id: unique("crm") }],
      ["PATCH", `/v1/consents/users/${userId}`, { country: "FR" }],
      ["DELETE", `/v1/consents/users/${userId}`],
      ["POST", "/v1/consents/tokens", { organization_id: t.org.id, organization_user_id: ouid }],
      ["GET", `/v1/consents/log/verify?organization_id=${t.org.id}`],
      ["GET", "/v1/properties"],
      ["POST", "/v1/properties", { organization_id: t.org.id, name: "Other", website: "https://other.example.com" }],
      ["PATCH", `/v1/properties/${property.body.id}`, { name: "Renamed" }],
      ["DELETE", `/v1/properties/${property.body.id}`],
      ["GET", `/v1/organizations/${t.org.id}`],
      ["PATCH", `/v1/organizations/${t.org.id}`, { name: unique("renamed") }],
      ["GET", "/v1/keys"],
      ["POST", "/v1/keys", { organization_id: t.org.id, name: unique("key") }],
      ["GET", "/v1/secrets"],
      ["POST", "/v1/secrets", { organization_id: t.org.id, name: unique("secret") }],
      ["POST", "/v1/webhooks", { organization_id: t.org.id, url: "https://hooks.example.com/h" }],
      ["GET", "/v1/premium-features"]
    ]
    for (const how of ["header", "query"] as const) {
      for (const [method, path, body] of requests) {
        const r = await withKey(keyOf(t), method, path, how, body === undefined ? {} : { body })
        expect([how, method, path, r.status], r.text).toEqual([how, method, path, 401])
        expect401(r)
      }
    }
    // Nothing was changed or made.
    expect(await eventAsBackend(t, eventId)).toMatchObject({ status: "pending_approval", version: 1 })
    const user = await t.call("GET", `/v1/consents/users/${userId}`)
    expect(user.status, user.text).toBe(200)
    expect(user.body.country ?? null).toBeNull()
    const kept = await t.call("GET", `/v1/properties/${property.body.id}`)
    expect(kept.body).toMatchObject({ name: "Shop", version: 1 })
    expect((await t.call("GET", "/v1/properties")).body.total).toBe(1)
    expect((await t.call("GET", `/v1/organizations/${t.org.id}`)).body.name).toBe(t.org.name)
    expect((await t.call("GET", "/v1/secrets")).body.total).toBe(0)
  })

  it("with a bearer too, the bearer decides and the key is ignored", async () => {
    const other = await tenant({ ...GUEST, ...BACKEND })
    const headers = { "x-public-api-key": keyOf(other) }
    // A backend write: its organization, its full answer, an import's created_at kept.
    const body = { ...guestEvent(t), user: { organization_user_id: unique("crm") }, created_at: "2020-01-01T00:00:00.000Z" }
    const r = await call(server.url, "POST", "/v1/consents/events", { token: t.token, body, headers })
    expect(r.status, r.text).toBe(201)
    expect(r.body).toMatchObject({ organization_id: t.org.id, created_at: "2020-01-01T00:00:00.000Z", version: 1 })
    expect(r.body.user).toMatchObject({ organization_user_id: body.user.organization_user_id })
    // The key's organization is another one: the bearer may not write there.
    expect403(await call(server.url, "POST", "/v1/consents/events", { token: t.token, body: guestEvent(other), headers }))
    const queried = await call(server.url, "POST", `/v1/consents/events?public_api_key=${encodeURIComponent(keyOf(other))}`, {
      token: t.token,
      body: guestEvent(other)
    })
    expect403(queried)
    // The bearer reads as it always does, the key beside it or not.
    const list = await call(server.url, "GET", "/v1/consents/events", { token: t.token, headers })
    expect(list.status, list.text).toBe(200)
    expect(list.body.data.every((e: any) => e.organization_id === t.org.id)).toBe(true)
    // A bearer that is not valid is a 401 whatever key comes with it.
    for (const token of ["garbage", `${t.token}x`]) {
      expect401(await call(server.url, "POST", "/v1/consents/events", { token, body: guestEvent(other), headers }))
    }
    expect(await countEvents(other)).toBe(0)
  })
})

describe("what a public write takes and answers", () => {
  let t: TestTenant
  beforeAll(async () => {
    t = await tenant({ ...GUEST, ...BACKEND })
  })

  it("201 with id, created_at, status and regulation only; created_at is the server's time", async () => {
    const r = await publicWrite(keyOf(t), guestEvent(t, unique("device"), {
      created_at: "2001-02-03T04:05:06.000Z",
      metadata: { page: "/checkout" },
      regulation: "ccpa"
    }))
    expectCreated(r)
    const now = new Date(server.clock.millis).toISOString()
    expect(r.body).toEqual({ id: expect.any(String), created_at: now, status: "confirmed", regulation: "ccpa" })
    const stored = await eventAsBackend(t, r.body.id)
    expect(stored).toMatchObject({ id: r.body.id, created_at: now, status: "confirmed", regulation: "ccpa", metadata: { page: "/checkout" } })
    // The defaults.
    const plain = await publicWrite(keyOf(t), guestEvent(t))
    expectCreated(plain)
    expect(plain.body).toMatchObject({ status: "confirmed", regulation: "gdpr", created_at: now })
  })

  it("a client id is kept; the same id again is 409 and changes nothing", async () => {
    const id = unique("beacon")
    const device = unique("device")
    const first = await publicWrite(keyOf(t), guestEvent(t, device, { id }))
    expectCreated(first)
    expect(first.body.id).toBe(id)
    expect((await eventAsBackend(t, id)).user.id).toBe(device)
    const again = await publicWrite(keyOf(t), guestEvent(t, unique("device"), { id, consents: { purposes: purposes(["analytics", false]) } }), { query: true })
    expect409(again)
    const kept = await eventAsBackend(t, id)
    expect(kept.user.id).toBe(device)
    expect(kept.consents.purposes).toEqual(purposes(["analytics", true]))
  })

  it("JSON sent as text/plain is taken; another media type is 415; a backend's text/plain is still 415", async () => {
    for (const type of ["text/plain", "text/plain;charset=UTF-8", "application/json; charset=utf-8"]) {
      for (const query of [false, true]) {
        expectCreated(await publicWrite(keyOf(t), guestEvent(t), { query, headers: { "content-type": type } }), type)
      }
    }
    const before = await countEvents(t)
    for (const type of ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/html", "application/xml"]) {
      const r = await publicWrite(keyOf(t), guestEvent(t), { headers: { "content-type": type } })
      expectError(r, 415, "UnsupportedMediaType", "unsupported-media-type")
    }
    const backend = await call(server.url, "POST", "/v1/consents/events", {
      token: t.token,
      rawBody: JSON.stringify(guestEvent(t)),
      headers: { "content-type": "text/plain" }
    })
    expectError(backend, 415, "UnsupportedMediaType", "unsupported-media-type")
    expect(await countEvents(t)).toBe(before)
  })

  it("at most 64 KiB: a body of 65,536 bytes is taken, one byte more is 413; a backend may still send 100 KiB", async () => {
    /** A guest event of exactly `size` bytes of JSON. */
    const sized = (size: number) => {
      const device = unique("device")
      const base = JSON.stringify(guestEvent(t, device, { metadata: { pad: "" } }))
      const text = JSON.stringify(guestEvent(t, device, { metadata: { pad: "x".repeat(size - base.length) } }))
      expect(Buffer.byteLength(text)).toBe(size)
      return text
    }
    for (const query of [false, true]) {
      expectCreated(await publicWrite(keyOf(t), undefined, { query, rawBody: sized(64 * 1024) }), "64 KiB")
      const over = await publicWrite(keyOf(t), undefined, { query, rawBody: sized(64 * 1024 + 1) })
      expectError(over, 413, "PayloadTooLarge", "payload-too-large")
      const asText = await publicWrite(keyOf(t), undefined, { query, rawBody: sized(100 * 1024), headers: { "content-type": "text/plain" } })
      expectError(asText, 413, "PayloadTooLarge", "payload-too-large")
    }
    const backend = await call(server.url, "POST", "/v1/consents/events", {
      token: t.token,
      // The event's own metadata keeps its 64 KiB bound; the user's carries the rest.
      body: {
        ...guestEvent(t),
        user: { organization_user_id: unique("crm"), metadata: { pad: "y".repeat(40 * 1024) } },
        metadata: { pad: "x".repeat(60 * 1024) }
      }
    })
    expect(backend.status, backend.text.slice(0, 300)).toBe(201)
  })

  it("malformed JSON is a 400 in the contract's error body, as JSON or as text", async () => {
    const before = await countEvents(t)
    for (const raw of ["{", "{\"user\": }", "not json", "", "[]", "null"]) {
      for (const type of ["application/json", "text/plain"]) {
        const r = await publicWrite(keyOf(t), undefined, { rawBody: raw, headers: { "content-type": type } })
        expect([raw, type, r.status]).toEqual([raw, type, 400])
        expect400(r)
      }
    }
    expect(await countEvents(t)).toBe(before)
  })

  it("a delegate in the body is ignored", async () => {
    const r = await publicWrite(keyOf(t), guestEvent(t, unique("device"), { delegate: { id: "rep-1", name: "Mallory" } }))
    expectCreated(r)
    expect((await eventAsBackend(t, r.body.id)).delegate ?? null).toBeNull()
  })

  it("the event is the key's organization's whatever organization the body names", async () => {
    const other = await tenant({ ...GUEST, ...BACKEND })
    const device = unique("device")
    const r = await publicWrite(keyOf(t), guestEvent(other, device))
    expect([201, 400, 403], r.text).toContain(r.status)
    expect(await countEvents(other)).toBe(0)
    if (r.status === 201) expect((await eventAsBackend(t, r.body.id)).organization_id).toBe(t.org.id)
  })
})

describe("guests (a user without organization_user_id)", () => {
  it("need store_guest_cmp_consents, and nothing else: not consents_api", async () => {
    const refused: Array<Record<string, boolean>> = [{}, { consents_api: true }, { store_cmp_consents: true, consents_api: true }]
    for (const features of refused) {
      const t = await tenant(features)
      for (const query of [false, true]) {
        const r = await publicWrite(keyOf(t), guestEvent(t), { query })
        expect([features, r.status], r.text).toEqual([features, 403])
        expect403(r)
      }
      expect(await countEvents(t)).toBe(0)
    }
    const only = await tenant(GUEST)
    const r = await publicWrite(keyOf(only), guestEvent(only))
    expectCreated(r)
    expect(await eventAsOperator(only, r.body.id)).toMatchObject({ organization_id: only.org.id })
  })

  it("a premium feature switched off refuses the next write; switched on again, accepts it", async () => {
    const t = await tenant(GUEST)
    const flags = await op.featuresOf(t.org.id)
    const set = async (on: boolean) => {
      const r = await op.call("PATCH", `/v1/premium-features/${flags.id}`, { body: { store_guest_cmp_consents: on } })
      expect(r.status, r.text).toBe(200)
    }
    expectCreated(await publicWrite(keyOf(t), guestEvent(t)))
    await set(false)
    expect403(await publicWrite(keyOf(t), guestEvent(t)))
    await set(true)
    expectCreated(await publicWrite(keyOf(t), guestEvent(t)))
  })

  it("need user.id (400 without)", async () => {
    const t = await tenant(GUEST)
    for (const user of [{}, { metadata: { a: 1 } }, { country: "FR" }]) {
      const r = await publicWrite(keyOf(t), { ...guestEvent(t), user })
      expect([user, r.status], r.text).toEqual([user, 400])
      expect400(r)
    }
    const { user: _, ...noUser } = guestEvent(t)
    expect400(await publicWrite(keyOf(t), noUser))
    expect(await countEvents(t)).toBe(0)
  })

  it("a guest's later writes go to the same user", async () => {
    const t = await tenant({ ...GUEST, ...BACKEND })
    const device = unique("device")
    expectCreated(await publicWrite(keyOf(t), guestEvent(t, device)))
    server.clock.advance(1000)
    expectCreated(await publicWrite(keyOf(t), guestEvent(t, device, { consents: { purposes: purposes(["analytics", false], ["ads", true]) } })))
    const user = await t.call("GET", `/v1/consents/users/${encodeURIComponent(device)}`)
    expect(user.status, user.text).toBe(200)
    expect(user.body.organization_user_id ?? null).toBeNull()
    expect([...user.body.consents.purposes].sort((a: any, b: any) => a.id.localeCompare(b.id))).toEqual(purposes(["ads", true], ["analytics", false]))
    expect(await countEvents(t, `&user_id=${encodeURIComponent(device)}`)).toBe(2)
  })

  it("naming the id of a user the organization knows (with organization_user_id) is 403, and changes nothing", async () => {
    const t = await tenant({ ...GUEST, ...KNOWN, ...BACKEND })
    const ouid = unique("crm")
    const made = await t.call("POST", "/v1/consents/events", {
      body: { organization_id: t.org.id, user: { organization_user_id: ouid }, consents: { purposes: purposes(["analytics", true]) } }
    })
    expect(made.status, made.text).toBe(201)
    const userId = made.body.user.id as string
    for (const query of [false, true]) {
      const r = await publicWrite(keyOf(t), guestEvent(t, userId, { consents: { purposes: purposes(["analytics", false]) } }), { query })
      expect403(r)
    }
    const user = await t.call("GET", `/v1/consents/users/${userId}`)
    expect(user.body.consents.purposes).toEqual(purposes(["analytics", true]))
    expect(await countEvents(t, `&user_id=${userId}`)).toBe(1)
  })

  it("a user id another organization uses is no one's here: a new guest", async () => {
    const t = await tenant({ ...GUEST, ...BACKEND })
    const other = await tenant({ ...GUEST, ...KNOWN, ...BACKEND })
    const theirs = await other.call("POST", "/v1/consents/events", {
      body: { organization_id: other.org.id, user: { organization_user_id: unique("crm") }, consents: { purposes: purposes(["analytics", true]) } }
    })
    expect(theirs.status, theirs.text).toBe(201)
    const userId = theirs.body.user.id as string
    const r = await publicWrite(keyOf(t), guestEvent(t, userId, { consents: { purposes: purposes(["analytics", false]) } }))
    expectCreated(r)
    const mine = await t.call("GET", `/v1/consents/users/${encodeURIComponent(userId)}`)
    expect(mine.status, mine.text).toBe(200)
    expect(mine.body).toMatchObject({ id: userId, organization_id: t.org.id })
    expect(mine.body.organization_user_id ?? null).toBeNull()
    const untouched = await other.call("GET", `/v1/consents/users/${encodeURIComponent(userId)}`)
    expect(untouched.body.consents.purposes).toEqual(purposes(["analytics", true]))
  })

  it("store_guest_cmp_consents alone does not allow known users, even with a valid proof", async () => {
    const t = await tenant({ ...GUEST, ...BACKEND })
    const secret = await secretOf(t)
    const ouid = unique("crm")
    for (const query of [false, true]) {
      expect403(await publicWrite(keyOf(t), knownEvent(t, ouid, authOf(secret, ouid)), { query }))
    }
    await expectNoUser(t, ouid)
  })
})

describe("known users (organization_user_id with a signed id)", () => {
  let t: TestTenant
  let secret: { id: string; secret: string }
  beforeAll(async () => {
    t = await tenant({ ...KNOWN, ...BACKEND })
    secret = await secretOf(t)
  })

  it("the Secret's value is shown once, when it is created", async () => {
    const s = await secretOf(t)
    const got = await t.call("GET", `/v1/secrets/${s.id}`)
    expect(got.status, got.text).toBe(200)
    expect(got.body.secret).toBeUndefined()
    expect(got.text).not.toContain(s.secret)
    expect((await t.call("GET", "/v1/secrets")).text).not.toContain(s.secret)
  })

  it("need store_cmp_consents and a valid proof: with or without salt and expiration, 201", async () => {
    const later = nowSeconds() + 3600
    const cases: ReadonlyArray<readonly [string, (ouid: string) => unknown]> = [
      ["bare", (ouid) => authOf(secret, ouid)],
      ["salt", (ouid) => authOf(secret, ouid, unique("salt"))],
      ["expiration", (ouid) => authOf(secret, ouid, undefined, later)],
      ["salt and expiration", (ouid) => authOf(secret, ouid, "n0nce-é✓", later)],
      ["organizationUserIdAuth", (ouid) => organizationUserIdAuth({ secretId: secret.id, secret: secret.secret, organizationUserId: ouid, expiration: later })],
      [
        "organizationUserIdAuth, salt and expiration",
        (ouid) => organizationUserIdAuth({ secretId: secret.id, secret: secret.secret, organizationUserId: ouid, salt: "s4lt", expiration: later })
      ]
    ]
    for (const [what, auth] of cases) {
      for (const query of [false, true]) {
        const ouid = unique("crm")
        const r = await publicWrite(keyOf(t), knownEvent(t, ouid, auth(ouid)), { query })
        expectCreated(r, what)
        const stored = await eventAsBackend(t, r.body.id)
        expect(stored.user.organization_user_id, what).toBe(ouid)
        const user = await t.call("GET", `/v1/consents/users/${encodeURIComponent(ouid)}?$by_organization_user_id=true`)
        expect(user.status, `${what}: ${user.text}`).toBe(200)
        expect(user.body.consents.purposes).toEqual(purposes(["analytics", true]))
      }
    }
  })

  it("a known user the backend made is the one a signed public write records for", async () => {
    const ouid = unique("crm")
    const made = await t.call("POST", "/v1/consents/events", {
      body: { organization_id: t.org.id, user: { organization_user_id: ouid }, consents: { purposes: purposes(["analytics", true], ["ads", true]) } }
    })
    expect(made.status, made.text).toBe(201)
    server.clock.advance(1000)
    const r = await publicWrite(keyOf(t), { ...knownEvent(t, ouid, authOf(secret, ouid)), consents: { purposes: purposes(["ads", false]) } })
    expectCreated(r)
    expect((await eventAsBackend(t, r.body.id)).user).toMatchObject({ id: made.body.user.id, organization_user_id: ouid })
    const user = await t.call("GET", `/v1/consents/users/${made.body.user.id}`)
    expect([...user.body.consents.purposes].sort((a: any, b: any) => a.id.localeCompare(b.id))).toEqual(purposes(["ads", false], ["analytics", true]))
  })

  it("organizationUserIdAuth of @cmp/platform computes the digest the contract describes", () => {
    const signed = organizationUserIdAuth({ secretId: secret.id, secret: secret.secret, organizationUserId: "u-1", salt: "abc", expiration: 1_900_000_000 })
    expect(signed).toEqual(authV2Of(secret, "u-1", "abc", 1_900_000_000))
    expect(organizationUserIdAuth({ secretId: secret.id, secret: secret.secret, organizationUserId: "u-1", expiration: 1_900_000_000 }))
      .toEqual(authV2Of(secret, "u-1", undefined, 1_900_000_000))
    const unsigned = { secretId: secret.id, secret: secret.secret, organizationUserId: "u-1" }
    expect(() => organizationUserIdAuth(unsigned as never)).toThrow(TypeError)
    expect(() => organizationUserIdAuth({ ...unsigned, salt: "a\nb", expiration: 1_900_000_000 })).toThrow(TypeError)
  })

  it("the proof is checked, never stored: not in the event, the user, a list or the log", async () => {
    const ouid = unique("crm")
    const auth = authOf(secret, ouid, "pepper", nowSeconds() + 600)
    const r = await publicWrite(keyOf(t), knownEvent(t, ouid, auth))
    expectCreated(r)
    const reads = [
      await t.call("GET", `/v1/consents/events/${r.body.id}`),
      await t.call("GET", `/v1/consents/events?id=${r.body.id}`),
      await t.call("GET", `/v1/consents/users/${encodeURIComponent(ouid)}?$by_organization_user_id=true`),
      await t.call("GET", `/v1/consents/events?$cursor=&$limit=1000`)
    ]
    for (const read of reads) {
      expect(read.status, read.text).toBe(200)
      expect(read.text).toContain(ouid)
      expect(read.text).not.toContain("organization_user_id_auth")
      expect(read.text).not.toContain(auth.digest)
      expect(read.text).not.toContain("pepper")
    }
  })

  it("no proof, a wrong or malformed digest, an unknown or another organization's secret, a past expiration: 403, nothing written", async () => {
    const other = await tenant({ ...KNOWN, ...BACKEND })
    const otherSecret = await secretOf(other)
    const now = nowSeconds()
    const cases: ReadonlyArray<readonly [string, (ouid: string) => unknown]> = [
      ["no proof", () => undefined],
      ["digest of another id", (ouid) => ({ ...authOf(secret, ouid), digest: digestOf(secret.secret, `${ouid}x`) })],
      ["digest with another key", (ouid) => ({ ...authOf(secret, ouid), digest: digestOf(`${secret.secret}x`, ouid) })],
      ["uppercase digest", (ouid) => ({ ...authOf(secret, ouid), digest: digestOf(secret.secret, ouid).toUpperCase() })],
      ["truncated digest", (ouid) => ({ ...authOf(secret, ouid), digest: digestOf(secret.secret, ouid).slice(0, 63) })],
      ["garbage digest", () => ({ algorithm: "hmac-sha256", secret_id: secret.id, digest: "zz" })],
      ["empty digest", () => ({ algorithm: "hmac-sha256", secret_id: secret.id, digest: "" })],
      ["zero digest", () => ({ algorithm: "hmac-sha256", secret_id: secret.id, digest: "0".repeat(64) })],
      ["base64 digest", (ouid) => ({ ...authOf(secret, ouid), digest: Buffer.from(digestOf(secret.secret, ouid), "hex").toString("base64") })],
      ["unknown secret", (ouid) => ({ ...authOf(secret, ouid), secret_id: unique("no-such-secret") })],
      ["another organization's secret", (ouid) => authOf(otherSecret, ouid)],
      ["another organization's secret id, this one's value", (ouid) => ({ ...authOf(secret, ouid), secret_id: otherSecret.id })],
      ["past expiration", (ouid) => authOf(secret, ouid, undefined, now - 60)],
      ["past expiration with salt", (ouid) => authOf(secret, ouid, "s", now - 1)],
      ["expiration changed after signing", (ouid) => ({ ...authOf(secret, ouid, undefined, now - 60), expiration: now + 3600 })],
      ["expiration added after signing", (ouid) => ({ ...authOf(secret, ouid), expiration: now + 3600 })],
      ["salt changed after signing", (ouid) => ({ ...authOf(secret, ouid, "a"), salt: "b" })],
      ["salt dropped after signing", (ouid) => ({ ...authOf(secret, ouid, "a"), salt: undefined })]
    ]
    for (const [what, auth] of cases) {
      for (const query of [false, true]) {
        const ouid = unique("crm")
        const r = await publicWrite(keyOf(t), knownEvent(t, ouid, auth(ouid)), { query })
        expect([what, r.status], r.text).toEqual([what, 403])
        expect403(r)
        await expectNoUser(t, ouid)
      }
    }
  })

  it("another algorithm is a 400 naming the supported ones", async () => {
    for (const algorithm of ["hmac-sha1", "hmac-sha512", "none", "hmac-sha256-v3"]) {
      const ouid = unique("crm")
      const r = await publicWrite(keyOf(t), knownEvent(t, ouid, { ...authOf(secret, ouid), algorithm }))
      expect400(r)
      expect(r.text).toContain("hmac-sha256, hmac-sha256-v2")
      await expectNoUser(t, ouid)
    }
  })

  it("need store_cmp_consents: with a valid proof, 403 without it", async () => {
    const refused: Array<Record<string, boolean>> = [{ consents_api: true }, { consents_api: true, store_guest_cmp_consents: true }]
    for (const features of refused) {
      const off = await tenant(features)
      const s = await secretOf(off)
      const ouid = unique("crm")
      const r = await publicWrite(keyOf(off), knownEvent(off, ouid, authOf(s, ouid)))
      expect([features, r.status], r.text).toEqual([features, 403])
      await expectNoUser(off, ouid)
    }
  })
})

describe("signed user ids: the concatenated form's ambiguity, require_expiration and hmac-sha256-v2", () => {
  let t: TestTenant
  let plain: { id: string; secret: string }
  let strict: { id: string; secret: string }
  beforeAll(async () => {
    t = await tenant({ ...KNOWN, ...BACKEND })
    plain = await secretOf(t)
    strict = await secretOf(t, { require_expiration: true })
  })

  /** What an attacker holding one signature sends: another reading of the same signed text. */
  const forgeries = (secret: { id: string; secret: string }, ouid: string, now: number) => [
    // The backend signed the id with an expiration now past: moved into the salt, it never expires.
    ["expiration moved into the salt", ouid, { ...authOf(secret, ouid, undefined, now - 60), salt: String(now - 60), expiration: undefined }],
    // A signature for `<id>4` with salt `2` vouches for `<id>42`.
    ["the salt's head moved into the id", `${ouid}42`, { ...authOf(secret, `${ouid}4`, "2"), salt: undefined }]
  ] as const

  it("the Secret says whether it requires an expiration: false unless created with require_expiration: true", async () => {
    for (const [s, expected] of [[plain, false], [strict, true]] as const) {
      const r = await t.call("GET", `/v1/secrets/${s.id}`)
      expect(r.status, r.text).toBe(200)
      expect(r.body.require_expiration).toBe(expected)
    }
    const bad = await t.call("POST", "/v1/secrets", { body: { organization_id: t.org.id, name: unique("signing"), require_expiration: "yes" } })
    expect400(bad)
  })

  it("hmac-sha256 stays ambiguous for a Secret that does not require an expiration: the forgeries pass", async () => {
    for (const [what, ouid, auth] of forgeries(plain, unique("u"), nowSeconds())) {
      const r = await publicWrite(keyOf(t), knownEvent(t, ouid, auth))
      expect([what, r.status], r.text).toEqual([what, 201])
    }
  })

  it("a Secret created with require_expiration: true refuses hmac-sha256 without an expiration: the forgeries are 403", async () => {
    for (const [what, ouid, auth] of forgeries(strict, unique("u"), nowSeconds())) {
      const r = await publicWrite(keyOf(t), knownEvent(t, ouid, auth))
      expect([what, r.status], r.text).toEqual([what, 403])
      await expectNoUser(t, ouid)
    }
    const ouid = unique("u")
    expectCreated(await publicWrite(keyOf(t), knownEvent(t, ouid, authOf(strict, ouid, "s", nowSeconds() + 600))))
  })

  it("hmac-sha256-v2 takes a good signature, with or without salt, by either Secret", async () => {
    for (const secret of [plain, strict]) {
      for (const salt of [undefined, "n0nce-é✓"]) {
        const ouid = unique("u")
        expectCreated(await publicWrite(keyOf(t), knownEvent(t, ouid, authV2Of(secret, ouid, salt, nowSeconds() + 600))))
      }
    }
  })

  it("hmac-sha256-v2 refuses a missing or past expiration, a moved value and a v1 digest: 403, nothing written", async () => {
    const now = nowSeconds()
    for (const secret of [plain, strict]) {
      const base = unique("u")
      const cases = [
        ["no expiration", base, authV2Of(secret, base)],
        ["no expiration, with salt", base, authV2Of(secret, base, "s")],
        ["past expiration", base, authV2Of(secret, base, "s", now - 1)],
        ["expiration moved into the salt", base, { ...authV2Of(secret, base, undefined, now - 60), salt: String(now - 60), expiration: undefined }],
        ["expiration moved into the salt, a new one added", base, { ...authV2Of(secret, base, undefined, now - 60), salt: String(now - 60), expiration: now + 600 }],
        ["the salt's head moved into the id", `${base}42`, { ...authV2Of(secret, `${base}4`, "2", now + 600), salt: undefined }],
        ["the id's tail moved into the salt", base.slice(0, -1), { ...authV2Of(secret, base, undefined, now + 600), salt: base.slice(-1) }],
        ["a v1 digest", base, { ...authOf(secret, base, "s", now + 600), algorithm: "hmac-sha256-v2" }]
      ] as const
      for (const [what, ouid, auth] of cases) {
        const r = await publicWrite(keyOf(t), knownEvent(t, ouid, auth))
        expect([what, r.status], r.text).toEqual([what, 403])
        expect403(r)
        await expectNoUser(t, ouid)
      }
    }
  })

  it("hmac-sha256-v2: an id or a salt holding a newline is a 400 naming it", async () => {
    const later = nowSeconds() + 600
    const ouid = unique("u")
    const inId = await publicWrite(keyOf(t), knownEvent(t, `${ouid}\n1`, authV2Of(plain, `${ouid}\n1`, undefined, later)))
    expect400(inId)
    expect(Object.keys(inId.body.errors)).toEqual(["user.organization_user_id"])
    const inSalt = await publicWrite(keyOf(t), knownEvent(t, ouid, authV2Of(plain, ouid, "a\nb", later)))
    expect400(inSalt)
    expect(Object.keys(inSalt.body.errors)).toEqual(["user.organization_user_id_auth.salt"])
    await expectNoUser(t, ouid)
  })
})

describe("after a public write", () => {
  it("is not an API request: not counted in api_requests, nor refused once they are spent", async () => {
    const t = await tenant(GUEST)
    const quota = await op.quotaOf(t.org.id)
    expect((await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { api_requests: 2 } })).status).toBe(200)
    // Past the cache of the limit.
    server.clock.advance(6_000)
    for (let i = 0; i < 5; i++) expectCreated(await publicWrite(keyOf(t), guestEvent(t), { query: i % 2 === 1 }))
    expect((await t.call("GET", "/v1/keys")).status).toBe(200)
    expect((await t.call("GET", "/v1/keys")).status).toBe(200)
    expectError(await t.call("GET", "/v1/keys"), 429, "TooManyRequests", "too-many-requests")
    expectCreated(await publicWrite(keyOf(t), guestEvent(t)))
  })

  it("queues event.created whose source is the public key, never its value; a flattened message has no source", async () => {
    const t = await tenant({ ...GUEST, ...KNOWN, ...BACKEND })
    const subscriber = unique("audit")
    await server.api.runtime.runPromise(saveSubscriber(subscriber, {}))
    const hook = await t.call("POST", "/v1/webhooks", { body: { organization_id: t.org.id, url: "http://127.0.0.1:9/hook" } })
    expect(hook.status, hook.text).toBe(201)
    const flat = await t.call("POST", "/v1/webhooks", { body: { organization_id: t.org.id, url: "http://127.0.0.1:9/flat", flatten: true } })
    expect(flat.status, flat.text).toBe(201)
    const secret = await secretOf(t)
    const ouid = unique("crm")
    const auth = authOf(secret, ouid, "salted", nowSeconds() + 600)
    const guest = await publicWrite(keyOf(t), guestEvent(t))
    expectCreated(guest)
    const known = await publicWrite(keyOf(t), knownEvent(t, ouid, auth), { query: true })
    expectCreated(known)

    const deliveries = async (target: string) => {
      const r = await op.call("GET", `/v1/webhooks/deliveries?organization_id=${t.org.id}&webhook_id=${encodeURIComponent(target)}&$limit=1000`)
      expect(r.status, r.text).toBe(200)
      return r.body.data as Array<any>
    }
    for (const target of [hook.body.id, `subscriber:${subscriber}`]) {
      const log = await deliveries(target)
      for (const written of [guest.body, known.body]) {
        const created = log.filter((d) => d.event_type === "event.created" && d.payload.parameters?.entity?.id === written.id)
        expect(created, `${target} ${written.id}`).toHaveLength(1)
        expect(created[0].payload.type).toBe("event.created")
        expect(created[0].payload.parameters.source).toEqual({ type: "public-key", organization_id: t.org.id })
      }
      const text = JSON.stringify(log)
      expect(text).not.toContain(keyOf(t))
      expect(text).not.toContain("organization_user_id_auth")
      expect(text).not.toContain(auth.digest)
    }
    const flatLog = (await deliveries(flat.body.id)).filter((d) => d.event_type === "event.created")
    expect(flatLog.map((d) => d.payload.parameters__entity__id).sort()).toEqual([guest.body.id, known.body.id].sort())
    for (const d of flatLog) expect(Object.keys(d.payload).filter((k) => k.startsWith("parameters__source"))).toEqual([])
    expect(JSON.stringify(flatLog)).not.toContain(keyOf(t))
  })
})

describe("a receiver", () => {
  const delivering = useServer({ ...unlimited, webhookAllowHosts: ["127.0.0.1"], dispatcher: DISPATCHER })
  let hooked: Receiver
  beforeAll(async () => {
    hooked = await receiver(204)
  })
  afterAll(async () => {
    await hooked?.close()
  })

  it("gets event.created of a public write with source public-key, and the key nowhere", async () => {
    const t = await delivering.tenant({ ...GUEST, ...BACKEND })
    const hook = await t.call("POST", "/v1/webhooks", { body: { organization_id: t.org.id, url: hooked.url, event_types: ["event.created"] } })
    expect(hook.status, hook.text).toBe(201)
    const key = t.org.public_api_key as string
    const r = await call(delivering.base, "POST", "/v1/consents/events", { headers: { "x-public-api-key": key }, body: guestEvent(t) })
    expectCreated(r)
    const [arrived] = await hooked.waitFor(1)
    const message = JSON.parse(arrived!.body)
    expect(message).toMatchObject({ type: "event.created", parameters: { entity: { id: r.body.id, organization_id: t.org.id } } })
    expect(message.parameters.source).toEqual({ type: "public-key", organization_id: t.org.id })
    expect(arrived!.body).not.toContain(key)
    expect(JSON.stringify(arrived!.headers)).not.toContain(key)
  })
})
