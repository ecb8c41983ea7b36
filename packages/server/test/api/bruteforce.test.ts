import { describe, expect, it } from "vitest"
import { ADMIN, call, expect400, expectError, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

/** Repeated failed session attempts are slowed per key and per client address, never for ever. */

const { server } = useServer({}, { operator: false })

const attempt = (key: string, secret: string, headers: Record<string, string> = {}) =>
  call(server.url, "POST", "/v1/sessions", { body: { type: "api-key", key, secret }, headers })

describe("brute force", () => {
  it("after five failures for a key, attempts wait (429 with Retry-After), even with the right secret; then it works", async () => {
    for (let i = 0; i < 4; i++) expect400(await attempt(ADMIN.key, `wrong-${i}`))
    expect400(await attempt(ADMIN.key, "wrong-last"))
    const blocked = await attempt(ADMIN.key, ADMIN.secret)
    expectError(blocked, 429, "TooManyRequests", "too-many-requests")
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    // The block is short and grows with further failures, up to a cap: the owner gets back in.
    server.clock.advance(1500)
    const ok = await attempt(ADMIN.key, ADMIN.secret)
    expect(ok.status, ok.text).toBe(201)
    // A success clears the key's failures, not the address's: its sixth failure waits 2 s.
    expect400(await attempt(ADMIN.key, "wrong-again"))
    expect((await attempt(ADMIN.key, ADMIN.secret)).status).toBe(429)
    server.clock.advance(2500)
    expect((await attempt(ADMIN.key, ADMIN.secret)).status).toBe(201)
  })

  it("one address guessing many keys is slowed too", async () => {
    server.clock.advance(3_600_001)
    for (let i = 0; i < 5; i++) expect400(await attempt(`made-up-${i}`, "x"))
    const blocked = await attempt("another-made-up", "x")
    expect(blocked.status).toBe(429)
    server.clock.advance(1500)
    expect400(await attempt("another-made-up", "x"))
  })
})

describe("brute force on the other credential endpoints", () => {
  // Behind a trusted proxy, so a test can speak from several client addresses.
  const { server: proxied, op } = useServer({ trustProxy: 1 })
  const from = (address: string) => ({ "x-forwarded-for": address })

  const integrationSession = (token: string, address: string) =>
    call(proxied.url, "POST", "/v1/platform-integrations/sessions", { headers: { "x-platform-authorization": token, ...from(address) } })
  const accept = (token: string, password: string, address: string) =>
    call(proxied.url, "POST", "/v1/invitations/accept", { body: { token, password }, headers: from(address) })
  const invite = async (organizationId: string, email: string) => {
    const r = await op.call("POST", "/v1/members", { body: { name: "Ida", email, organization_id: organizationId } })
    expect(r.status, r.text).toBe(201)
    return r.body.invitation.token as string
  }

  it("sessions: a success from an address clears the credential that succeeded, never the address's count", async () => {
    const session = (key: string, secret: string, address: string) =>
      call(proxied.url, "POST", "/v1/sessions", { body: { type: "api-key", key, secret }, headers: from(address) })
    for (let i = 0; i < 4; i++) expect400(await session(`made-up-${i}`, "x", "10.0.5.1"))
    // A login of the guesser's own between guesses does not buy it more guesses.
    expect((await session(ADMIN.key, ADMIN.secret, "10.0.5.1")).status).toBe(201)
    expect400(await session("made-up-4", "x", "10.0.5.1"))
    expectError(await session("made-up-5", "x", "10.0.5.1"), 429, "TooManyRequests", "too-many-requests")
    expectError(await session(ADMIN.key, ADMIN.secret, "10.0.5.1"), 429, "TooManyRequests", "too-many-requests")
    // The credential itself is not held back elsewhere.
    expect((await session(ADMIN.key, ADMIN.secret, "10.0.5.2")).status).toBe(201)
  })

  it("platform-integration tokens: after five failures the integration waits (429 with Retry-After), then its token works", async () => {
    const org = await op.createOrg()
    const registered = await op.call("POST", "/v1/platform-integrations", { body: { name: "Plugin", organization_id: org.id } })
    expect(registered.status, registered.text).toBe(201)
    const token = registered.body.token as string
    const forged = `${token.slice(0, token.indexOf("."))}.wrong`
    // From a different address each time: the integration's own counter blocks.
    for (let i = 0; i < 5; i++) expect400(await integrationSession(`${forged}${i}`, `10.0.1.${i}`))
    const blocked = await integrationSession(token, "10.0.1.100")
    expectError(blocked, 429, "TooManyRequests", "too-many-requests")
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    proxied.clock.advance(1500)
    const ok = await integrationSession(token, "10.0.1.100")
    expect(ok.status, ok.text).toBe(201)
    expect(ok.body.access_token).toBeTruthy()
  })

  it("platform-integration tokens: one address guessing made-up integrations is slowed too", async () => {
    for (let i = 0; i < 5; i++) expect400(await integrationSession(`pit_made-up-${i}.x`, "10.0.2.1"))
    expectError(await integrationSession("pit_another.x", "10.0.2.1"), 429, "TooManyRequests", "too-many-requests")
    expect400(await integrationSession("pit_another.x", "10.0.2.2"))
  })

  it("invitations: after five wrong tokens the invitation waits (429 with Retry-After), then it is accepted", async () => {
    const org = await op.createOrg()
    const token = await invite(org.id, `${unique("ida")}@example.com`)
    const forged = `${token.slice(0, token.indexOf("."))}.wrong`
    for (let i = 0; i < 5; i++) expect400(await accept(`${forged}${i}`, "a long enough password", `10.0.3.${i}`))
    const blocked = await accept(token, "a long enough password", "10.0.3.100")
    expectError(blocked, 429, "TooManyRequests", "too-many-requests")
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    proxied.clock.advance(1500)
    const ok = await accept(token, "a long enough password", "10.0.3.100")
    expect(ok.status, ok.text).toBe(201)
    expect(ok.body.access_token).toBeTruthy()
  })

  it("invitations: guessing an existing person's password through an invitation slows that person's email login too", async () => {
    const email = `${unique("ida")}@example.com`
    const first = await op.createOrg()
    expect((await accept(await invite(first.id, email), "the real password", "10.0.4.1")).status).toBe(201)
    const second = await op.createOrg()
    const token = await invite(second.id, email)
    for (let i = 0; i < 5; i++) expect400(await accept(token, `guess ${i} of the password`, `10.0.4.${10 + i}`))
    const login = (address: string) =>
      call(proxied.url, "POST", "/v1/sessions", { body: { type: "email", key: email, secret: "the real password" }, headers: from(address) })
    expectError(await login("10.0.4.100"), 429, "TooManyRequests", "too-many-requests")
    proxied.clock.advance(1500)
    expect((await login("10.0.4.100")).status).toBe(201)
  })
})
