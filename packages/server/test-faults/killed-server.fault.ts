import { dataUri, samplePdf, samplePng } from "@cmp/test-support/proof-samples"
import * as crypto from "node:crypto"
import { afterAll, describe, expect, it } from "vitest"
import {
  baseEnv,
  consentOrganization,
  expectJson,
  faultStores,
  findAll,
  json,
  killAll,
  operatorToken,
  type Reply,
  type ServerChild,
  sleep,
  startServer
} from "./processes.js"

/**
 * kill -9 of the server while clients stream consent events: after a restart on the same
 * database every event that got a 201 is there, once, and has its webhook message. Consent is
 * legal evidence: an acknowledged write must survive a crash, whether a backend sent it with a
 * token or a browser with the organization's public key. Two events in three carry inline
 * proofs, written in the event's transaction: each survivor has exactly its proofs, no proof is
 * left without its event, and the organization's consent log still verifies.
 *
 * Run on a SQLite file and on PostgreSQL: a fresh database on the server named by DATABASE_URL
 * (dropped afterwards), or, where it is unset, an in-process PGlite behind its socket (the
 * server process connects to it like to any PostgreSQL, with one connection).
 */
// The server, and the next one after a kill.
const stores = faultStores(2)

afterAll(async () => {
  await killAll()
  await stores.close()
})

/**
 * Eight clients send events with ids of their own, `write(client, i)` each, until the server
 * dies; the server is killed once 150 were acknowledged. Answers what was acknowledged and what
 * was attempted (acknowledged or in flight at the kill).
 */
const streamUntilKilled = async (server: ServerChild, write: (c: number, i: number, signal: AbortSignal) => Promise<Reply>) => {
  const acknowledged = new Set<string>()
  const attempted = new Set<string>()
  const unexpected: Array<string> = []
  let stop = false
  const client = async (c: number) => {
    for (let i = 0; !stop; i++) {
      const id = `evt-${c}-${i}`
      attempted.add(id)
      try {
        const r = await write(c, i, AbortSignal.timeout(30_000))
        if (r.status === 201 && r.body?.id === id) acknowledged.add(id)
        else unexpected.push(`${id}: ${r.status} ${r.text}`)
      } catch {
        // The connection died with the server (a hang would be an abort after 30 s and fail below).
        return
      }
      if (unexpected.length > 0) return
    }
  }
  const streaming = Promise.all(Array.from({ length: 8 }, (_, c) => client(c)))
  const deadline = Date.now() + 60_000
  while (acknowledged.size < 150 && unexpected.length === 0 && Date.now() < deadline) await sleep(20)
  expect(unexpected).toEqual([])
  expect(acknowledged.size).toBeGreaterThanOrEqual(150)
  await server.kill()
  stop = true
  await streaming
  expect(unexpected).toEqual([])
  return { acknowledged, attempted }
}

/**
 * After the restart, read with a backend token: every acknowledged event is there, none twice,
 * only attempted ones besides, and each stored event has its message in the outbox (written in
 * the same transaction), once. Answers the messages' payloads.
 */
const expectSurvivors = async (
  url: string,
  organizationId: string,
  webhookId: string,
  { acknowledged, attempted }: { acknowledged: Set<string>; attempted: Set<string> }
) => {
  const token = await operatorToken(url)
  const events = (await findAll(url, `/v1/consents/events?organization_id=${organizationId}&$select[]=id`, token)).map((e: { id: string }) => e.id)
  expect([...acknowledged].filter((id) => !events.includes(id))).toEqual([])
  expect(new Set(events).size).toBe(events.length)
  expect(events.filter((id) => !attempted.has(id))).toEqual([])
  expect(events.length - acknowledged.size).toBeLessThanOrEqual(8)

  const payloads = (await findAll(url, `/v1/webhooks/deliveries?webhook_id=${webhookId}`, token)).map((d: { payload: any }) => d.payload)
  const messages = payloads.map((p: { parameters: { entity: { id: string } } }) => p.parameters.entity.id)
  expect(events.filter((id) => !messages.includes(id))).toEqual([])
  expect(messages.slice().sort()).toEqual(events.slice().sort())
  return payloads
}

/**
 * The inline proofs of event `evt-c-i`: every third event none, the others a PDF naming the
 * event (so its sha256 ties it to the event), and every third one a PNG before it as well.
 */
const proofsOf = (id: string, i: number): Array<Uint8Array> =>
  i % 3 === 2 ? [] : i % 3 === 1 ? [samplePng(), samplePdf(`consent of ${id}`)] : [samplePdf(`consent of ${id}`)]
const mediaTypeOf = (bytes: Uint8Array) => (bytes[0] === 0x89 ? "image/png" : "application/pdf")
const inlineProofs = (id: string, i: number) => {
  const files = proofsOf(id, i)
  return files.length === 0 ? {} : { proofs: files.map((f) => ({ file: dataUri(mediaTypeOf(f), f) })) }
}
const sha256Hex = (bytes: Uint8Array | string) => crypto.createHash("sha256").update(bytes).digest("hex")

/**
 * After the restart: each stored event names exactly the proofs it was sent with (read back by
 * id, bytes and all), the organization holds no other proof (a proof of an event that was never
 * stored would be one), and the consent log verifies: every chain links, and every event, user
 * and proof row has its entry (verify names a row without one as `missing`).
 */
const expectProofsAndLog = async (url: string, organizationId: string) => {
  const token = await operatorToken(url)
  const events = await findAll(url, `/v1/consents/events?organization_id=${organizationId}`, token)
  const named: Array<string> = []
  const problems: Array<string> = []
  for (const e of events) {
    const i = Number(/^evt-\d+-(\d+)$/.exec(e.id)![1])
    const sent = proofsOf(e.id, i).map(sha256Hex)
    if (!Array.isArray(e.proofs_id) || e.proofs_id.length !== sent.length) {
      problems.push(`${e.id}: proofs_id ${JSON.stringify(e.proofs_id)}, sent ${sent.length} proofs`)
      continue
    }
    for (const [k, proofId] of (e.proofs_id as Array<string>).entries()) {
      named.push(proofId)
      const proof = await json(`${url}/v1/consents/proofs/${encodeURIComponent(proofId)}`, "GET", undefined, token)
      if (proof.status !== 200) {
        problems.push(`${e.id}: GET proof ${proofId}: ${proof.status} ${proof.text.slice(0, 200)}`)
        continue
      }
      const bytes = Buffer.from(String(proof.body.file).replace(/^data:[^,]*;base64,/, ""), "base64")
      if (proof.body.sha256 !== sent[k] || sha256Hex(bytes) !== sent[k] || proof.body.organization_id !== organizationId) {
        problems.push(`${e.id}: proof ${k} ${proofId} is ${proof.body.sha256} (${bytes.length} bytes), sent ${sent[k]}`)
      }
    }
  }
  expect(problems).toEqual([])
  expect(named.length).toBeGreaterThan(0)
  const proofs = (await findAll(url, `/v1/consents/proofs?organization_id=${organizationId}`, token)).map((p: { id: string }) => p.id)
  expect(proofs.slice().sort()).toEqual(named.slice().sort())

  const log = await expectJson(200, `${url}/v1/consents/log/verify?organization_id=${organizationId}`, "GET", undefined, token)
  expect(log).toMatchObject({ valid: true, first_invalid: null })
  expect(log.head).toMatch(/^[0-9a-f]{64}$/)
  // An entry holds a commit's changes to one chain (an event, its user and its proofs share
  // their user's): one per event on PostgreSQL, fewer where SQLite committed several together.
  expect(log.entries).toBeGreaterThan(0)
  expect(log.entries).toBeLessThanOrEqual(events.length)
  return log
}

/** Proofs are a premium feature of their own. */
const withProofs = async (url: string, organizationId: string, token: string, extra: Record<string, boolean> = {}) => {
  const flags = (await expectJson(200, `${url}/v1/premium-features?organization_id=${organizationId}`, "GET", undefined, token)).data[0]
  await expectJson(200, `${url}/v1/premium-features/${flags.id}`, "PATCH", { versions_and_proofs: true, ...extra }, token)
}

const hookOf = (url: string, organizationId: string, token: string) =>
  expectJson(201, `${url}/v1/webhooks`, "POST", {
    organization_id: organizationId,
    url: "http://127.0.0.1:9/hook",
    event_types: ["event.created"]
  }, token)

/** A write as a browser sends it: the public key in its header, no credential. */
const publicWrite = (url: string, publicKey: string, body: unknown, signal: AbortSignal): Promise<Reply> =>
  json(`${url}/v1/consents/events`, "POST", body, undefined, signal, { "x-public-api-key": publicKey })

/** `user.organization_user_id_auth` as the organization's backend computes it for a page. */
const signedUserId = (secret: { id: string; secret: string }, organizationUserId: string, salt: string, expiration: number) => ({
  algorithm: "hmac-sha256",
  secret_id: secret.id,
  salt,
  expiration,
  digest: crypto.createHmac("sha256", secret.secret).update(`${organizationUserId}${salt}${expiration}`, "utf8").digest("hex")
})

describe.each(stores.variants)("kill -9 while streaming consent events ($name)", ({ database }) => {
  it("every acknowledged event survives, once, with its webhook message", async () => {
    const env = baseEnv({
      ...(await database()),
      WEBHOOK_ALLOW_HOSTS: "127.0.0.1",
      // Messages stay in the outbox, so the test counts what was queued, not what was sent.
      WEBHOOK_DISPATCHER: "false"
    })
    const first = await startServer(env)
    const op = await operatorToken(first.url)
    const org = await consentOrganization(first.url, op)
    await withProofs(first.url, org.id, op)
    const hook = await hookOf(first.url, org.id, op)

    const sent = await streamUntilKilled(first, (c, i, signal) =>
      json(`${first.url}/v1/consents/events`, "POST", {
        id: `evt-${c}-${i}`,
        organization_id: org.id,
        user: { organization_user_id: `user-${c}-${i % 5}` },
        consents: { purposes: [{ id: "analytics", enabled: i % 2 === 0 }] },
        ...inlineProofs(`evt-${c}-${i}`, i)
      }, op, signal))

    const second = await startServer(env)
    await expectSurvivors(second.url, org.id, hook.id, sent)
    await expectProofsAndLog(second.url, org.id)
    await second.stop()
  })

  it("every public write acknowledged before the kill survives, once, with its webhook message", async () => {
    const env = baseEnv({
      ...(await database()),
      WEBHOOK_ALLOW_HOSTS: "127.0.0.1",
      WEBHOOK_DISPATCHER: "false",
      // Every write comes from 127.0.0.1 with one key: the limits must not be what stops them.
      PUBLIC_RATE_LIMIT: "1000000,1000000"
    })
    const first = await startServer(env)
    const op = await operatorToken(first.url)
    const org = await consentOrganization(first.url, op)
    const publicKey: string = (await expectJson(200, `${first.url}/v1/organizations/${org.id}`, "GET", undefined, op)).public_api_key
    await withProofs(first.url, org.id, op, { store_guest_cmp_consents: true, store_cmp_consents: true })
    const secret = await expectJson(201, `${first.url}/v1/secrets`, "POST", { organization_id: org.id, name: "pages" }, op)
    const hook = await hookOf(first.url, org.id, op)
    const expiration = Math.floor(Date.now() / 1000) + 3600

    // Half the clients write for guests (a device's id), half for users the organization signed.
    const sent = await streamUntilKilled(first, (c, i, signal) => {
      const user = c % 2 === 0
        ? { id: `guest-${c}-${i % 5}` }
        : {
          organization_user_id: `known-${c}-${i % 5}`,
          organization_user_id_auth: signedUserId(secret, `known-${c}-${i % 5}`, `salt-${i}`, expiration)
        }
      return publicWrite(first.url, publicKey, {
        id: `evt-${c}-${i}`,
        organization_id: org.id,
        user,
        consents: { purposes: [{ id: "analytics", enabled: i % 2 === 0 }] },
        ...inlineProofs(`evt-${c}-${i}`, i)
      }, signal)
    })

    const second = await startServer(env)
    const payloads = await expectSurvivors(second.url, org.id, hook.id, sent)
    await expectProofsAndLog(second.url, org.id)
    // Each message names the public key as the principal that wrote it.
    expect(payloads.filter((p: any) => p.parameters.source?.type !== "public-key" || p.parameters.source.organization_id !== org.id)).toEqual([])
    await second.stop()
  })
})
