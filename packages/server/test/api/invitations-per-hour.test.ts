import { describe, expect, it } from "vitest"
import { as, client, expectError, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * `INVITATIONS_PER_HOUR`: an organization invites at most that many persons in an hour, whoever
 * invites (its client keys, its members, the operator); past it `POST /v1/members` is a 429 with
 * `Retry-After`, until the oldest invitation of the hour is an hour old. Counted in the store.
 */

const { op, server, tenant } = useServer({ settings: { invitationsPerHour: 3 } })

const invite = (call: (typeof op)["call"], organizationId: string) =>
  call("POST", "/v1/members", { body: { name: "Ada", email: `${unique("ada")}@example.com`, organization_id: organizationId } })

describe("invitations per hour", () => {
  it("the 4th invitation of the hour is a 429 with Retry-After, for the operator too; other organizations are not affected", async () => {
    const a = await tenant()
    const b = await tenant()
    expect((await invite(a.call, a.org.id)).status).toBe(201)
    server.clock.advance(10 * 60_000)
    expect((await invite(a.call, a.org.id)).status).toBe(201)
    expect((await invite(op.call, a.org.id)).status).toBe(201)

    const refused = await invite(a.call, a.org.id)
    expectError(refused, 429, "TooManyRequests", "too-many-requests")
    // The first invitation, ten minutes old, leaves the hour in fifty minutes.
    expect(refused.headers.get("retry-after")).toBe(String(50 * 60))
    expect((await invite(op.call, a.org.id)).status).toBe(429)
    // Nothing of the refused invites was kept.
    expect((await a.call("GET", "/v1/members")).body.total).toBe(3)

    expect((await invite(b.call, b.org.id)).status).toBe(201)

    // A removed member's invitation still counts: removing makes no room.
    const members = (await a.call("GET", "/v1/members")).body.data as Array<{ id: string }>
    expect((await a.call("DELETE", `/v1/members/${members[0]!.id}`)).status).toBe(200)
    expect((await invite(a.call, a.org.id)).status).toBe(429)

    server.clock.advance(50 * 60_000)
    // The hour outlived the session: a new one.
    const again = as(server.url, await client(server.url).login(a.key.id, a.secret))
    expect((await invite(again, a.org.id)).status).toBe(201)
    expect((await invite(again, a.org.id)).status).toBe(429)
  })
})
