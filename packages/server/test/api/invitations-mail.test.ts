import type { AddressInfo } from "node:net"
import { SMTPServer } from "smtp-server"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { as, client, expect400, operatorOf, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * With a mailer (`SMTP_URL`, `MAIL_FROM`), an invitation's token reaches only the address
 * invited: the inviter never holds it, so no organization can choose another person's password.
 * A local SMTP server receives the mail.
 */

interface Received {
  readonly from: string
  readonly to: ReadonlyArray<string>
  readonly text: string
}

const received: Array<Received> = []

/** The message as the mail server got it, soft line breaks and `=XX` of quoted-printable undone. */
const decoded = (raw: string) =>
  raw.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))

const smtp = new SMTPServer({
  authOptional: true,
  disabledCommands: ["STARTTLS", "AUTH"],
  logger: false,
  onData(stream, session, callback) {
    let raw = ""
    stream.on("data", (chunk: Buffer) => (raw += chunk.toString("utf8")))
    stream.on("end", () => {
      received.push({
        from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
        to: session.envelope.rcptTo.map((r) => r.address),
        text: decoded(raw)
      })
      callback()
    })
  }
})

// Registered before the server's hooks: the mail server listens before it starts, and closes after it stops.
beforeAll(async () => {
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", () => resolve()))
})
afterAll(async () => {
  await new Promise<void>((resolve) => smtp.close(() => resolve()))
})
const { server, op: operator } = useServer(() => {
  const { port } = smtp.server.address() as AddressInfo
  return { smtp: { url: `smtp://127.0.0.1:${port}`, from: "Consent <no-reply@example.com>", acceptUrl: "https://app.example.com/accept" } }
})

const invite = (token: string, organizationId: string, email: string) =>
  as(server.url, token)("POST", "/v1/members", { body: { name: "Ada", email, organization_id: organizationId } })

const accept = (token: string, password: string) =>
  client(server.url).call("POST", "/v1/invitations/accept", { body: { token, password } })

const emailSession = (email: string, password: string) =>
  client(server.url).call("POST", "/v1/sessions", { body: { type: "email", key: email, secret: password } })

/** The invitation tokens mailed to an address, oldest first. */
const tokensMailedTo = (email: string) =>
  received.filter((m) => m.to.includes(email)).map((m) => /\binv_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/.exec(m.text)?.[0])

describe("invitations delivered by mail", () => {
  it("the invite's answer holds no token; the invitee's mail does, and accepting with it signs the person in", async () => {
    const a = await operator.tenant()
    const email = `${unique("ada")}@example.com`
    const invited = await invite(a.token, a.org.id, email)
    expect(invited.status, invited.text).toBe(201)
    expect(invited.body).toMatchObject({ organization_id: a.org.id })
    expect(invited.body).not.toHaveProperty("invitation")
    expect(invited.text).not.toMatch(/inv_/)

    const mails = received.filter((m) => m.to.includes(email))
    expect(mails).toHaveLength(1)
    expect(mails[0]!.to).toEqual([email])
    expect(mails[0]!.from).toBe("no-reply@example.com")
    expect(mails[0]!.text).toContain(a.org.name)
    const [token] = tokensMailedTo(email)
    expect(token).toMatch(/^inv_/)
    // The link to the page where the person chooses a password carries the token in its fragment.
    expect(mails[0]!.text).toContain(`https://app.example.com/accept#token=${token}`)

    const accepted = await accept(token!, "correct horse battery")
    expect(accepted.status, accepted.text).toBe(201)
    const session = await emailSession(email, "correct horse battery")
    expect(session.status, session.text).toBe(201)
    const orgs = await as(server.url, session.body.access_token)("GET", "/v1/organizations")
    expect(orgs.body.data.map((o: { id: string }) => o.id)).toEqual([a.org.id])
  })

  it("another organization inviting the same address cannot choose the person's password", async () => {
    const a = await operator.tenant()
    const b = await operator.tenant()
    const email = `${unique("victim")}@example.com`
    expect((await invite(a.token, a.org.id, email)).status).toBe(201)
    const second = await invite(b.token, b.org.id, email)
    expect(second.status, second.text).toBe(201)
    // B has nothing to accept with: its answer, and its view of the member, hold no token.
    expect(second.text).not.toMatch(/inv_/)
    const seen = await as(server.url, b.token)("GET", `/v1/members/${second.body.id}`)
    expect(seen.status).toBe(200)
    expect(seen.text).not.toMatch(/inv_/)
    // Both invitations went to the person only, who sets the password with one of them.
    const [fromA, fromB] = tokensMailedTo(email)
    expect(fromA).toMatch(/^inv_/)
    expect(fromB).toMatch(/^inv_/)
    expect400(await emailSession(email, "attacker's password"))
    expect((await accept(fromA!, "the real password")).status).toBe(201)
    const member = as(server.url, (await emailSession(email, "the real password")).body.access_token)
    // B's membership opens only once the person accepts B's invitation, with that password.
    expect((await member("GET", "/v1/organizations")).body.data.map((o: { id: string }) => o.id)).toEqual([a.org.id])
    expect400(await accept(fromB!, "attacker's password"))
    expect((await accept(fromB!, "the real password")).status).toBe(201)
    expect((await member("GET", "/v1/organizations")).body.data.map((o: { id: string }) => o.id).sort()).toEqual(
      [a.org.id, b.org.id].sort()
    )
  })
})

describe("a mail server that does not take the invitation", () => {
  let port = 0
  beforeAll(async () => {
    // A port that was listening a moment ago and no longer is.
    const down = new SMTPServer({ authOptional: true, disabledCommands: ["STARTTLS", "AUTH"], logger: false })
    await new Promise<void>((resolve) => down.listen(0, "127.0.0.1", () => resolve()))
    port = (down.server.address() as AddressInfo).port
    await new Promise<void>((resolve) => down.close(() => resolve()))
  })
  const { server: unreachable } = useServer(() => ({ smtp: { url: `smtp://127.0.0.1:${port}`, from: "no-reply@example.com" } }), { operator: false })

  it("answers 503 and leaves no member behind", async () => {
    const a = await (await operatorOf(unreachable.url)).tenant()
    const email = `${unique("lost")}@example.com`
    const r = await as(unreachable.url, a.token)("POST", "/v1/members", { body: { name: "Ada", email, organization_id: a.org.id } })
    expect(r.status, r.text).toBe(503)
    expect(r.body).toMatchObject({ code: 503, name: "Unavailable" })
    expect(r.text).not.toMatch(/inv_/)
    const members = await as(unreachable.url, a.token)("GET", "/v1/members")
    expect(members.body.data).toHaveLength(0)
  })
})
