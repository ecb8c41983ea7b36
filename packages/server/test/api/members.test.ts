import { describe, expect, it } from "vitest"
import { as, client, expect400, expect401, expect404, expect409, operatorOf, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

/** Members are invitations; accepting one opens an email session (spec section 5.7). */

const { server, op: operator } = useServer()

const invite = (token: string, organizationId: string, email: string) =>
  as(server.url, token)("POST", "/v1/members", { body: { name: "Ada", email, organization_id: organizationId } })

const accept = (token: string, password: string) =>
  client(server.url).call("POST", "/v1/invitations/accept", { body: { token, password } })

const emailSession = (email: string, password: string) =>
  client(server.url).call("POST", "/v1/sessions", { body: { type: "email", key: email, secret: password } })

describe("members and email sessions", () => {
  it("an invited person sets a password, signs in by email and acts in that organization only", async () => {
    const a = await operator.tenant()
    const b = await operator.tenant()
    const email = `${unique("ada")}@example.com`
    const invited = await invite(a.token, a.org.id, email.toUpperCase())
    expect(invited.status, invited.text).toBe(201)
    expect(invited.body).toMatchObject({ organization_id: a.org.id, authentication_method: "email_password" })
    expect(invited.body.invitation.token).toMatch(/^inv_/)

    // Not a member until accepted? Membership exists, but no password: email login fails.
    expect400(await emailSession(email, "correct horse battery"))

    const accepted = await accept(invited.body.invitation.token, "correct horse battery")
    expect(accepted.status, accepted.text).toBe(201)
    expect(accepted.body).toMatchObject({ type: "email", key: email.toLowerCase() })

    const session = await emailSession(email, "correct horse battery")
    expect(session.status, session.text).toBe(201)
    expect(session.body.type).toBe("email")
    const member = as(server.url, session.body.access_token)

    const orgs = await member("GET", "/v1/organizations")
    expect(orgs.status).toBe(200)
    expect(orgs.body.data.map((o: { id: string }) => o.id)).toEqual([a.org.id])
    expect404(await member("GET", `/v1/organizations/${b.org.id}`))
    const keys = await member("GET", "/v1/keys")
    expect(keys.status).toBe(200)
    expect(keys.body.data.every((k: { organization_id: string }) => k.organization_id === a.org.id)).toBe(true)

    // The invitation is used up, and the member list shows the person.
    expect400(await accept(invited.body.invitation.token, "another password"))
    const members = await as(server.url, a.token)("GET", "/v1/members")
    expect(members.body.data.map((m: { id: string }) => m.id)).toContain(invited.body.id)
    expect(members.body.data[0].invitation).toBeUndefined()
  })

  it("a member creates its own organization (self_register) and joins it", async () => {
    const a = await operator.tenant()
    const email = `${unique("bob")}@example.com`
    const invited = await invite(a.token, a.org.id, email)
    const accepted = await accept(invited.body.invitation.token, "bob's long password")
    const member = as(server.url, accepted.body.access_token)
    const created = await member("POST", "/v1/organizations", { body: { name: unique("bob-org") } })
    expect(created.status, created.text).toBe(201)
    expect(created.body.self_register).toBe(true)
    // Memberships are read per request: the new organization is visible at once.
    const got = await member("GET", `/v1/organizations/${created.body.id}`)
    expect(got.status).toBe(200)
  })

  it("inviting an existing person does not let the inviter take over the account", async () => {
    const a = await operator.tenant()
    const b = await operator.tenant()
    const email = `${unique("eve")}@example.com`
    const first = await invite(a.token, a.org.id, email)
    expect((await accept(first.body.invitation.token, "the real password")).status).toBe(201)
    const second = await invite(b.token, b.org.id, email)
    expect(second.status, second.text).toBe(201)
    // B holds the token but not the password: accepting with a new password is refused.
    const r = await accept(second.body.invitation.token, "attacker password")
    expect400(r)
    expect(r.body.errors).toHaveProperty("password")
    expect400(await emailSession(email, "attacker password"))
    expect((await accept(second.body.invitation.token, "the real password")).status).toBe(201)
    const member = as(server.url, (await emailSession(email, "the real password")).body.access_token)
    const orgs = await member("GET", "/v1/organizations")
    expect(orgs.body.data.map((o: { id: string }) => o.id).sort()).toEqual([a.org.id, b.org.id].sort())
  })

  it("refuses duplicates, bad tokens, short passwords and expired invitations", async () => {
    const a = await operator.tenant()
    const email = `${unique("dup")}@example.com`
    const invited = await invite(a.token, a.org.id, email)
    const dup = await invite(a.token, a.org.id, email)
    expect409(dup)
    expect(dup.body.errors).toHaveProperty("email")
    expect400(await accept("inv_nope.nope", "long enough password"))
    expect400(await accept("garbage", "long enough password"))
    const short = await accept(invited.body.invitation.token, "short")
    expect400(short)
    expect(short.body.errors).toHaveProperty("password")
    server.clock.advance(7 * 24 * 3600 * 1000 + 1000)
    expect400(await accept(invited.body.invitation.token, "long enough password"))
  })

  it("a member's token expires like any other", async () => {
    // Earlier tests moved the server clock by days: log in again.
    const a = await (await operatorOf(server.url)).tenant()
    const email = `${unique("tim")}@example.com`
    const invited = await invite(a.token, a.org.id, email)
    const accepted = await accept(invited.body.invitation.token, "a long password")
    server.clock.advance(3601 * 1000)
    expect401(await as(server.url, accepted.body.access_token)("GET", "/v1/keys"))
  })
})
