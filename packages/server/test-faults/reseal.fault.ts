import { Storage, Tables, WebhooksResource } from "@cmp/core"
import { organizationUserIdAuth, type StoreLayer } from "@cmp/platform"
import { secretBoxKeyId, secretBoxOf } from "@cmp/platform-node"
import { PgStore } from "@cmp/store-postgres"
import { SqliteStore } from "@cmp/store-sqlite"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as crypto from "node:crypto"
import { Webhook } from "standardwebhooks"
import { afterAll, describe, expect, it } from "vitest"
import {
  baseEnv,
  consentOrganization,
  expectJson,
  faultStores,
  json,
  killAll,
  operatorToken,
  receiver,
  type Receiver,
  sleep,
  startCommand,
  startServer
} from "./processes.js"

/**
 * kill -9 of `reseal-secrets` midway through a database of a few hundred sealed values (Secrets,
 * webhooks with OAuth client secrets), while a server with the new key B and the previous key
 * A runs: every value still opens with B and A, whichever key sealed it, the server still
 * delivers signed messages and checks signed user ids; a second run re-seals what the first
 * left and nothing twice; then B alone opens every value, and a server with only B works.
 *
 * Run on a SQLite file and on PostgreSQL (see `faultStores`).
 */
// The command, the servers, and this process reading the database.
const stores = faultStores(4)

afterAll(async () => {
  await killAll()
  await stores.close()
})

const A = crypto.randomBytes(32)
const B = crypto.randomBytes(32)
const SECRETS = 400
const WEBHOOKS = 150

/** The database the environment names, opened in this process. */
const storeOf = (env: Record<string, string>): StoreLayer =>
  env.SQLITE_PATH !== undefined ? SqliteStore.layer({ filename: env.SQLITE_PATH }) : PgStore.layer({ url: env.DATABASE_URL!, maxConnections: 1 })

/** Every sealed value of the seeded tables, as stored. */
const sealedValues = (store: StoreLayer) =>
  Effect.runPromise(Effect.provide(
    Effect.gen(function*() {
      const storage = yield* Storage
      const all = { where: [], sort: [], limit: 1_000, skip: 0, count: false }
      const secrets = (yield* storage.repository(Tables.secrets).find(all)).data.map((s) => s.secret_sealed)
      const hooks = (yield* storage.repository(WebhooksResource.tableDef).find(all)).data
        .flatMap((h) => [h.signing_secret_sealed, h.auth_client_secret_sealed, h.previous_secret_sealed])
      return [...secrets, ...hooks].filter((v): v is string => typeof v === "string")
    }),
    store
  ))

/** How many of `values` each key given opens: all of them, or the test fails naming one that does not. */
const openAll = (values: ReadonlyArray<string>, current: Buffer, openers: ReadonlyArray<Buffer>) => {
  const box = secretBoxOf({ current, openers })
  for (const v of values) {
    const opened = box.open(v)
    if (typeof opened !== "string") throw new Error(`${v.slice(0, 12)}…: ${opened.message}`)
  }
}

const underB = (v: string) => v.startsWith(`v2.${secretBoxKeyId(B)}.`)

/**
 * `secrets` more Secrets and `webhooks` more webhooks (disabled, with OAuth client secrets),
 * copies of the rows the API made, each value sealed with `key` as the API seals: written
 * straight into the database, as the API would hash each Secret (hundreds of scrypt runs).
 */
const seed = (store: StoreLayer, key: Buffer, from: { secretId: string; webhookId: string }, counts: { secrets: number; webhooks: number }) =>
  Effect.runPromise(Effect.provide(
    Effect.gen(function*() {
      const box = secretBoxOf({ current: key, openers: [] })
      const storage = yield* Storage
      const secrets = storage.repository(Tables.secrets)
      const hooks = storage.repository(WebhooksResource.tableDef)
      const secret = Option.getOrThrow(yield* secrets.get(from.secretId))
      const hook = Option.getOrThrow(yield* hooks.get(from.webhookId))
      const rows = <R extends { id: string }>(n: number, row: (i: number) => R) => Array.from({ length: n }, (_, i) => row(i))
      yield* secrets.insert(rows(counts.secrets, (i) => ({ ...secret, id: crypto.randomUUID(), name: `seeded-${i}`, secret_sealed: box.seal(`ss_seeded_${i}`) })))
      yield* hooks.insert(rows(counts.webhooks, (i) => ({
        ...hook,
        id: crypto.randomUUID(),
        url: `${hook.url}/${i}`,
        enabled: false,
        signing_secret_sealed: box.seal(`whsec_seeded_${i}`),
        auth_client_secret_sealed: box.seal(`client-secret-${i}`)
      })))
    }),
    store
  ))

/** A consent event of a vouched user through the public key, signed with `secret`: its status. */
const vouched = async (base: string, org: { id: string; public_api_key: string }, secret: { id: string; secret: string }) => {
  const organizationUserId = `vouched-${crypto.randomUUID()}`
  const auth = organizationUserIdAuth({ secretId: secret.id, secret: secret.secret, organizationUserId, expiration: Math.floor(Date.now() / 1000) + 600 })
  const r = await json(`${base}/v1/consents/events`, "POST", {
    organization_id: org.id,
    user: { organization_user_id: organizationUserId, organization_user_id_auth: auth },
    consents: { purposes: [{ id: "p", enabled: true }] }
  }, undefined, undefined, { "x-public-api-key": org.public_api_key })
  return r.status
}

/** An event of a new user; waits until the receiver got its two messages, each signed with `secret` (as standardwebhooks checks). */
const delivers = async (base: string, token: string, org: { id: string }, r: Receiver, secret: string) => {
  const before = r.arrivals.length
  await expectJson(201, `${base}/v1/consents/events`, "POST", {
    organization_id: org.id,
    user: { organization_user_id: `u-${crypto.randomUUID()}` },
    consents: { purposes: [{ id: "p", enabled: true }] }
  }, token)
  const deadline = Date.now() + 30_000
  while (r.arrivals.filter((a) => a.status === 204).length < before + 2 && Date.now() < deadline) await sleep(25)
  const arrived = r.arrivals.slice(before)
  expect(arrived.length).toBeGreaterThanOrEqual(2)
  for (const a of arrived) {
    const headers = { "webhook-id": a.webhookId, "webhook-timestamp": String(a.headers["webhook-timestamp"]), "webhook-signature": String(a.headers["webhook-signature"]) }
    expect(() => new Webhook(secret).verify(a.body, headers), a.webhookId).not.toThrow()
  }
}

describe.each(stores.variants)("kill -9 of reseal-secrets midway ($name)", ({ database }) => {
  it("B and A still open every value, the server still signs; a second run finishes; then B alone opens everything", async () => {
    const db = await database()
    const store = storeOf(db)
    const r = await receiver()
    const auth = await receiver()
    try {
      // ---- sealed with A: a few hundred Secrets and webhooks (disabled: sealed, never called), one live webhook.
      const one = await startServer(baseEnv({ ...db, ENCRYPTION_KEY: A.toString("base64"), WEBHOOK_ALLOW_HOSTS: "127.0.0.1" }))
      let token = await operatorToken(one.url)
      const org = await consentOrganization(one.url, token)
      const flags = (await expectJson(200, `${one.url}/v1/premium-features?organization_id=${org.id}`, "GET", undefined, token)).data[0]
      await expectJson(200, `${one.url}/v1/premium-features/${flags.id}`, "PATCH", { store_cmp_consents: true }, token)
      const full = await expectJson(200, `${one.url}/v1/organizations/${org.id}`, "GET", undefined, token)
      const secrets: Array<{ id: string; secret: string }> = []
      for (let i = 0; i < 3; i++) {
        const s = await expectJson(201, `${one.url}/v1/secrets`, "POST", { organization_id: org.id, name: `s-${i}` }, token)
        secrets.push({ id: s.id, secret: s.secret })
      }
      const dormant = await expectJson(201, `${one.url}/v1/webhooks`, "POST", {
        organization_id: org.id,
        url: auth.url,
        enabled: false,
        auth: { token_url: `${auth.url}/token`, client_id: "c", client_secret: "client-secret" }
      }, token)
      const live = await expectJson(201, `${one.url}/v1/webhooks`, "POST", { organization_id: org.id, url: r.url }, token)
      await one.stop()
      await seed(store, A, { secretId: secrets[0]!.id, webhookId: dormant.id }, { secrets: SECRETS, webhooks: WEBHOOKS })
      const seeded = await sealedValues(store)
      expect(seeded).toHaveLength(3 + SECRETS + 2 * (WEBHOOKS + 1) + 1)
      expect(seeded.some(underB)).toBe(false)
      openAll(seeded, A, [])

      // ---- B seals, A opens: the server runs while the re-seal is killed midway.
      const rotatedEnv = baseEnv({ ...db, ENCRYPTION_KEY: B.toString("hex"), ENCRYPTION_KEY_PREVIOUS: A.toString("base64"), WEBHOOK_ALLOW_HOSTS: "127.0.0.1" })
      const two = await startServer(rotatedEnv)
      token = await operatorToken(two.url)
      const first = await startCommand(["reseal-secrets"], rotatedEnv, /re-sealed a batch/)
      await first.kill()
      expect(first.output()).not.toContain("\"already_current\"")
      const midway = await sealedValues(store)
      expect(midway).toHaveLength(seeded.length)
      const done = midway.filter(underB).length
      expect(done).toBeGreaterThan(0)
      expect(done).toBeLessThan(midway.length)
      openAll(midway, B, [A])
      expect(() => openAll(midway, B, [])).toThrow(/could not be opened/)
      // The running server: the live webhook signs with its secret, the first and last Secrets sign user ids.
      await delivers(two.url, token, org, r, live.signing_secret)
      for (const s of secrets) expect(await vouched(two.url, full, s)).toBe(201)

      // ---- run again: it re-seals what the first left, and only that.
      const second = await startCommand(["reseal-secrets"], rotatedEnv, /re-sealed a batch/)
      await second.exited
      // The exit may come before the last of its output.
      for (let i = 0; i < 100 && !/^\{"resealed".*$/m.test(second.output()); i++) await sleep(20)
      const report = JSON.parse(/^\{"resealed".*$/m.exec(second.output())![0]) as {
        resealed: number
        already_current: number
        unopened: number
        tables: Record<string, { resealed: number; already_current: number; unopened: number }>
      }
      expect(second.child.exitCode).toBe(0)
      expect(report.unopened).toBe(0)
      expect(report.tables.secrets!.resealed + report.tables.webhooks!.resealed).toBe(seeded.length - done)
      expect(report.tables.secrets!.already_current + report.tables.webhooks!.already_current).toBe(done)
      await two.stop()

      // ---- B alone opens everything, and a server with B alone works.
      const after = await sealedValues(store)
      expect(after.every(underB)).toBe(true)
      openAll(after, B, [])
      const three = await startServer(baseEnv({ ...db, ENCRYPTION_KEY: B.toString("hex"), WEBHOOK_ALLOW_HOSTS: "127.0.0.1" }))
      token = await operatorToken(three.url)
      await delivers(three.url, token, org, r, live.signing_secret)
      for (const s of secrets) expect(await vouched(three.url, full, s)).toBe(201)
      await three.stop()
    } finally {
      await killAll()
      await r.close()
      await auth.close()
    }
  }, 240_000)
})
