import { beforeEach, describe, expect, it } from "vitest"
import { as, call, expectError, type Reply, unique } from "./helpers.js"
import { type ServerFixture, type TestTenant, type Operator, useServer } from "./fixture.js"

/**
 * The rate of end users' consent writes (`PUBLIC_RATE_LIMIT`): per public key (and per
 * organization for its consent tokens) and per client address, a 429 with `Retry-After` past
 * either; the address is the socket's, or the one the farthest trusted proxy appended (an IPv6
 * address counted by its /64). Here 5 writes a minute per key and 3 per address.
 */

const PER_KEY = 5
const PER_ADDRESS = 3
const limits = { publicRateLimit: { perKey: PER_KEY, perAddress: PER_ADDRESS } }

const FEATURES = { store_guest_cmp_consents: true, consents_api: true }

const guestEvent = (t: TestTenant, extra: Record<string, unknown> = {}) => ({
  organization_id: t.org.id,
  user: { id: unique("device") },
  consents: { purposes: [{ id: "analytics", enabled: true }] },
  ...extra
})

interface WriteOptions {
  /** Sent as X-Forwarded-For. */
  readonly from?: string
  /** The key in `?public_api_key=` instead of the header. */
  readonly query?: boolean
  readonly body?: unknown
  readonly headers?: Record<string, string>
}

const writeOf = (fixture: ServerFixture<Operator>) => (t: TestTenant, options: WriteOptions = {}) =>
  call(fixture.base, "POST", options.query ? `/v1/consents/events?public_api_key=${encodeURIComponent(t.org.public_api_key)}` : "/v1/consents/events", {
    body: options.body ?? guestEvent(t),
    headers: {
      ...(options.query ? {} : { "x-public-api-key": t.org.public_api_key }),
      ...(options.from === undefined ? {} : { "x-forwarded-for": options.from }),
      ...options.headers
    }
  })

/** A 429 in the contract's shape, with whole seconds to wait: answers them. */
const expectLimited = (r: Reply, what: string) => {
  expect([what, r.status], r.text).toEqual([what, 429])
  expectError(r, 429, "TooManyRequests", "too-many-requests")
  const retryAfter = r.headers.get("retry-after")
  expect(retryAfter, what).toMatch(/^[1-9]\d*$/)
  expect(Number(retryAfter), what).toBeLessThanOrEqual(60)
  return Number(retryAfter)
}

const expectCreated = (r: Reply, what: string) => expect([what, r.status], r.text).toEqual([what, 201])

const TOKEN_FEATURES = { ...FEATURES, store_cmp_consents: true }

/** A consent token of one of `t`'s users: its writes, from an address when one is given. */
const tokenWriterOf = (fixture: ServerFixture<Operator>) => async (t: TestTenant) => {
  const organizationUserId = unique("crm")
  const minted = await t.call("POST", "/v1/consents/tokens", { body: { organization_id: t.org.id, organization_user_id: organizationUserId } })
  expect(minted.status, minted.text).toBe(201)
  const asToken = as(fixture.base, minted.body.id_token as string)
  return {
    write: (from?: string) =>
      asToken("POST", "/v1/consents/events", {
        body: { organization_id: t.org.id, user: { organization_user_id: organizationUserId }, consents: { purposes: [{ id: "analytics", enabled: true }] } },
        headers: from === undefined ? {} : { "x-forwarded-for": from }
      }),
    read: () => asToken("GET", "/v1/consents/events")
  }
}

describe("per client address (the socket's)", () => {
  const fixture = useServer({ trustProxy: false, ...limits })
  const { server, tenant } = fixture
  const write = writeOf(fixture)
  // Every bucket is full again a minute later: each test starts with the whole allowance.
  beforeEach(() => server.clock.advance(61_000))

  it("past the allowance, 429 with Retry-After and the error body, nothing written; after Retry-After, served again", async () => {
    const t = await tenant(FEATURES)
    for (let i = 0; i < PER_ADDRESS; i++) expectCreated(await write(t, { query: i === 1 }), `write ${i}`)
    const id = unique("refused")
    const retryAfter = expectLimited(await write(t, { body: guestEvent(t, { id }) }), "over")
    expectLimited(await write(t, { query: true }), "over, by query")
    const lost = await t.call("GET", `/v1/consents/events/${id}`)
    expect(lost.status, lost.text).toBe(404)
    server.clock.advance(retryAfter * 1000)
    expectCreated(await write(t, { body: guestEvent(t, { id }) }), "after Retry-After")
    expect((await t.call("GET", `/v1/consents/events/${id}`)).status).toBe(200)
  })

  it("a page at the organization's origin gets its 429 with the CORS headers, so it can read Retry-After", async () => {
    const t = await tenant(FEATURES)
    const origin = `https://${unique("shop")}.example.com`
    const property = await t.call("POST", "/v1/properties", { body: { organization_id: t.org.id, name: "Shop", website: origin } })
    expect(property.status, property.text).toBe(201)
    const headers = { origin }
    for (let i = 0; i < PER_ADDRESS; i++) expectCreated(await write(t, { headers }), `write ${i}`)
    const r = await write(t, { headers })
    expectLimited(r, "over, from the page")
    expect(r.headers.get("access-control-allow-origin")).toBe(origin)
    expect((r.headers.get("vary") ?? "").toLowerCase()).toContain("origin")
  })

  it("counts the address whatever key it sends: another organization's key from it is refused too", async () => {
    const a = await tenant(FEATURES)
    const b = await tenant(FEATURES)
    for (let i = 0; i < PER_ADDRESS; i++) expectCreated(await write(a), `write ${i}`)
    expectLimited(await write(b), "another key, same address")
  })

  it("ignores X-Forwarded-For when the proxy is not trusted", async () => {
    const t = await tenant(FEATURES)
    for (let i = 0; i < PER_ADDRESS; i++) expectCreated(await write(t, { from: `203.0.113.${i + 1}` }), `write ${i}`)
    expectLimited(await write(t, { from: "198.51.100.7" }), "a new forwarded address")
  })

  it("consent-token writes count against the address as public writes do: 429 past it; the token's reads are not limited", async () => {
    const t = await tenant(TOKEN_FEATURES)
    const token = await tokenWriterOf(fixture)(t)
    for (let i = 0; i < PER_ADDRESS; i++) expectCreated(await token.write(), `token write ${i}`)
    const retryAfter = expectLimited(await token.write(), "token write, over")
    for (let i = 0; i < PER_ADDRESS + 1; i++) expect((await token.read()).status).toBe(200)
    // One allowance per address, whichever credential the device holds.
    expectLimited(await write(t), "public write from the same address")
    server.clock.advance(retryAfter * 1000)
    expectCreated(await token.write(), "token write after Retry-After")
  })

  it("a backend's bearer writes are not limited", async () => {
    const t = await tenant(FEATURES)
    for (let i = 0; i < PER_ADDRESS; i++) expectCreated(await write(t), `write ${i}`)
    expectLimited(await write(t), "public")
    for (let i = 0; i < PER_KEY + PER_ADDRESS; i++) {
      const r = await t.call("POST", "/v1/consents/events", { body: { ...guestEvent(t), user: { organization_user_id: unique("crm") } } })
      expect(r.status, r.text).toBe(201)
    }
  })
})

describe("behind two trusted proxies", () => {
  const fixture = useServer({ ...limits, trustProxy: 2 })
  const { server, tenant } = fixture
  const write = writeOf(fixture)
  beforeEach(() => server.clock.advance(61_000))

  it("the address is the second from the right; with one value only (a proxy skipped), that value", async () => {
    const t = await tenant(FEATURES)
    for (let i = 0; i < PER_ADDRESS; i++) expectCreated(await write(t, { from: `198.51.100.${i + 1}, 203.0.113.30, 10.0.0.${i + 1}` }), `write ${i}`)
    expectLimited(await write(t, { from: "192.0.2.1, 203.0.113.30, 10.0.0.9" }), "rotated, same client")
    expectLimited(await write(t, { from: "203.0.113.30" }), "a proxy skipped")
    expectCreated(await write(t, { from: "203.0.113.30, 203.0.113.31, 10.0.0.1" }), "another client")
  })
})

describe("behind a trusted proxy: per forwarded address, and per key", () => {
  const fixture = useServer({ ...limits, trustProxy: 1 })
  const { server, tenant } = fixture
  const write = writeOf(fixture)
  beforeEach(() => server.clock.advance(61_000))

  it("each forwarded address has its own allowance", async () => {
    const t = await tenant(FEATURES)
    for (let i = 0; i < PER_ADDRESS; i++) expectCreated(await write(t, { from: "203.0.113.10" }), `first ${i}`)
    expectLimited(await write(t, { from: "203.0.113.10" }), "first, over")
    expectCreated(await write(t, { from: "203.0.113.11" }), "second")
  })

  it("the address is the one the proxy appended: values the client wrote left of it do not dodge the limit", async () => {
    const t = await tenant(FEATURES)
    // The client writes its own X-Forwarded-For; the proxy appends the address it was reached from.
    for (let i = 0; i < PER_ADDRESS; i++) expectCreated(await write(t, { from: `198.51.100.${i + 1}, 203.0.113.20` }), `write ${i}`)
    for (let i = 0; i < 3; i++) expectLimited(await write(t, { from: `192.0.2.${i + 1}, 203.0.113.20` }), `rotated ${i}`)
    expectLimited(await write(t, { from: "203.0.113.20" }), "nothing written by the client")
    expectCreated(await write(t, { from: "203.0.113.20, 203.0.113.21" }), "another client, the first one's address written in front")
  })

  it("two IPv6 addresses of one /64 share an allowance; another /64 has its own; an IPv4-mapped address is its IPv4 address", async () => {
    const t = await tenant(FEATURES)
    const sameNetwork = ["2001:db8:a:b::1", "2001:db8:a:b:ffff:ffff:ffff:ffff", "2001:DB8:A:B:0:0:0:7"]
    for (const [i, from] of sameNetwork.entries()) expectCreated(await write(t, { from }), `write ${i}`)
    expectLimited(await write(t, { from: "2001:db8:a:b:1234::5" }), "a fourth address of the /64")
    expectCreated(await write(t, { from: "2001:db8:a:c::1" }), "another /64")
    // Another key, so its own allowance does not run out first.
    const other = await tenant(FEATURES)
    for (let i = 0; i < PER_ADDRESS; i++) expectCreated(await write(other, { from: "203.0.113.50" }), `IPv4 ${i}`)
    expectLimited(await write(other, { from: "::ffff:203.0.113.50" }), "the same, IPv4-mapped")
  })

  it("consent-token writes: the address they come from, and the organization's own allowance for its tokens", async () => {
    const t = await tenant(TOKEN_FEATURES)
    const token = await tokenWriterOf(fixture)(t)
    for (let i = 0; i < PER_ADDRESS; i++) expectCreated(await token.write(`192.0.2.9, 203.0.113.60`), `write ${i}`)
    expectLimited(await token.write("192.0.2.10, 203.0.113.60"), "rotated in front of the same address")
    for (let i = 0; i < PER_KEY - PER_ADDRESS; i++) expectCreated(await token.write(`203.0.113.${70 + i}`), `new address ${i}`)
    expectLimited(await token.write("203.0.113.90"), "the organization's tokens, from a new address")
    // Its public key's allowance is its own.
    expectCreated(await write(t, { from: "203.0.113.91" }), "a public write of the same organization")
  })

  it("one key has its own allowance, whatever addresses it comes from; another key has its own", async () => {
    const t = await tenant(FEATURES)
    const other = await tenant(FEATURES)
    for (let i = 0; i < PER_KEY; i++) expectCreated(await write(t, { from: `198.51.100.${i + 1}`, query: i % 2 === 0 }), `address ${i}`)
    const retryAfter = expectLimited(await write(t, { from: "198.51.100.200" }), "the key, from a new address")
    expectLimited(await write(t, { from: "198.51.100.201", query: true }), "the key by query, from a new address")
    expectCreated(await write(other, { from: "198.51.100.202" }), "another key")
    server.clock.advance(retryAfter * 1000)
    expectCreated(await write(t, { from: "198.51.100.203" }), "the key, after Retry-After")
  })
})
