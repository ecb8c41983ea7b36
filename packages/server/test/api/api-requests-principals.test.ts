import { describe, expect, it } from "vitest"
import { as, call, client, expectError, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * `api_requests` counts every principal but the operator against the organization it acts in:
 * members (where the request names, else where its object belongs, else once in each of their
 * organizations) and platform integrations, not client keys only.
 */

const { server, op } = useServer()

/** Quotas are set before an organization's first counted request: the counter caches the limit for 5 s. */
const setApiRequests = async (organizationId: string, limit: number) => {
  const quota = await op.quotaOf(organizationId)
  const r = await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { api_requests: limit } })
  expect(r.status, r.text).toBe(200)
}

/** Invites a person into each organization (by the operator, which is not counted) and accepts; answers its caller. */
const memberOf = async (...organizationIds: Array<string>) => {
  const email = `${unique("member")}@example.com`
  const password = "a long member password"
  let token = ""
  for (const organizationId of organizationIds) {
    const invited = await op.call("POST", "/v1/members", { body: { name: "Mia", email, organization_id: organizationId } })
    expect(invited.status, invited.text).toBe(201)
    const accepted = await client(server.url).call("POST", "/v1/invitations/accept", {
      body: { token: invited.body.invitation.token, password }
    })
    expect(accepted.status, accepted.text).toBe(201)
    token = accepted.body.access_token
  }
  return as(server.url, token)
}

const expect429 = (r: Awaited<ReturnType<typeof call>>) => {
  expectError(r, 429, "TooManyRequests", "too-many-requests")
  expect(r.headers.get("retry-after")).toMatch(/^[1-9]\d*$/)
}

describe("api_requests of members and platform integrations", () => {
  it("a member of one organization counts there: over the quota it gets 429 with Retry-After, and so does the client key", async () => {
    const t = await op.tenant()
    await setApiRequests(t.org.id, 3)
    const member = await memberOf(t.org.id)
    expect((await member("GET", "/v1/keys")).status).toBe(200)
    expect((await member("GET", `/v1/organizations/${t.org.id}`)).status).toBe(200)
    expect((await as(server.url, t.token)("GET", "/v1/quotas")).status).toBe(200)
    expect429(await member("GET", "/v1/keys"))
    expect429(await member("GET", "/v1/organizations"))
    expect429(await as(server.url, t.token)("GET", "/v1/keys"))
    // Nothing is written by a refused request.
    const name = unique("refused")
    expect429(await member("POST", "/v1/properties", { body: { organization_id: t.org.id, name, website: "https://a.example" } }))
    expect((await op.call("GET", `/v1/properties?organization_id=${t.org.id}&name=${name}`)).body.total).toBe(0)
  })

  it("a member of two organizations counts where the request names, where its object belongs, else once in each", async () => {
    const p = await op.tenant()
    const q = await op.tenant()
    await setApiRequests(p.org.id, 3)
    await setApiRequests(q.org.id, 3)
    const inQ = await op.call("POST", "/v1/properties", { body: { organization_id: q.org.id, name: "Q site", website: "https://q.example" } })
    expect(inQ.status, inQ.text).toBe(201)
    const member = await memberOf(p.org.id, q.org.id)

    // A find over both: P 1, Q 1.
    const both = await member("GET", "/v1/keys")
    expect(both.status, both.text).toBe(200)
    // Named by the query: P 2.
    expect((await member("GET", `/v1/keys?organization_id=${p.org.id}`)).status).toBe(200)
    // The object's organization: Q 2.
    expect((await member("GET", `/v1/properties/${inQ.body.id}`)).status).toBe(200)
    // Named by the body: P 3.
    const created = await member("POST", "/v1/properties", { body: { organization_id: p.org.id, name: "P site", website: "https://p.example" } })
    expect(created.status, created.text).toBe(201)

    // P is spent; a find over both is refused and counts in Q neither.
    expect429(await member("GET", `/v1/keys?organization_id=${p.org.id}`))
    expect429(await member("GET", "/v1/keys"))
    expect429(await member("GET", `/v1/properties/${created.body.id}`))
    expect((await member("GET", `/v1/keys?organization_id=${q.org.id}`)).status).toBe(200)
    // Now Q is spent too (3): its client key is refused as well.
    expect429(await member("GET", `/v1/properties/${inQ.body.id}`))
    expect429(await as(server.url, q.token)("GET", "/v1/keys"))
  })

  it("a platform integration counts against its organization; the operator is never counted", async () => {
    const t = await op.tenant()
    await setApiRequests(t.org.id, 2)
    const registered = await op.call("POST", "/v1/platform-integrations", { body: { name: "Shop plugin", organization_id: t.org.id } })
    expect(registered.status, registered.text).toBe(201)
    const session = await call(server.url, "POST", "/v1/platform-integrations/sessions", {
      headers: { "x-platform-authorization": registered.body.token }
    })
    expect(session.status, session.text).toBe(201)
    const integration = as(server.url, session.body.access_token)
    expect((await integration("GET", "/v1/keys")).status).toBe(200)
    expect((await integration("GET", "/v1/quotas")).status).toBe(200)
    expect429(await integration("GET", "/v1/keys"))
    for (let i = 0; i < 3; i++) expect((await op.call("GET", `/v1/keys?organization_id=${t.org.id}`)).status).toBe(200)
  })
})
