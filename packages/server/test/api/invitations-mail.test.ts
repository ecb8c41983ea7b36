import * as fs from "node:fs"
import * as net from "node:net"
import type { AddressInfo } from "node:net"
import { SMTPServer } from "smtp-server"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { as, client, expect400, unique } from "./helpers.js"
import { useServer } from "./fixture.js"
import { CANARY, personalDataIn, runLogPath } from "./run-log.js"
import { scrape, valueOf } from "./scrape.js"

/**
 * With a mailer (`SMTP_URL`, `MAIL_FROM`), an invitation's token reaches only the address
 * invited: the inviter never holds it, so no organization can choose another person's password.
 * The invite queues the mail; the mail dispatcher (beside the webhook dispatcher) sends it after
 * the commit, so a local SMTP server receives it a moment after the invite's answer.
 */

const METRICS_TOKEN = "metrics-token-0123456789abcdef"

/** Waits until `check` holds: the mail is sent after the answer, by the dispatcher's loop. */
const eventually = async (check: () => boolean | Promise<boolean>, what: string) => {
  for (let i = 0; i < 300; i++) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`never happened: ${what}`)
}

/** A fresh SMTP server that keeps what it receives in `into`. */
const smtpServer = (into: Array<Received>) =>
  new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      let raw = ""
      stream.on("data", (chunk: Buffer) => (raw += chunk.toString("utf8")))
      stream.on("end", () => {
        into.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          text: decoded(raw)
        })
        callback()
      })
    }
  })

interface Received {
  readonly from: string
  readonly to: ReadonlyArray<string>
  readonly text: string
}

const received: Array<Received> = []

/** The message as the mail server got it, soft line breaks and `=XX` of quoted-printable undone. */
const decoded = (raw: string) =>
  raw.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))

const smtp = smtpServer(received)

// Registered before the server's hooks: the mail server listens before it starts, and closes after it stops.
beforeAll(async () => {
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", () => resolve()))
})
afterAll(async () => {
  await new Promise<void>((resolve) => smtp.close(() => resolve()))
})
const { server, op: operator } = useServer(() => {
  const { port } = smtp.server.address() as AddressInfo
  return {
    smtp: { url: `smtp://127.0.0.1:${port}`, from: "Consent <no-reply@example.com>", acceptUrl: "https://app.example.com/accept" },
    dispatcher: true
  }
})

const invite = (token: string, organizationId: string, email: string) =>
  as(server.url, token)("POST", "/v1/members", { body: { name: "Ada", email, organization_id: organizationId } })

const accept = (token: string, password: string, base: string = server.url) =>
  client(base).call("POST", "/v1/invitations/accept", { body: { token, password } })

const emailSession = (email: string, password: string) =>
  client(server.url).call("POST", "/v1/sessions", { body: { type: "email", key: email, secret: password } })

/** The invitation tokens mailed to an address, oldest first. */
const tokensMailedTo = (email: string, mails: ReadonlyArray<Received> = received) =>
  mails.filter((m) => m.to.includes(email)).map((m) => /\binv_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/.exec(m.text)?.[0])

/** The tokens once `count` mails reached the address. */
const mailedTokens = async (email: string, count: number, mails: ReadonlyArray<Received> = received) => {
  await eventually(() => tokensMailedTo(email, mails).length >= count, `${count} mail(s) to the invitee`)
  return tokensMailedTo(email, mails)
}

describe("invitations delivered by mail", () => {
  it("the invite's answer holds no token; the invitee's mail does, and accepting with it signs the person in", async () => {
    const a = await operator.tenant()
    const email = `${unique("ada")}@example.com`
    const invited = await invite(a.token, a.org.id, email)
    expect(invited.status, invited.text).toBe(201)
    expect(invited.body).toMatchObject({ organization_id: a.org.id })
    expect(invited.body).not.toHaveProperty("invitation")
    expect(invited.text).not.toMatch(/inv_/)

    const [token] = await mailedTokens(email, 1)
    const mails = received.filter((m) => m.to.includes(email))
    expect(mails).toHaveLength(1)
    expect(mails[0]!.to).toEqual([email])
    expect(mails[0]!.from).toBe("no-reply@example.com")
    expect(mails[0]!.text).toContain(a.org.name)
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
    const [fromA, fromB] = await mailedTokens(email, 2)
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
  const later: Array<Received> = []
  let back: SMTPServer | undefined
  beforeAll(async () => {
    // A port that was listening a moment ago and no longer is.
    const down = new SMTPServer({ authOptional: true, disabledCommands: ["STARTTLS", "AUTH"], logger: false })
    await new Promise<void>((resolve) => down.listen(0, "127.0.0.1", () => resolve()))
    port = (down.server.address() as AddressInfo).port
    await new Promise<void>((resolve) => down.close(() => resolve()))
  })
  afterAll(async () => {
    await new Promise<void>((resolve) => (back ? back.close(() => resolve()) : resolve()))
  })
  const { server: unreachable, op } = useServer(() => ({
    smtp: { url: `smtp://127.0.0.1:${port}`, from: "no-reply@example.com" },
    dispatcher: true,
    metricsToken: METRICS_TOKEN
  }))
  const retries = async () => valueOf(await scrape(unreachable.url, METRICS_TOKEN), "cmp_invitation_mail_attempts_total", { outcome: "retry" })

  it("the invite answers 201 without a token, and the mail arrives once the mail server is back", async () => {
    const a = await op.tenant()
    const email = `${unique("later")}@example.com`
    const r = await as(unreachable.url, a.token)("POST", "/v1/members", { body: { name: "Ada", email, organization_id: a.org.id } })
    expect(r.status, r.text).toBe(201)
    expect(r.text).not.toMatch(/inv_/)
    const members = await as(unreachable.url, a.token)("GET", "/v1/members")
    expect(members.body.data.map((m: { id: string }) => m.id)).toEqual([r.body.id])
    // The first attempt failed and is counted; the next one is a minute later.
    await eventually(async () => (await retries()) === 1, "a failed attempt counted as a retry")
    back = smtpServer(later)
    await new Promise<void>((resolve) => back!.listen(port, "127.0.0.1", () => resolve()))
    unreachable.clock.advance(60_000)
    const [token] = await mailedTokens(email, 1, later)
    expect(token).toMatch(/^inv_/)
    expect((await accept(token!, "correct horse battery", unreachable.url)).status).toBe(201)
    expect(later.filter((m) => m.to.includes(email))).toHaveLength(1)
    expect(valueOf(await scrape(unreachable.url, METRICS_TOKEN), "cmp_invitation_mail_attempts_total", { outcome: "sent" })).toBe(1)
  })
})

describe("a mail server slow to greet", () => {
  /** Accepts connections and says nothing for 3 s, then turns the client away. */
  let connections = 0
  let greeted = false
  const sockets = new Set<net.Socket>()
  const timers = new Set<NodeJS.Timeout>()
  const silent = net.createServer((socket) => {
    connections++
    sockets.add(socket)
    socket.on("error", () => {})
    timers.add(setTimeout(() => {
      greeted = true
      socket.end("421 4.3.2 busy\r\n")
    }, 3_000))
  })
  beforeAll(async () => {
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", () => resolve()))
  })
  afterAll(async () => {
    for (const t of timers) clearTimeout(t)
    for (const s of sockets) s.destroy()
    await new Promise<void>((resolve) => silent.close(() => resolve()))
  })
  const { server: slow, op } = useServer(() => ({
    smtp: { url: `smtp://127.0.0.1:${(silent.address() as AddressInfo).port}`, from: "no-reply@example.com" },
    dispatcher: true
  }))

  it("the invite and another organization's consent write answer while the mail server has not greeted", async () => {
    const a = await op.tenant()
    const b = await op.tenant()
    const flags = await op.featuresOf(b.org.id)
    expect((await op.call("PATCH", `/v1/premium-features/${flags.id}`, { body: { consents_api: true } })).status).toBe(200)
    const inviting = as(slow.url, a.token)("POST", "/v1/members", {
      body: { name: "Ada", email: `${unique("slow")}@example.com`, organization_id: a.org.id }
    })
    // The mail is on its way: someone waits for the server's greeting.
    await eventually(() => connections > 0, "a connection to the mail server")
    const write = await as(slow.url, b.token)("POST", "/v1/consents/events", {
      body: {
        organization_id: b.org.id,
        user: { organization_user_id: CANARY.organizationUserId },
        consents: { purposes: [{ id: "p1", enabled: true }] },
        metadata: { ip: CANARY.ip, note: CANARY.metadata }
      }
    })
    expect(write.status, write.text).toBe(201)
    expect(greeted).toBe(false)
    const invited = await inviting
    expect(invited.status, invited.text).toBe(201)
    expect(greeted).toBe(false)
  })
})

describe("a mail server that refuses the recipient", () => {
  /** Answers every recipient `550 5.1.1 <address>: unknown user`, quoting the address as servers do. */
  const refusing = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onRcptTo(address, _session, callback) {
      const error = Object.assign(new Error(`5.1.1 <${address.address}>: unknown user`), { responseCode: 550 })
      callback(error)
    }
  })
  beforeAll(async () => {
    await new Promise<void>((resolve) => refusing.listen(0, "127.0.0.1", () => resolve()))
  })
  afterAll(async () => {
    await new Promise<void>((resolve) => refusing.close(() => resolve()))
  })
  const { server: refused, op } = useServer(() => ({
    smtp: { url: `smtp://127.0.0.1:${(refusing.server.address() as AddressInfo).port}`, from: "no-reply@example.com" },
    dispatcher: true
  }))

  it("the attempt is logged with the reply code only, never the address the reply quotes", async () => {
    const a = await op.tenant()
    const email = `${unique("refused")}@example.com`
    const r = await as(refused.url, a.token)("POST", "/v1/members", { body: { name: "Ada", email, organization_id: a.org.id } })
    expect(r.status, r.text).toBe(201)
    const file = runLogPath()!
    const failures = () =>
      fs.readFileSync(file, "utf8").split("\n").filter((l) => l.includes("invitation mail not sent") && l.includes("refused 550"))
    await eventually(() => failures().length > 0, "the refused attempt in the log")
    const all = fs.readFileSync(file, "utf8")
    expect(all).not.toContain(email)
    expect(personalDataIn(all)).toEqual([])
  })
})
