import { afterEach, describe, expect, it } from "vitest"
import {
  as,
  call,
  expect400,
  expect401,
  expect403,
  expect404,
  memberOf,
  operatorOf,
  type Reply,
  unique
} from "./helpers.js"
import { type TestTenant, useServer } from "./fixture.js"

/**
 * Rotating credentials without downtime: an API key's secret (`POST /v1/keys/:id/rotate-secret`)
 * and an organization's public key (`POST /v1/organizations/:id/rotate-public-key`). The new one
 * is shown once and works at once; the replaced one keeps working until its date and not after
 * it, whatever the server kept in memory; requests flowing across a rotation are never refused.
 */

/** Public writes of a test come from one address: the rate limits have their own file. */
const unlimited = { publicRateLimit: { perKey: 1_000_000, perAddress: 1_000_000 } }
const { server } = useServer({ webhookAllowHosts: ["127.0.0.1"], ...unlimited })

const HOUR = 3_600_000
const DAY = 24 * HOUR
const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const at = (msFromNow: number) => new Date(server.clock.millis + msFromNow).toISOString()
/** Guests' consent written with the public key, and read back by the organization's backend. */
const GUESTS = { store_guest_cmp_consents: true, consents_api: true, store_cmp_consents: true }

// The refused logins a test makes on purpose all come from one address: past the hour after
// them, the login throttle has forgotten them, so the next test's sign-ins are not slowed.
afterEach(() => server.clock.advance(HOUR + 1000))

/**
 * A new organization with a client key, signed in now: tests move the server's clock by days,
 * past the life of any access token made before.
 */
const tenant = async (features: Record<string, boolean> = {}): Promise<TestTenant & { readonly op: Awaited<ReturnType<typeof operatorOf>> }> => {
  const op = await operatorOf(server.url)
  const t = await op.tenant()
  if (Object.keys(features).length > 0) {
    const flags = await op.featuresOf(t.org.id)
    const patched = await op.call("PATCH", `/v1/premium-features/${flags.id}`, { body: features })
    expect(patched.status, patched.text).toBe(200)
  }
  return { ...t, call: as(server.url, t.token), op }
}

const login = (key: string, secret: string) =>
  call(server.url, "POST", "/v1/sessions", { body: { type: "api-key", key, secret } })

const expectLoginRefused = (r: Reply) => {
  expect400(r)
  expect(r.body.message).toBe("Invalid login")
}

const newKey = async (t: TestTenant) => {
  const r = await t.call("POST", "/v1/keys", { body: { organization_id: t.org.id, name: unique("rotated") } })
  expect(r.status, r.text).toBe(201)
  return r.body as { id: string; secret: string; version: number }
}

const rotateSecret = (t: { readonly call: TestTenant["call"] }, id: string, body?: Record<string, unknown>) =>
  t.call("POST", `/v1/keys/${encodeURIComponent(id)}/rotate-secret`, body === undefined ? {} : { body })

const rotatePublicKey = (t: { readonly call: TestTenant["call"] }, id: string, body?: Record<string, unknown>) =>
  t.call("POST", `/v1/organizations/${encodeURIComponent(id)}/rotate-public-key`, body === undefined ? {} : { body })

/** A guest's choice as a page records it with the organization's public key. */
const publicWrite = (t: TestTenant, key: string, origin?: string) =>
  call(server.url, "POST", "/v1/consents/events", {
    headers: { "x-public-api-key": key, ...(origin === undefined ? {} : { origin }) },
    body: { organization_id: t.org.id, user: { id: unique("device") }, consents: { purposes: [{ id: "analytics", enabled: true }] } }
  })

/** A consent token of one of the organization's users. */
const consentTokenOf = async (t: TestTenant) => {
  const user = unique("user")
  const event = await t.call("POST", "/v1/consents/events", {
    body: { organization_id: t.org.id, user: { organization_user_id: user }, consents: { purposes: [{ id: "analytics", enabled: true }] } }
  })
  expect(event.status, event.text).toBe(201)
  const granted = await t.call("POST", "/v1/consents/tokens", { body: { organization_id: t.org.id, organization_user_id: user } })
  expect(granted.status, granted.text).toBe(201)
  return granted.body.id_token as string
}

describe("rotating an API key's secret", () => {
  it("answers the key as a get shows it, with the new secret once and the replaced one's date (24 hours ahead by default)", async () => {
    const t = await tenant()
    const key = await newKey(t)
    const before = await t.call("GET", `/v1/keys/${key.id}`)
    expect(before.body.previous_secret_expires_at).toBeNull()
    const r = await rotateSecret(t, key.id)
    expect(r.status, r.text).toBe(200)
    expect(r.headers.get("cache-control") ?? "").toContain("no-store")
    expect(r.body.secret).toMatch(/^sk_\S{20,}$/)
    expect(r.body.secret).not.toBe(key.secret)
    expect(r.body.previous_secret_expires_at).toBe(at(DAY))
    const { secret, ...rest } = r.body
    const got = await t.call("GET", `/v1/keys/${key.id}`)
    expect(got.body).toEqual(rest)
    expect(got.body.version).toBe(key.version + 1)
    for (const text of [r.text, got.text, (await t.call("GET", `/v1/keys?id=${key.id}`)).text]) {
      expect(text).not.toContain("secret_hash")
      expect(text).not.toContain(key.secret)
    }
    expect(got.text).not.toContain(secret)
  })

  it("both secrets open sessions until the date, then only the new one; the expired one is refused like any wrong secret", async () => {
    const t = await tenant()
    const key = await newKey(t)
    const r = await rotateSecret(t, key.id, { previous_secret_expires_at: at(2 * HOUR) })
    expect(r.status, r.text).toBe(200)
    expect(r.body.previous_secret_expires_at).toBe(at(2 * HOUR))
    for (const s of [key.secret, r.body.secret]) {
      const session = await login(key.id, s)
      expect(session.status, session.text).toBe(201)
      expect(session.body.key).toBe(key.id)
      // The session is the key's, whichever secret opened it.
      expect((await as(server.url, session.body.access_token)("GET", `/v1/keys/${key.id}`)).status).toBe(200)
    }
    server.clock.advance(2 * HOUR - 1000)
    expect((await login(key.id, key.secret)).status).toBe(201)
    server.clock.advance(1000)
    const old = await login(key.id, key.secret)
    expectLoginRefused(old)
    expect(old.body).toEqual({ ...(await login(unique("no-such-key"), key.secret)).body, id: old.body.id })
    expect((await login(key.id, r.body.secret)).status).toBe(201)
  })

  it("a date now or past ends the replaced secret at once; beyond 30 days, or not a date, is a 400 naming the field", async () => {
    const t = await tenant()
    const key = await newKey(t)
    const now = await rotateSecret(t, key.id, { previous_secret_expires_at: at(-DAY) })
    expect(now.status, now.text).toBe(200)
    expect(now.body.previous_secret_expires_at).toBeNull()
    expectLoginRefused(await login(key.id, key.secret))
    expect((await login(key.id, now.body.secret)).status).toBe(201)

    for (const body of [{ previous_secret_expires_at: at(30 * DAY + 1000) }, { previous_secret_expires_at: "tomorrow" }, { previous_secret_expires_at: null }]) {
      const r = await rotateSecret(t, key.id, body)
      expect400(r)
      expect(Object.keys(r.body.errors)).toEqual(["previous_secret_expires_at"])
    }
    const unknownField = await rotateSecret(t, key.id, { secret: "sk_chosen-by-the-caller" })
    expect400(unknownField)
    expect(unknownField.body.errors).toHaveProperty("secret")
    // Nothing changed: the secret of the last good rotation still opens sessions.
    expect((await login(key.id, now.body.secret)).status).toBe(201)
    const longest = await rotateSecret(t, key.id, { previous_secret_expires_at: at(30 * DAY) })
    expect(longest.status, longest.text).toBe(200)
  })

  it("rotating again while a replaced secret is still valid ends that older one at once", async () => {
    const t = await tenant()
    const key = await newKey(t)
    const first = await rotateSecret(t, key.id)
    const second = await rotateSecret(t, key.id)
    expect(second.status, second.text).toBe(200)
    expect(second.body.previous_secret_expires_at).toBe(at(DAY))
    expectLoginRefused(await login(key.id, key.secret))
    expect((await login(key.id, first.body.secret)).status).toBe(201)
    expect((await login(key.id, second.body.secret)).status).toBe(201)
  })

  it("a disabled or removed key is refused whatever its secret, the replaced one included", async () => {
    const t = await tenant()
    const key = await newKey(t)
    const r = await rotateSecret(t, key.id)
    expect((await t.call("PATCH", `/v1/keys/${key.id}`, { body: { enabled: false } })).status).toBe(200)
    for (const s of [key.secret, r.body.secret]) expectLoginRefused(await login(key.id, s))
    expect((await t.call("PATCH", `/v1/keys/${key.id}`, { body: { enabled: true } })).status).toBe(200)
    expect((await login(key.id, key.secret)).status).toBe(201)
    expect((await t.call("DELETE", `/v1/keys/${key.id}`)).status).toBe(200)
    for (const s of [key.secret, r.body.secret]) expectLoginRefused(await login(key.id, s))
  })

  it("the key's organization (client, member) and the operator may rotate; another organization, a public key or a consent token may not", async () => {
    const t = await tenant({ consents_api: true, store_cmp_consents: true })
    const other = await tenant()
    const key = await newKey(t)
    const member = await memberOf(server.url, t)
    expect((await rotateSecret({ call: member }, key.id)).status).toBe(200)
    expect((await rotateSecret(t.op, key.id)).status).toBe(200)
    const mine = await rotateSecret(t, key.id)
    expect(mine.status, mine.text).toBe(200)

    const theirs = await rotateSecret(other, key.id)
    expect404(theirs)
    const unknown = await rotateSecret(other, `${key.id}0`)
    expect(theirs.body.message).toBe(unknown.body.message.replace(`${key.id}0`, key.id))
    expect401(await call(server.url, "POST", `/v1/keys/${key.id}/rotate-secret`, { headers: { "x-public-api-key": t.org.public_api_key } }))
    expect403(await rotateSecret({ call: as(server.url, await consentTokenOf(t)) }, key.id))
    // None of the refused changed the key: the secret of the last rotation still opens sessions.
    const after = await t.call("GET", `/v1/keys/${key.id}`)
    expect(after.body.version).toBe(mine.body.version)
    expect((await login(key.id, mine.body.secret)).status).toBe(201)

    // An internal key is the operator's to manage: its organization does not see it.
    const internal = await t.op.call("POST", "/v1/keys", { body: { organization_id: t.org.id, name: unique("internal"), is_internal: true } })
    expect(internal.status, internal.text).toBe(201)
    expect404(await rotateSecret(t, internal.body.id))
  })

  it("with traffic flowing: sessions opened all through a rotation all succeed", async () => {
    const t = await tenant()
    const key = await newKey(t)
    let secret = key.secret
    let rotated = false
    const answers: Array<number> = []
    const flow = async () => {
      // Until well after the rotation answered, each opener with the secret it holds then.
      for (let after = 0; after < 10;) {
        const r = await login(key.id, secret)
        answers.push(r.status)
        if (rotated) after++
      }
    }
    const openers = [flow(), flow(), flow()]
    while (answers.length < 6) await new Promise((resolve) => setTimeout(resolve, 5))
    const r = await rotateSecret(t, key.id)
    expect(r.status, r.text).toBe(200)
    secret = r.body.secret
    rotated = true
    await Promise.all(openers)
    expect(answers.length).toBeGreaterThanOrEqual(36)
    expect(answers.filter((s) => s !== 201)).toEqual([])
  })
})

describe("rotating an organization's public key", () => {
  it("answers the organization as a get shows it, with its new public key and the replaced one's date (30 days ahead by default)", async () => {
    const t = await tenant()
    const r = await rotatePublicKey(t, t.org.id)
    expect(r.status, r.text).toBe(200)
    expect(r.body.public_api_key).toMatch(/^pk_/)
    expect(r.body.public_api_key).not.toBe(t.org.public_api_key)
    expect(r.body.previous_key_expires_at).toBe(at(30 * DAY))
    expect(r.body.previous_key_expires_at).toMatch(iso)
    const got = await t.call("GET", `/v1/organizations/${t.org.id}`)
    expect(got.body).toEqual(r.body)
    // The replaced key is not shown again, nor is any field holding it.
    expect(got.text).not.toContain(t.org.public_api_key)
    expect(got.text).not.toContain("previous_public_api_key")
  })

  it("the old and the new key both record events until the date, whatever is kept in memory; then the old one is a 401", async () => {
    const t = await tenant(GUESTS)
    const old = t.org.public_api_key as string
    expect((await publicWrite(t, old)).status).toBe(201)
    const r = await rotatePublicKey(t, t.org.id, { previous_key_expires_at: at(HOUR) })
    expect(r.status, r.text).toBe(200)
    const fresh = r.body.public_api_key as string
    for (const key of [old, fresh, old, fresh]) {
      const w = await publicWrite(t, key)
      expect(w.status, w.text).toBe(201)
    }
    server.clock.advance(HOUR - 1000)
    expect((await publicWrite(t, old)).status).toBe(201)
    // Right after a write that found it, the old key's date passes: refused at once.
    server.clock.advance(1000)
    const refused = await publicWrite(t, old)
    expect401(refused)
    const unknown = await publicWrite(t, `pk_${"x".repeat(32)}`)
    expect(refused.body.message).toBe(unknown.body.message)
    expect((await publicWrite(t, fresh)).status).toBe(201)
    const backend = as(server.url, (await login(t.key.id, t.secret)).body.access_token)
    const events = await backend("GET", `/v1/consents/events?organization_id=${t.org.id}&$limit=0`)
    expect(events.body.total).toBe(7)
  })

  it("a date now or past ends the old key at once, even where it was just used; beyond 90 days is a 400 naming the field", async () => {
    const t = await tenant(GUESTS)
    const old = t.org.public_api_key as string
    expect((await publicWrite(t, old)).status).toBe(201)
    const r = await rotatePublicKey(t, t.org.id, { previous_key_expires_at: at(0) })
    expect(r.status, r.text).toBe(200)
    expect(r.body.previous_key_expires_at).toBeNull()
    expect401(await publicWrite(t, old))
    expect((await publicWrite(t, r.body.public_api_key)).status).toBe(201)

    for (const body of [{ previous_key_expires_at: at(90 * DAY + 1000) }, { previous_key_expires_at: "2026-02-30" }]) {
      const bad = await rotatePublicKey(t, t.org.id, body)
      expect400(bad)
      expect(Object.keys(bad.body.errors)).toEqual(["previous_key_expires_at"])
    }
    expect((await t.call("GET", `/v1/organizations/${t.org.id}`)).body.public_api_key).toBe(r.body.public_api_key)
  })

  it("a write with either key queues event.created whose source is the public key, never either key's value", async () => {
    const t = await tenant({ ...GUESTS, webhooks: true })
    const hook = await t.call("POST", "/v1/webhooks", { body: { organization_id: t.org.id, url: "http://127.0.0.1:9/hook" } })
    expect(hook.status, hook.text).toBe(201)
    const old = t.org.public_api_key as string
    const fresh = (await rotatePublicKey(t, t.org.id)).body.public_api_key as string
    const written = []
    for (const key of [old, fresh]) {
      const w = await publicWrite(t, key)
      expect(w.status, w.text).toBe(201)
      written.push(w.body.id)
    }
    const log = await t.call("GET", `/v1/webhooks/deliveries?organization_id=${t.org.id}&webhook_id=${hook.body.id}&$limit=100`)
    expect(log.status, log.text).toBe(200)
    const created = log.body.data.filter((d: any) => d.event_type === "event.created")
    expect(created.map((d: any) => d.payload.parameters.entity.id).sort()).toEqual(written.sort())
    for (const d of created) expect(d.payload.parameters.source).toEqual({ type: "public-key", organization_id: t.org.id })
    expect(log.text).not.toContain(old)
    expect(log.text).not.toContain(fresh)
  })

  it("the old key is served from the organization's origins only, as the new one is", async () => {
    const t = await tenant(GUESTS)
    const shop = `https://${unique("shop")}.example.com`
    const property = await t.call("POST", "/v1/properties", { body: { organization_id: t.org.id, name: unique("Shop"), website: shop } })
    expect(property.status, property.text).toBe(201)
    const old = t.org.public_api_key as string
    const fresh = (await rotatePublicKey(t, t.org.id)).body.public_api_key as string
    for (const key of [old, fresh]) {
      const served = await publicWrite(t, key, shop)
      expect(served.status, served.text).toBe(201)
      expect(served.headers.get("access-control-allow-origin")).toBe(shop)
      expect403(await publicWrite(t, key, `https://${unique("elsewhere")}.example.com`))
    }
  })

  it("rotating again ends the key replaced before at once", async () => {
    const t = await tenant(GUESTS)
    const first = t.org.public_api_key as string
    const second = (await rotatePublicKey(t, t.org.id)).body.public_api_key as string
    expect((await publicWrite(t, first)).status).toBe(201)
    const third = await rotatePublicKey(t, t.org.id)
    expect(third.status, third.text).toBe(200)
    expect401(await publicWrite(t, first))
    expect((await publicWrite(t, second)).status).toBe(201)
    expect((await publicWrite(t, third.body.public_api_key)).status).toBe(201)
  })

  it("the organization's client and member and the operator may rotate; another organization, a public key or a consent token may not", async () => {
    const t = await tenant({ consents_api: true, store_cmp_consents: true })
    const other = await tenant()
    const member = await memberOf(server.url, t)
    expect((await rotatePublicKey({ call: member }, t.org.id)).status).toBe(200)
    expect((await rotatePublicKey(t.op, t.org.id)).status).toBe(200)
    const mine = await rotatePublicKey(t, t.org.id)
    expect(mine.status, mine.text).toBe(200)

    expect404(await rotatePublicKey(other, t.org.id))
    expect401(await call(server.url, "POST", `/v1/organizations/${t.org.id}/rotate-public-key`, { headers: { "x-public-api-key": mine.body.public_api_key } }))
    expect403(await rotatePublicKey({ call: as(server.url, await consentTokenOf(t)) }, t.org.id))
    const after = await t.call("GET", `/v1/organizations/${t.org.id}`)
    expect(after.body).toEqual(mine.body)
  })

  it("with traffic flowing: public writes all through a rotation are all recorded", async () => {
    const t = await tenant(GUESTS)
    let key = t.org.public_api_key as string
    let rotated = false
    const answers: Array<number> = []
    const flow = async () => {
      for (let after = 0; after < 10;) {
        const w = await publicWrite(t, key)
        answers.push(w.status)
        if (rotated) after++
      }
    }
    const writers = [flow(), flow(), flow()]
    while (answers.length < 6) await new Promise((resolve) => setTimeout(resolve, 5))
    const r = await rotatePublicKey(t, t.org.id)
    expect(r.status, r.text).toBe(200)
    key = r.body.public_api_key
    rotated = true
    await Promise.all(writers)
    expect(answers.filter((s) => s !== 201)).toEqual([])
    const events = await t.call("GET", `/v1/consents/events?organization_id=${t.org.id}&$limit=0`)
    expect(events.body.total).toBe(answers.length)
  })
})
