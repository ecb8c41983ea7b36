import { MailOutboxTable, SecretBox, Storage, WebhooksResource } from "@cmp/core"
import { organizationUserIdAuth, resealSecrets, type ResealReport, type StoreLayer } from "@cmp/platform"
import { secretBoxKeyId } from "@cmp/platform-node"
import { PgStore } from "@cmp/store-postgres"
import { SqliteStore } from "@cmp/store-sqlite"
import { createTestDatabase } from "@cmp/test-support/database"
import canonicalize from "canonicalize"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet } from "jose"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { SMTPServer } from "smtp-server"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  authServer,
  createEvent,
  createHook,
  eventually,
  operatorOf,
  purposes,
  type Received,
  type Receiver,
  receiver,
  start,
  storeKind,
  type Tenant,
  type TestServer,
  trackedReceivers,
  unique,
  verifyAtItsTime
} from "../helpers.js"
import { as, call } from "./helpers.js"

/**
 * Rotating `ENCRYPTION_KEY` on one database, the servers restarted between the steps: sealed
 * with key A; then B seals and A (`ENCRYPTION_KEY_PREVIOUS`) still opens; then the re-seal
 * (`resealSecrets`, what `pnpm reseal-secrets` runs) while consent events flow, webhooks are
 * delivered and a webhook's secret is rotated; then B alone. Every webhook delivers signed with
 * its secret (checked as a receiver checks, with standardwebhooks), its OAuth client secret
 * still authenticates, Secrets still sign user ids, receipts still sign, a queued invitation
 * mail is still sent; A alone opens nothing any more, and says so.
 */

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-encryption-key-"))
const database = storeKind === "postgres" ? await createTestDatabase({ clients: 4 }) : undefined
const storeLayer = (connections = 2): StoreLayer =>
  database === undefined
    ? SqliteStore.layer({ filename: path.join(dir, "consent.db") })
    : PgStore.layer({ url: database.url, maxConnections: connections })

const A = crypto.randomBytes(32).toString("base64")
const B = crypto.randomBytes(32).toString("hex")
const kidOf = (key: string) => secretBoxKeyId(/^[0-9a-f]{64}$/i.test(key) ? Buffer.from(key, "hex") : Buffer.from(key, "base64"))

// ---------------------------------------------------------------- a mail server refusing some addresses for now

interface Mail {
  readonly to: ReadonlyArray<string>
  readonly text: string
}
const mails: Array<Mail> = []
const refused = new Set<string>()
const smtp = new SMTPServer({
  authOptional: true,
  disabledCommands: ["STARTTLS", "AUTH"],
  logger: false,
  onRcptTo(address, _session, callback) {
    if (refused.has(address.address)) return callback(Object.assign(new Error("try again later"), { responseCode: 451 }))
    callback()
  },
  onData(stream, session, callback) {
    let raw = ""
    stream.on("data", (chunk: Buffer) => (raw += chunk.toString("utf8")))
    stream.on("end", () => {
      mails.push({ to: session.envelope.rcptTo.map((r) => r.address), text: raw })
      callback()
    })
  }
})
beforeAll(async () => {
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", () => resolve()))
})

const servers: Array<TestServer> = []
afterAll(async () => {
  for (const s of servers) await s.close()
  await new Promise<void>((resolve) => smtp.close(() => resolve()))
  await database?.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

const track = trackedReceivers()

/** A server on the one database with these keys, its operator, and the tenant's calls bound to it. */
const boot = async (keys: { encryptionKey: string; encryptionKeyPrevious?: string }) => {
  const { port } = smtp.server.address() as AddressInfo
  const server = await start({
    store: storeLayer(),
    ...keys,
    smtp: { url: `smtp://127.0.0.1:${port}`, from: "Consent <no-reply@example.com>" },
    publicRateLimit: { perKey: 1_000_000, perAddress: 1_000_000 }
  })
  servers.push(server)
  return { server, op: await operatorOf(server.url), on: (t: Tenant): Tenant => ({ ...t, call: as(server.url, t.token) }) }
}

const stop = async (server: TestServer) => {
  servers.splice(servers.indexOf(server), 1)
  await server.close()
}

const reseal = (keys: { encryptionKey: string; encryptionKeyPrevious?: string }): Promise<ResealReport> =>
  Effect.runPromise(resealSecrets(storeLayer(1), keys))

// ---------------------------------------------------------------- what each server must still do

const receiptOf = async (server: TestServer, t: Tenant) => {
  const e = await createEvent(t, unique("receipt-user"), purposes(["analytics", true]))
  const r = await t.call("GET", `/v1/consents/users/${e.user.id}/receipt`)
  expect(r.status, r.text).toBe(200)
  const keys = (await call(server.url, "GET", "/v1/consents/receipts/jwks")).body as JSONWebKeySet
  const verified = await compactVerify(r.body.jws, createLocalJWKSet(keys), { algorithms: ["EdDSA"] })
  expect(new TextDecoder().decode(verified.payload)).toBe(canonicalize(r.body.receipt))
  return decodeProtectedHeader(r.body.jws).kid
}

/** A consent event of a user the organization vouches for, signed with one of its Secrets, through the public key. */
const vouched = async (server: TestServer, t: Tenant, secret: { id: string; secret: string }) => {
  const organizationUserId = unique("vouched")
  const auth = organizationUserIdAuth({
    secretId: secret.id,
    secret: secret.secret,
    organizationUserId,
    expiration: Math.floor(server.clock.millis / 1000) + 600
  })
  return call(server.url, "POST", "/v1/consents/events", {
    headers: { "x-public-api-key": t.org.public_api_key },
    body: { organization_id: t.org.id, user: { organization_user_id: organizationUserId, organization_user_id_auth: auth }, consents: { purposes: purposes(["p", true]) } }
  })
}

const signs = async (server: TestServer, t: Tenant, secret: { id: string; secret: string }) => {
  const r = await vouched(server, t, secret)
  expect(r.status, r.text).toBe(201)
}

const verifies = (secret: string, req: Received) => {
  try {
    verifyAtItsTime(secret, req)
    return true
  } catch {
    return false
  }
}

/**
 * Every message of the webhook delivered, each received at least once (never lost), and every
 * request signed with one of `secrets` (never mis-signed); those from `since` with `newest`.
 */
const allDelivered = async (t: Tenant, hookId: string, r: Receiver, secrets: ReadonlyArray<string>, since = 0, newest?: string) => {
  const list = await eventually(async () => {
    const got = await t.call("GET", `/v1/webhooks/deliveries?webhook_id=${encodeURIComponent(hookId)}&$limit=1000`)
    expect(got.status, got.text).toBe(200)
    const data = got.body.data as Array<{ id: string; status: string }>
    return data.length > 0 && data.every((d) => d.status === "delivered") ? data : undefined
  }, `the deliveries of ${hookId} to be delivered`, 20_000)
  const ids = new Set(r.requests.map((q) => String(q.headers["webhook-id"])))
  for (const d of list) expect(ids.has(d.id), d.id).toBe(true)
  for (const q of r.requests) expect(secrets.some((s) => verifies(s, q)), String(q.headers["webhook-id"])).toBe(true)
  if (newest !== undefined) for (const q of r.requests.slice(since)) expect(verifies(newest, q)).toBe(true)
  return list.length
}

const basicSecret = (authorization: string | undefined) =>
  Buffer.from(String(authorization).replace(/^Basic /, ""), "base64").toString().split(":")[1]

const defectOf = <X, E>(exit: Exit.Exit<X, E>) => (Exit.isFailure(exit) ? Option.getOrUndefined(Cause.dieOption(exit.cause)) : undefined)

describe(`rotating ENCRYPTION_KEY and re-sealing (${storeKind})`, () => {
  it("A; then B with A previous; the re-seal while traffic flows; then B alone; A alone opens nothing", async () => {
    const auth = await authServer()
    try {
      // ---- sealed with A: webhooks (an OAuth client secret, a rotated signing secret), a Secret, a queued mail.
      const one = await boot({ encryptionKey: A })
      const t0 = await one.op.tenant({ consents_api: true, webhooks: true, store_cmp_consents: true })
      const r1 = await track(receiver())
      const h1 = await createHook(t0, r1.url, { auth: { token_url: auth.tokenUrl, client_id: "cmp-client", client_secret: "client-secret-1" } })
      const r2 = await track(receiver())
      const h2 = await createHook(t0, r2.url)
      const rotatedA = await t0.call("POST", `/v1/webhooks/${h2.id}/rotate-secret`, { body: { overlap_s: 604_800 } })
      expect(rotatedA.status, rotatedA.text).toBe(200)
      const h2Secrets = [h2.signing_secret as string, rotatedA.body.signing_secret as string]
      const made = await t0.call("POST", "/v1/secrets", { body: { organization_id: t0.org.id, name: unique("signing") } })
      expect(made.status, made.text).toBe(201)
      const secretA = { id: made.body.id as string, secret: made.body.secret as string }
      await signs(one.server, t0, secretA)
      const waiting = `${unique("later")}@example.com`
      refused.add(waiting)
      const invited = await t0.call("POST", "/v1/members", { body: { name: "Ada", email: waiting, organization_id: t0.org.id } })
      expect(invited.status, invited.text).toBe(201)
      for (let i = 0; i < 3; i++) await createEvent(t0, unique("a-user"), purposes(["analytics", true]))
      const receiptKid = await receiptOf(one.server, t0)
      await allDelivered(t0, h1.id, r1, [h1.signing_secret])
      await allDelivered(t0, h2.id, r2, h2Secrets)
      expect(basicSecret(auth.issued.at(-1)!.authorization)).toBe("client-secret-1")
      // The mail was tried once and waits for its retry, sealed with A.
      await eventually(async () => (await one.server.api.runtime.runPromise(mailAttempts)) === 1, "the mail's first attempt")
      const sealedWithA = await one.server.api.runtime.runPromise(sealedOf(h1.id))
      expect(sealedWithA.startsWith(`v2.${kidOf(A)}.`)).toBe(true)
      await stop(one.server)

      // ---- B seals, A still opens: everything works as before.
      const two = await boot({ encryptionKey: B, encryptionKeyPrevious: A })
      let t = two.on(t0)
      const tokensBefore = auth.issued.length
      for (let i = 0; i < 2; i++) await createEvent(t, unique("b-user"), purposes(["analytics", true]))
      await allDelivered(t, h1.id, r1, [h1.signing_secret])
      await allDelivered(t, h2.id, r2, h2Secrets)
      expect(auth.issued.length).toBeGreaterThan(tokensBefore)
      expect(basicSecret(auth.issued.at(-1)!.authorization)).toBe("client-secret-1")
      await signs(two.server, t, secretA)
      expect(await receiptOf(two.server, t)).toBe(receiptKid)
      // A Secret made now is sealed with B: the re-seal leaves it.
      const madeB = await t.call("POST", "/v1/secrets", { body: { organization_id: t.org.id, name: unique("signing") } })
      expect(madeB.status, madeB.text).toBe(201)
      const secretB = { id: madeB.body.id as string, secret: madeB.body.secret as string }

      // ---- the re-seal, while events flow, deliveries happen and h2's secret is rotated again.
      let flowing = true
      const answers: Array<number> = []
      const traffic = (async () => {
        while (flowing) {
          const [event, signed] = await Promise.all([
            t.call("POST", "/v1/consents/events", {
              body: { organization_id: t.org.id, user: { organization_user_id: unique("flow") }, consents: { purposes: purposes(["p", true]) } }
            }),
            vouched(two.server, t, secretA)
          ])
          answers.push(event.status, signed.status)
        }
      })()
      while (answers.length < 10) await new Promise((resolve) => setTimeout(resolve, 5))
      const [report, rotatedB] = await Promise.all([
        reseal({ encryptionKey: B, encryptionKeyPrevious: A }),
        (async () => {
          // A rotation's write is conditional on the webhook's version, as the re-seal's is: one may have to try again.
          for (;;) {
            const r = await t.call("POST", `/v1/webhooks/${h2.id}/rotate-secret`, { body: { overlap_s: 604_800 } })
            if (r.status === 200) return r.body
            expect(r.status, r.text).toBe(409)
          }
        })()
      ])
      const at = answers.length
      while (answers.length < at + 10) await new Promise((resolve) => setTimeout(resolve, 5))
      flowing = false
      await traffic
      expect(answers.filter((s) => s !== 201)).toEqual([])
      expect(report.unopened).toBe(0)
      expect(report.resealed + report.already_current).toBe(8)
      expect(report.tables.secrets).toEqual({ resealed: 1, already_current: 1, unopened: 0 })
      expect(report.tables.mail_outbox).toEqual({ resealed: 1, already_current: 0, unopened: 0 })
      expect(report.tables.receipt_signing_keys).toEqual({ resealed: 1, already_current: 0, unopened: 0 })
      expect(report.tables.webhooks!.resealed).toBeGreaterThanOrEqual(2)
      expect(report.resealed).toBe(Object.values(report.tables).reduce((n, c) => n + c.resealed, 0))
      h2Secrets.push(rotatedB.signing_secret)
      await allDelivered(t, h1.id, r1, [h1.signing_secret])
      await allDelivered(t, h2.id, r2, h2Secrets)
      // The rotation was written over by nothing: its secret signs from now on, beside the one it replaced.
      const r2Since = r2.requests.length
      await createEvent(t, unique("after"), purposes(["analytics", true]))
      await allDelivered(t, h2.id, r2, h2Secrets, r2Since, rotatedB.signing_secret)
      // Run again: nothing left to do.
      const again = await reseal({ encryptionKey: B, encryptionKeyPrevious: A })
      expect(again).toMatchObject({ resealed: 0, unopened: 0, already_current: report.resealed + report.already_current })
      await stop(two.server)

      // ---- B alone: everything still opens.
      const three = await boot({ encryptionKey: B })
      t = three.on(t0)
      const tokensThree = auth.issued.length
      const r1Since = r1.requests.length
      const r2Three = r2.requests.length
      for (let i = 0; i < 2; i++) await createEvent(t, unique("c-user"), purposes(["analytics", true]))
      await allDelivered(t, h1.id, r1, [h1.signing_secret], r1Since, h1.signing_secret)
      await allDelivered(t, h2.id, r2, h2Secrets, r2Three, rotatedB.signing_secret)
      expect(auth.issued.length).toBeGreaterThan(tokensThree)
      expect(basicSecret(auth.issued.at(-1)!.authorization)).toBe("client-secret-1")
      await signs(three.server, t, secretA)
      await signs(three.server, t, secretB)
      expect(await receiptOf(three.server, t)).toBe(receiptKid)
      // The mail queued under A is sent once its retry is due.
      refused.delete(waiting)
      three.server.clock.advance(3_600_000)
      await eventually(() => mails.some((m) => m.to.includes(waiting)), "the queued invitation mail to be sent", 20_000)
      expect(await three.server.api.runtime.runPromise(sealedOf(h1.id))).toMatch(new RegExp(`^v2\\.${kidOf(B)}\\.`))
      await stop(three.server)

      // ---- A alone after the re-seal: nothing opens, and the failure says which key is missing.
      const four = await boot({ encryptionKey: A })
      const sealed = await four.server.api.runtime.runPromise(sealedOf(h1.id))
      const failure = String(defectOf(await four.server.api.runtime.runPromiseExit(Effect.flatMap(SecretBox, (box) => box.open(sealed)))))
      expect(failure).toContain("could not be opened")
      expect(failure).toContain(kidOf(B))
      const refusedReport = await reseal({ encryptionKey: A })
      // Every value but the mail, sent since.
      expect(refusedReport).toMatchObject({ resealed: 0, already_current: 0, unopened: again.already_current - 1 })
      const signedWithA = await vouched(four.server, four.on(t0), secretB)
      expect(signedWithA.status).not.toBe(201)
      await stop(four.server)
    } finally {
      await auth.close()
    }
  }, 180_000)
})

/** A webhook's sealed signing secret as stored. */
const sealedOf = (hookId: string) =>
  Effect.gen(function*() {
    const row = yield* (yield* Storage).repository(WebhooksResource.tableDef).get(hookId)
    return Option.getOrThrow(row).signing_secret_sealed
  })

/** How many attempts the invitation mails had (the database holds one). */
const mailAttempts = Effect.gen(function*() {
  const page = yield* (yield* Storage).repository(MailOutboxTable).find({ where: [], sort: [], limit: 100, skip: 0, count: false })
  return page.data.reduce((n, m) => n + m.attempts_count, 0)
})
