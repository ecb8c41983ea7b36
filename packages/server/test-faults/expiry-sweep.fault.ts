import { afterAll, describe, expect, it } from "vitest"
import {
  baseEnv,
  type Child,
  consentOrganization,
  expectJson,
  faultStores,
  findAll,
  killAll,
  operatorToken,
  type Receiver,
  receiver,
  sleep,
  startServer,
  startWorker
} from "./processes.js"

/**
 * kill -9 of the `worker` while it sweeps for lapsed consents: users' choices lapse one after
 * another (a two-second policy, events written by eight clients), a worker sweeping every
 * 100 ms is killed at the first expiry message that arrives, a second one once a third of the
 * users were announced, and a third finishes. Afterwards every user has exactly
 * one `user.consent_expired` message in the outbox (its mark and its message commit together or
 * not at all), delivered; the receiver may see a message again (delivery is at least once, the
 * same `webhook-id`), never two messages for one user.
 *
 * Run on a SQLite file and on PostgreSQL (the server named by DATABASE_URL, else PGlite).
 */
const USERS = 400
const receivers: Array<Receiver> = []
// The server and one worker at a time.
const stores = faultStores(3)

afterAll(async () => {
  await killAll()
  for (const r of receivers) await r.close()
  await stores.close()
})

const waitUntil = async (done: () => boolean, what: string, timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(10)
  }
}

describe("kill -9 of a worker while it sweeps for lapsed consents", () => {
  for (const variant of stores.variants) {
    it(`${variant.name}: every lapsed consent has exactly one message, delivered`, async () => {
      const env = baseEnv({
        ...(await variant.database()),
        WEBHOOK_ALLOW_HOSTS: "127.0.0.1",
        WEBHOOK_TIMEOUT_MS: "1000",
        WEBHOOK_LEASE_MS: "2000",
        CONSENT_EXPIRY_SWEEP_MS: "100"
      })
      const hooks = await receiver()
      receivers.push(hooks)
      const server = await startServer({ ...env, WEBHOOK_DISPATCHER: "false" })
      const token = await operatorToken(server.url)
      const org = await consentOrganization(server.url, token, "expiry fault")
      const hook = await expectJson(201, `${server.url}/v1/webhooks`, "POST", {
        organization_id: org.id,
        url: hooks.url,
        event_types: ["user.consent_expired"]
      }, token)
      await expectJson(201, `${server.url}/v1/consents/policies`, "POST", {
        organization_id: org.id,
        consent_duration: 2,
        consent_duration_unit: "seconds"
      }, token)
      const announced = () => new Set(hooks.arrivals.map((a) => JSON.parse(a.body).parameters.entity.organization_user_id as string))

      // Written before any worker runs: on a SQLite file a second process's writes would make
      // these busy (a question of SQLite, not of the sweep).
      await Promise.all(Array.from({ length: 8 }, async (_, c) => {
        for (let i = c; i < USERS; i += 8) {
          await expectJson(201, `${server.url}/v1/consents/events`, "POST", {
            organization_id: org.id,
            user: { organization_user_id: `u${i}` },
            consents: { purposes: [{ id: "analytics", enabled: i % 2 === 0 }] }
          }, token)
        }
      }))
      let worker: Child = await startWorker(env)
      await waitUntil(() => hooks.arrivals.length > 0, "the first expiry message")
      await worker.kill()
      // Killed mid-sweep: some users' messages are not written yet.
      const queued = await findAll(server.url, `/v1/webhooks/deliveries?webhook_id=${hook.id}`, token)
      expect(queued.length).toBeGreaterThan(0)
      expect(queued.length).toBeLessThan(USERS)
      worker = await startWorker(env)
      await waitUntil(() => announced().size >= USERS / 3, "a third of the users announced")
      await worker.kill()
      worker = await startWorker(env)
      await waitUntil(() => announced().size === USERS, "every user announced")

      const log = await (async () => {
        const deadline = Date.now() + 30_000
        for (;;) {
          const rows = await findAll(server.url, `/v1/webhooks/deliveries?webhook_id=${hook.id}`, token)
          if (rows.length === USERS && rows.every((d: { status: string }) => d.status === "delivered")) return rows
          if (Date.now() > deadline) return rows
          await sleep(100)
        }
      })()
      await sleep(500)
      const users = log.map((d: { payload: any }) => d.payload.parameters.entity.organization_user_id as string)
      expect(new Set(users).size).toBe(users.length)
      expect(users.slice().sort()).toEqual(Array.from({ length: USERS }, (_, i) => `u${i}`).sort())
      expect(log.filter((d: { status: string }) => d.status !== "delivered")).toEqual([])
      // What arrived is the log's messages, each user under one webhook-id.
      const ids = new Set(log.map((d: { id: string }) => d.id))
      expect(hooks.arrivals.filter((a) => !ids.has(a.webhookId))).toEqual([])
      expect(new Set(hooks.arrivals.map((a) => a.webhookId)).size).toBe(USERS)
      await worker.stop()
      await server.stop()
    })
  }
})
