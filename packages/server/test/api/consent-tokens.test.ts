import { SignJWT } from "jose"
import { beforeAll, describe, expect, it } from "vitest"
import { as, expect400, expect401, expect403, expect404, JWT_SECRET, memberOf, type Reply, unique } from "./helpers.js"
import { type TestTenant, useServer } from "./fixture.js"

/**
 * Consent tokens (`POST /v1/consents/tokens`): who may create one and with what body, and what
 * its `id_token` reaches: one end user of one organization reads that user and its events and
 * records its own events (the token's metadata merged under the event's, its delegate recorded);
 * everything else is a 403, an expired token a 401, and neither kind of token passes for the other.
 */

const { server, op, tenant } = useServer({ jwtSecret: JWT_SECRET, webhookAllowHosts: ["127.0.0.1"] })

const FULL = { consents_api: true, store_cmp_consents: true }
const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
/** The fields a create answers: the input's, `expires_at` and `id_token`. */
const ANSWER_FIELDS = ["organization_id", "organization_user_id", "lifetime", "metadata", "delegate", "expires_at", "id_token"]

const purposes = (...list: Array<[string, boolean]>) => list.map(([id, enabled]) => ({ id, enabled }))

const eventFor = (t: TestTenant, organizationUserId: string, extra: Record<string, unknown> = {}) => ({
  organization_id: t.org.id,
  user: { organization_user_id: organizationUserId },
  consents: { purposes: purposes(["analytics", true]) },
  ...extra
})

const createToken = (t: TestTenant, body: Record<string, unknown>) =>
  t.call("POST", "/v1/consents/tokens", { body: { organization_id: t.org.id, ...body } })

/** A consent token of `t` for one of its users, and a caller bound to it. */
const tokenOf = async (t: TestTenant, organizationUserId: string, extra: Record<string, unknown> = {}) => {
  const r = await createToken(t, { organization_user_id: organizationUserId, ...extra })
  expect(r.status, r.text).toBe(201)
  return { answer: r.body, call: as(server.url, r.body.id_token as string) }
}

/** An event recorded by the organization's backend: its user is made when new. */
const recorded = async (t: TestTenant, organizationUserId: string, extra: Record<string, unknown> = {}) => {
  const r = await t.call("POST", "/v1/consents/events", { body: eventFor(t, organizationUserId, extra) })
  expect(r.status, r.text).toBe(201)
  return r.body
}

const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split(".")[1]!, "base64url").toString("utf8")) as Record<string, unknown>

/** Claims signed with the server's signing key (or another one). */
const signed = (claims: Record<string, unknown>, key = JWT_SECRET) =>
  new SignJWT(claims).setProtectedHeader({ alg: "HS256", typ: "JWT" }).sign(new TextEncoder().encode(key))

/** `expires_at` is `lifetime` seconds after the server's time of the request. */
const expectExpiry = (answer: any, lifetime: number) => {
  expect(answer.expires_at).toMatch(iso)
  const expected = server.clock.millis + lifetime * 1000
  expect(Math.abs(Date.parse(answer.expires_at) - expected), `${answer.expires_at} vs ${new Date(expected).toISOString()}`).toBeLessThanOrEqual(1000)
}

const expectNoStore = (r: Reply) => expect(r.headers.get("cache-control") ?? "").toContain("no-store")

const eventsOf = async (t: TestTenant, query: string) => {
  const r = await t.call("GET", `/v1/consents/events?${query}&$limit=1000`)
  expect(r.status, r.text).toBe(200)
  return r.body.data as Array<any>
}

describe("POST /v1/consents/tokens", () => {
  let t: TestTenant
  beforeAll(async () => {
    t = await tenant(FULL)
  })

  it("a client key, a member and the operator each create one: the input echoed with expires_at and id_token, never cached", async () => {
    const ouid = unique("crm")
    const input = {
      organization_id: t.org.id,
      organization_user_id: ouid,
      lifetime: 3600,
      metadata: { channel: "support", nested: { a: 1 } },
      delegate: { id: "rep-7", name: "Grace", metadata: { team: "care" } }
    }
    const byKey = await t.call("POST", "/v1/consents/tokens", { body: input })
    expect(byKey.status, byKey.text).toBe(201)
    expectNoStore(byKey)
    expect(byKey.body).toMatchObject(input)
    expect(Object.keys(byKey.body).filter((k) => !ANSWER_FIELDS.includes(k))).toEqual([])
    expectExpiry(byKey.body, 3600)
    expect(byKey.body.id_token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/)

    const member = await memberOf(server.url, t)
    const byMember = await member("POST", "/v1/consents/tokens", { body: { organization_id: t.org.id, organization_user_id: ouid } })
    expect(byMember.status, byMember.text).toBe(201)
    expectNoStore(byMember)
    const byOperator = await op.call("POST", "/v1/consents/tokens", { body: { organization_id: t.org.id, organization_user_id: ouid } })
    expect(byOperator.status, byOperator.text).toBe(201)
    expectNoStore(byOperator)
    // Three distinct tokens, each opening the same user once it exists.
    const tokens = [byKey.body.id_token, byMember.body.id_token, byOperator.body.id_token]
    expect(new Set(tokens).size).toBe(3)
    const user = (await recorded(t, ouid)).user
    for (const token of tokens) {
      const r = await as(server.url, token)("GET", `/v1/consents/users/${encodeURIComponent(ouid)}?$by_organization_user_id=true`)
      expect(r.status, r.text).toBe(200)
      expect(r.body).toMatchObject({ id: user.id, organization_id: t.org.id, organization_user_id: ouid })
    }
  })

  it("defaults: a lifetime of 900 s, no metadata, no delegate; the id_token is a JWT of its own audience", async () => {
    const ouid = unique("crm")
    const r = await createToken(t, { organization_user_id: ouid })
    expect(r.status, r.text).toBe(201)
    expect(r.body).toMatchObject({ organization_id: t.org.id, organization_user_id: ouid })
    if ("lifetime" in r.body) expect(r.body.lifetime).toBe(900)
    expect(r.body.metadata ?? null).toBeNull()
    expect(r.body.delegate ?? null).toBeNull()
    expectExpiry(r.body, 900)
    const claims = claimsOf(r.body.id_token)
    expect(claims.exp).toBe(Math.floor(Date.parse(r.body.expires_at) / 1000))
    // An audience an access token does not have.
    expect(claims.aud).toBeTruthy()
    expect(claimsOf(t.token).aud).not.toEqual(claims.aud)
  })

  it("lifetimes from 1 s to 31 days are accepted", async () => {
    for (const lifetime of [1, 60, 2_678_400]) {
      const r = await createToken(t, { organization_user_id: unique("crm"), lifetime })
      expect(r.status, `${lifetime}: ${r.text}`).toBe(201)
      expect(r.body.lifetime).toBe(lifetime)
      expectExpiry(r.body, lifetime)
    }
  })

  it("an invalid body is a 400 naming the field, and no token", async () => {
    const ouid = unique("crm")
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, "organization_user_id"],
      [{ organization_user_id: ouid, lifetime: 0 }, "lifetime"],
      [{ organization_user_id: ouid, lifetime: -1 }, "lifetime"],
      [{ organization_user_id: ouid, lifetime: 2_678_401 }, "lifetime"],
      [{ organization_user_id: ouid, lifetime: 1.5 }, "lifetime"],
      [{ organization_user_id: ouid, lifetime: "900" }, "lifetime"],
      [{ organization_user_id: 42 }, "organization_user_id"],
      [{ organization_user_id: ouid, metadata: "text" }, "metadata"],
      [{ organization_user_id: ouid, delegate: { name: "no id" } }, "delegate"],
      [{ organization_user_id: ouid, delegate: "rep-7" }, "delegate"],
      [{ organization_user_id: ouid, unknown_field: 1 }, "unknown_field"],
      [{ organization_user_id: ouid, id_token: "mine" }, "id_token"],
      [{ organization_user_id: ouid, expires_at: "2030-01-01T00:00:00.000Z" }, "expires_at"]
    ]
    for (const [body, field] of cases) {
      const r = await createToken(t, body)
      expect400(r)
      expect(JSON.stringify(r.body.errors), JSON.stringify(body)).toContain(field)
      expect(r.text).not.toMatch(/eyJ/)
    }
    // The body of another content type is refused too.
    const text = await t.call("POST", "/v1/consents/tokens", {
      rawBody: JSON.stringify({ organization_id: t.org.id, organization_user_id: ouid }),
      headers: { "content-type": "text/plain" }
    })
    expect(text.status, text.text).toBe(415)
  })

  it("needs the consents_api premium feature (store_cmp_consents alone is not enough)", async () => {
    for (const features of [{}, { store_cmp_consents: true, store_guest_cmp_consents: true }] as Array<Record<string, boolean>>) {
      const off = await tenant(features)
      const r = await createToken(off, { organization_user_id: unique("crm") })
      expect403(r)
      expect(r.text).toContain("consents_api")
    }
  })

  it("for another organization: 403 to its client key and to a member of the first one only", async () => {
    const other = await tenant(FULL)
    const body = { organization_id: other.org.id, organization_user_id: unique("crm") }
    expect403(await t.call("POST", "/v1/consents/tokens", { body }))
    const member = await memberOf(server.url, t)
    const r = await member("POST", "/v1/consents/tokens", { body })
    expect403(r)
    expect(r.text).not.toMatch(/eyJ/)
  })
})

describe("with the id_token", () => {
  let t: TestTenant
  /** Another organization, with a user of the same organization_user_id. */
  let u: TestTenant
  const me = unique("me")
  const other = unique("other")
  let mine: Array<any>
  let theirs: any
  let twin: any

  beforeAll(async () => {
    t = await tenant({ ...FULL, webhooks: true })
    u = await tenant(FULL)
    mine = []
    for (let i = 0; i < 3; i++) {
      mine.push(await recorded(t, me, { consents: { purposes: purposes([`p${i}`, true]) } }))
      server.clock.advance(1000)
    }
    theirs = await recorded(t, other)
    twin = await recorded(u, me)
  })

  it("reads its own user by the organization's id and by id, and no other (404)", async () => {
    const { call } = await tokenOf(t, me)
    const byOwn = await call("GET", `/v1/consents/users/${encodeURIComponent(me)}?$by_organization_user_id=true`)
    expect(byOwn.status, byOwn.text).toBe(200)
    expect(byOwn.body).toMatchObject({ id: mine[0].user.id, organization_id: t.org.id, organization_user_id: me })
    const byId = await call("GET", `/v1/consents/users/${encodeURIComponent(mine[0].user.id)}`)
    expect(byId.status, byId.text).toBe(200)
    expect(byId.body).toEqual(byOwn.body)
    // Another regulation's view of the same user.
    expect((await call("GET", `/v1/consents/users/${encodeURIComponent(me)}?$by_organization_user_id=true&regulation=ccpa`)).status).toBe(200)

    for (
      const path of [
        `/v1/consents/users/${encodeURIComponent(other)}?$by_organization_user_id=true`,
        `/v1/consents/users/${encodeURIComponent(theirs.user.id)}`,
        `/v1/consents/users/${encodeURIComponent(twin.user.id)}`,
        `/v1/consents/users/${encodeURIComponent(twin.user.id)}?organization_id=${u.org.id}`,
        `/v1/consents/users/nobody-${unique("x")}?$by_organization_user_id=true`,
        `/v1/consents/users/nobody-${unique("x")}`
      ]
    ) {
      const r = await call("GET", path)
      expect404(r)
      // Nothing beyond what the request named.
      for (const id of [theirs.user.id, twin.user.id, other]) if (!path.includes(id)) expect(r.text, path).not.toContain(id)
    }
  })

  it("finds its own user's events only, whatever the filters, by page and by cursor", async () => {
    const { call } = await tokenOf(t, me)
    const ownIds = mine.map((e) => e.id).sort()
    const all = await call("GET", "/v1/consents/events?$limit=1000")
    expect(all.status, all.text).toBe(200)
    expect(all.body.total).toBe(3)
    expect(all.body.data.map((e: any) => e.id).sort()).toEqual(ownIds)
    for (const e of all.body.data) expect(e).toMatchObject({ organization_id: t.org.id, user: { id: mine[0].user.id, organization_user_id: me } })

    const enc = encodeURIComponent
    for (
      const q of [
        `user_id=${enc(theirs.user.id)}`,
        `organization_user_id=${enc(other)}`,
        `user_id[$in][]=${enc(theirs.user.id)}`,
        `user_id[$ne]=${enc(mine[0].user.id)}`,
        `$or[0][user_id]=${enc(theirs.user.id)}`,
        `$or[0][organization_user_id]=${enc(other)}&$or[1][id]=${enc(theirs.id)}`,
        `id=${enc(theirs.id)}`,
        `user_id=${enc(twin.user.id)}`
      ]
    ) {
      const r = await call("GET", `/v1/consents/events?${q}`)
      expect(r.status, `${q}: ${r.text}`).toBe(200)
      expect(r.body.total, q).toBe(0)
      expect(r.body.data, q).toEqual([])
    }
    // A filter that includes the user's own events keeps only those.
    const both = await call("GET", `/v1/consents/events?user_id[$in][]=${enc(theirs.user.id)}&user_id[$in][]=${enc(mine[0].user.id)}`)
    expect(both.status, both.text).toBe(200)
    expect(both.body.data.map((e: any) => e.id).sort()).toEqual(ownIds)
    // Naming another organization: never its events.
    const elsewhere = await call("GET", `/v1/consents/events?organization_id=${u.org.id}`)
    expect([200, 403], elsewhere.text).toContain(elsewhere.status)
    if (elsewhere.status === 200) expect(elsewhere.body.data).toEqual([])
    else expect403(elsewhere)

    // Cursor paging, one event a page.
    const seen: Array<string> = []
    let cursor = ""
    for (let i = 0; i < 10; i++) {
      const r = await call("GET", `/v1/consents/events?$limit=1&$cursor=${enc(cursor)}`)
      expect(r.status, r.text).toBe(200)
      seen.push(...r.body.data.map((e: any) => e.id))
      for (const e of r.body.data) expect(e.user.organization_user_id).toBe(me)
      if (r.body.cursor === null) break
      cursor = r.body.cursor
    }
    expect(seen.sort()).toEqual(ownIds)
    const filtered = await call("GET", `/v1/consents/events?user_id=${enc(theirs.user.id)}&$cursor=`)
    expect(filtered.status, filtered.text).toBe(200)
    expect(filtered.body).toMatchObject({ data: [], cursor: null })
  })

  it("records events of its own user: the token's metadata under the body's, the token's delegate, never the body's", async () => {
    const ouid = unique("fresh")
    const token = await tokenOf(t, ouid, {
      metadata: { channel: "app", common: "token", nested: { from: "token" } },
      delegate: { id: "rep-1", name: "Ann", metadata: { desk: "b" } }
    })
    const r = await token.call("POST", "/v1/consents/events", {
      body: eventFor(t, ouid, { metadata: { common: "body", extra: 1 }, delegate: { id: "forged", name: "Mallory" } })
    })
    expect(r.status, r.text).toBe(201)
    expect(r.body).toMatchObject({ organization_id: t.org.id, user: { organization_user_id: ouid }, status: "confirmed" })
    expect(r.body.metadata).toEqual({ channel: "app", common: "body", nested: { from: "token" }, extra: 1 })
    expect(r.body.delegate).toEqual({ id: "rep-1", name: "Ann", metadata: { desk: "b" } })
    // The backend reads the same record, and the new user is the token's.
    const stored = await t.call("GET", `/v1/consents/events/${encodeURIComponent(r.body.id)}`)
    expect(stored.status, stored.text).toBe(200)
    expect(stored.body).toMatchObject({ metadata: r.body.metadata, delegate: r.body.delegate, user: { id: r.body.user.id } })
    const user = await token.call("GET", `/v1/consents/users/${encodeURIComponent(ouid)}?$by_organization_user_id=true`)
    expect(user.status, user.text).toBe(200)
    expect(user.body).toMatchObject({ id: r.body.user.id, consents: { purposes: purposes(["analytics", true]) } })

    // Without metadata in the body, the token's; a token without a delegate records none.
    const plain = await tokenOf(t, ouid)
    const second = await plain.call("POST", "/v1/consents/events", { body: eventFor(t, ouid, { delegate: { id: "forged" } }) })
    expect(second.status, second.text).toBe(201)
    expect(second.body.delegate ?? null).toBeNull()
    expect(second.body.metadata ?? null).toBeNull()
    const third = await token.call("POST", "/v1/consents/events", { body: eventFor(t, ouid) })
    expect(third.status, third.text).toBe(201)
    expect(third.body.metadata).toEqual({ channel: "app", common: "token", nested: { from: "token" } })
    expect((await t.call("GET", `/v1/consents/events/${encodeURIComponent(second.body.id)}`)).body.delegate ?? null).toBeNull()
  })

  it("event.created names the consent token (its id) as the source of the event", async () => {
    const w = await t.call("POST", "/v1/webhooks", { body: { organization_id: t.org.id, url: "http://127.0.0.1:9/hook", event_types: ["event.created"] } })
    expect(w.status, w.text).toBe(201)
    const { answer, call } = await tokenOf(t, me, { delegate: { id: "rep-3" } })
    const e = await call("POST", "/v1/consents/events", { body: eventFor(t, me) })
    expect(e.status, e.text).toBe(201)
    const log = await t.call("GET", `/v1/webhooks/deliveries?webhook_id=${w.body.id}&$limit=1000`)
    expect(log.status, log.text).toBe(200)
    const message = log.body.data.find((d: any) => d.payload.parameters.entity.id === e.body.id)
    expect(message?.payload.parameters.source).toEqual({ type: "consent-token", id: claimsOf(answer.id_token).jti })
    expect(message.payload.parameters.entity).toMatchObject({ delegate: { id: "rep-3" }, user: { organization_user_id: me } })
    // Nothing of the token itself travels.
    expect(JSON.stringify(message.payload)).not.toContain(answer.id_token)
  })

  it("a body naming another user or another organization is refused and writes nothing", async () => {
    const { call } = await tokenOf(t, me)
    const before = { theirs: (await eventsOf(t, `user_id=${theirs.user.id}`)).length, twin: (await eventsOf(u, `user_id=${twin.user.id}`)).length }
    const newcomer = unique("newcomer")
    expect403(await call("POST", "/v1/consents/events", { body: eventFor(t, other) }))
    expect403(await call("POST", "/v1/consents/events", { body: eventFor(t, newcomer) }))
    const byId = await call("POST", "/v1/consents/events", {
      body: { organization_id: t.org.id, user: { id: theirs.user.id }, consents: { purposes: purposes(["analytics", false]) } }
    })
    expect([400, 403], byId.text).toContain(byId.status)
    const mixed = await call("POST", "/v1/consents/events", {
      body: { organization_id: t.org.id, user: { id: theirs.user.id, organization_user_id: me }, consents: { purposes: purposes(["analytics", false]) } }
    })
    expect([400, 403], mixed.text).toContain(mixed.status)
    const intoU = await call("POST", "/v1/consents/events", { body: { ...eventFor(t, me), organization_id: u.org.id } })
    expect([400, 403], intoU.text).toContain(intoU.status)
    expect((await eventsOf(t, `user_id=${theirs.user.id}`)).length).toBe(before.theirs)
    expect(await eventsOf(t, `organization_user_id=${newcomer}`)).toEqual([])
    expect((await eventsOf(u, `user_id=${twin.user.id}`)).length).toBe(before.twin)
    expect((await t.call("GET", `/v1/consents/users/${encodeURIComponent(newcomer)}?$by_organization_user_id=true`)).status).toBe(404)
  })

  it("recording needs store_cmp_consents; reading does not", async () => {
    const s = await tenant({ consents_api: true })
    const ouid = unique("crm")
    await recorded(s, ouid)
    const { call } = await tokenOf(s, ouid)
    const refused = await call("POST", "/v1/consents/events", { body: eventFor(s, ouid) })
    expect403(refused)
    expect(refused.text).toContain("store_cmp_consents")
    expect((await call("GET", "/v1/consents/events")).status).toBe(200)
    expect((await eventsOf(s, `organization_user_id=${ouid}`)).length).toBe(1)
    // Guests' feature does not stand in for it.
    const flags = await op.featuresOf(s.org.id)
    expect((await op.call("PATCH", `/v1/premium-features/${flags.id}`, { body: { store_guest_cmp_consents: true } })).status).toBe(200)
    expect403(await call("POST", "/v1/consents/events", { body: eventFor(s, ouid) }))
    expect((await op.call("PATCH", `/v1/premium-features/${flags.id}`, { body: { store_cmp_consents: true } })).status).toBe(200)
    const allowed = await call("POST", "/v1/consents/events", { body: eventFor(s, ouid) })
    expect(allowed.status, allowed.text).toBe(201)
  })

  it("anything else is a 403, even on its own user and events, and changes nothing", async () => {
    const { call } = await tokenOf(t, me)
    const own = mine[0]
    const ownUser = encodeURIComponent(own.user.id)
    const ownEvent = encodeURIComponent(own.id)
    const requests: Array<[string, string, unknown?]> = [
      ["GET", `/v1/consents/events/${ownEvent}`],
      ["PATCH", `/v1/consents/events/${ownEvent}`, { metadata: { changed: true } }],
      ["DELETE", `/v1/consents/events/${ownEvent}`],
      ["GET", `/v1/consents/events/${ownEvent}/tcstring`],
      ["GET", "/v1/consents/users"],
      ["GET", `/v1/consents/users?organization_user_id=${encodeURIComponent(me)}`],
      ["POST", "/v1/consents/users", { organization_id: t.org.id, organization_user_id: unique("made") }],
      ["PATCH", `/v1/consents/users/${ownUser}`, { country: "FR" }],
      ["DELETE", `/v1/consents/users/${ownUser}`],
      ["DELETE", `/v1/consents/users/${encodeURIComponent(me)}?$by_organization_user_id=true`],
      ["POST", "/v1/consents/tokens", { organization_id: t.org.id, organization_user_id: me }],
      ["POST", "/v1/consents/tokens", { organization_id: t.org.id, organization_user_id: me, lifetime: 2_678_400 }],
      ["GET", "/v1/properties"],
      ["POST", "/v1/properties", { organization_id: t.org.id, name: "P", website: "https://p.example" }],
      ["GET", "/v1/keys"],
      ["GET", `/v1/organizations/${t.org.id}`],
      ["GET", "/v1/secrets"],
      ["GET", "/v1/webhooks"],
      ["GET", "/v1/languages"]
    ]
    for (const [method, path, body] of requests) {
      const r = await call(method, path, body === undefined ? {} : { body })
      expect(r.status, `${method} ${path}: ${r.text}`).toBe(403)
      expect403(r)
      expect(r.text).not.toMatch(/eyJ/)
    }
    // Everything is as it was.
    const event = await t.call("GET", `/v1/consents/events/${ownEvent}`)
    expect(event.status, event.text).toBe(200)
    expect(event.body).toEqual(own)
    const user = await t.call("GET", `/v1/consents/users/${ownUser}`)
    expect(user.status, user.text).toBe(200)
    expect(user.body.country ?? null).toBeNull()
    expect((await t.call("GET", `/v1/properties`)).body.total).toBe(0)
  })

  it("the organization's access token on the same routes is an access token: the whole organization", async () => {
    const users = await t.call("GET", "/v1/consents/users?$limit=1000")
    expect(users.status, users.text).toBe(200)
    expect(users.body.data.map((x: any) => x.id)).toEqual(expect.arrayContaining([mine[0].user.id, theirs.user.id]))
    const events = await t.call("GET", "/v1/consents/events?$limit=1000")
    expect(events.body.data.map((x: any) => x.id)).toEqual(expect.arrayContaining([...mine.map((e) => e.id), theirs.id]))
    const forOther = await t.call("POST", "/v1/consents/events", { body: eventFor(t, other) })
    expect(forOther.status, forOther.text).toBe(201)
  })

  it("neither token passes for the other: claims re-signed across audiences, or with another key, are 401", async () => {
    const { answer } = await tokenOf(t, me)
    const consent = claimsOf(answer.id_token)
    const access = claimsOf(t.token)
    const userPath = `/v1/consents/users/${encodeURIComponent(me)}?$by_organization_user_id=true`
    // A genuine one of each works where it belongs.
    expect((await as(server.url, answer.id_token)("GET", userPath)).status).toBe(200)
    expect((await t.call("GET", "/v1/keys")).status).toBe(200)

    const { aud: _, ...unaudienced } = consent
    const withoutAudience = await signed(unaudienced)
    const accessWithAudience = await signed({ ...access, aud: consent.aud })
    const consentOfAccess = await signed({ ...consent, ...access, aud: consent.aud, sub: me })
    const wrongKey = await signed(consent, "another-key-0123456789-abcdefghijklmnopq")
    for (const token of [withoutAudience, wrongKey]) {
      expect401(await as(server.url, token)("GET", userPath))
      expect401(await as(server.url, token)("GET", "/v1/consents/events"))
      expect401(await as(server.url, token)("GET", "/v1/keys"))
    }
    // An access token's claims under the consent audience never open the organization's routes.
    for (const token of [accessWithAudience, consentOfAccess]) {
      const keys = await as(server.url, token)("GET", "/v1/keys")
      expect([401, 403], keys.text).toContain(keys.status)
      const users = await as(server.url, token)("GET", "/v1/consents/users")
      expect([401, 403], users.text).toContain(users.status)
    }
  })
})

describe("delegates recorded by a backend", () => {
  it("a client key may set delegate on create: shown in the answer, on get and on find; absent is null", async () => {
    const t = await tenant(FULL)
    const ouid = unique("crm")
    const delegate = { id: "rep-9", name: "Bo", metadata: { ticket: "T-1" } }
    const e = await recorded(t, ouid, { delegate })
    expect(e.delegate).toEqual(delegate)
    const got = await t.call("GET", `/v1/consents/events/${encodeURIComponent(e.id)}`)
    expect(got.body.delegate).toEqual(delegate)
    const found = await t.call("GET", `/v1/consents/events?id=${encodeURIComponent(e.id)}`)
    expect(found.body.data[0].delegate).toEqual(delegate)
    const idOnly = await recorded(t, ouid, { delegate: { id: "rep-10" } })
    expect(idOnly.delegate).toMatchObject({ id: "rep-10" })
    const none = await recorded(t, ouid)
    expect(none.delegate ?? null).toBeNull()
    // A delegate without an id is no delegate.
    expect400(await t.call("POST", "/v1/consents/events", { body: eventFor(t, ouid, { delegate: { name: "nobody" } }) }))
  })
})

describe("expiry", () => {
  it("a token is accepted until its expires_at and is a 401 after it; a longer one still works", async () => {
    const t = await tenant(FULL)
    const ouid = unique("crm")
    await recorded(t, ouid)
    const short = await tokenOf(t, ouid, { lifetime: 60 })
    const one = await tokenOf(t, ouid, { lifetime: 1 })
    const long = await tokenOf(t, ouid, { lifetime: 3000 })
    const userPath = `/v1/consents/users/${encodeURIComponent(ouid)}?$by_organization_user_id=true`
    expect((await short.call("GET", userPath)).status).toBe(200)
    expect((await one.call("GET", userPath)).status).toBe(200)
    server.clock.advance(2_000)
    expect401(await one.call("GET", userPath))
    server.clock.advance(57_000)
    expect((await short.call("GET", userPath)).status).toBe(200)
    server.clock.advance(2_000)
    expect401(await short.call("GET", userPath))
    expect401(await short.call("GET", "/v1/consents/events"))
    expect401(await short.call("POST", "/v1/consents/events", { body: eventFor(t, ouid) }))
    // Expired is expired everywhere, including where a live consent token is a 403.
    expect401(await short.call("GET", "/v1/keys"))
    expect((await eventsOf(t, `organization_user_id=${ouid}`)).length).toBe(1)
    expect((await long.call("GET", userPath)).status).toBe(200)
    const write = await long.call("POST", "/v1/consents/events", { body: eventFor(t, ouid) })
    expect(write.status, write.text).toBe(201)
  })
})
