import { beforeAll, describe, expect, it } from "vitest"
import { as, client, expectError, operatorOf } from "./helpers.js"
import { useServer } from "./fixture.js"

/** The `api_requests` quota per calendar month; this file moves the clock, so it has its own server. */

const fixture = useServer({}, { tenants: 2 })
const { server, tenants: [t, other] } = fixture
// Reassigned once the month jump expired the operator's token.
let op = fixture.op

beforeAll(async () => {
  // Set before the client's first request: the usage counter caches the limit for 5 s.
  const quota = await op.quotaOf(t.org.id)
  const r = await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { api_requests: 3 } })
  expect(r.status).toBe(200)
  expect(r.body.api_requests).toBe(3)
})

describe("api_requests quota", () => {
  it("the 4th request of the month is 429 with Retry-After; the next month it works again", async () => {
    const asT = as(server.url, t.token)
    expect((await asT("GET", "/v1/keys")).status).toBe(200)
    expect((await asT("GET", `/v1/organizations/${t.org.id}`)).status).toBe(200)
    expect((await asT("GET", "/v1/quotas")).status).toBe(200)

    const r = await asT("GET", "/v1/keys")
    expectError(r, 429, "TooManyRequests", "too-many-requests")
    const retryAfter = r.headers.get("retry-after")
    expect(retryAfter).toMatch(/^[1-9]\d*$/)
    // 2026-11-22T10:00Z to 2026-12-01T00:00Z.
    const toMonthEnd = (Date.parse("2026-12-01T00:00:00.000Z") - server.clock.millis) / 1000
    expect(Number(retryAfter)).toBeGreaterThan(0)
    expect(Number(retryAfter)).toBeLessThanOrEqual(Math.ceil(toMonthEnd))
    expect(Number(retryAfter)).toBeGreaterThan(toMonthEnd - 60)

    // Every kind of request is refused, writes too, and nothing is written.
    const write = await asT("POST", "/v1/keys", { body: { organization_id: t.org.id, name: "refused" } })
    expect(write.status).toBe(429)
    expect(write.headers.get("retry-after")).toMatch(/^[1-9]\d*$/)
    expect((await op.call("GET", `/v1/keys?organization_id=${t.org.id}&name=refused`)).body.total).toBe(0)

    // Logging in is not counted and still works; the new token is refused the same way.
    const { login } = client(server.url)
    const fresh = await login(t.key.id, t.secret)
    expect((await as(server.url, fresh)("GET", "/v1/keys")).status).toBe(429)

    // Other organizations and the operator are not affected.
    expect((await as(server.url, other.token)("GET", "/v1/keys")).status).toBe(200)
    expect((await op.call("GET", `/v1/keys?organization_id=${t.org.id}`)).status).toBe(200)

    // Into the next calendar month (tokens have expired meanwhile: log in again).
    server.clock.advance(Number(retryAfter) * 1000 + 1000)
    expect(new Date(server.clock.millis).toISOString().slice(0, 7)).toBe("2026-12")
    const december = await login(t.key.id, t.secret)
    const asDec = as(server.url, december)
    for (let i = 0; i < 3; i++) expect((await asDec("GET", "/v1/keys")).status).toBe(200)
    const again = await asDec("GET", "/v1/keys")
    expect(again.status).toBe(429)
    expect(Number(again.headers.get("retry-after"))).toBeGreaterThan(0)
  })

  it("raising the quota takes effect (after the 5 s cache of the limit)", async () => {
    op = await operatorOf(server.url) // the month jump expired the operator's token
    const quota = await op.quotaOf(t.org.id)
    const r = await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { api_requests: 10 } })
    expect(r.status).toBe(200)
    server.clock.advance(6_000)
    const { login } = client(server.url)
    const token = await login(t.key.id, t.secret)
    expect((await as(server.url, token)("GET", "/v1/keys")).status).toBe(200)
  })
})
