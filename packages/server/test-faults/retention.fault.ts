import { AttemptsTable, DeliveriesTable, eq, type StorePorts, Storage } from "@cmp/core"
import { PgStore } from "@cmp/store-postgres"
import { SqliteStore } from "@cmp/store-sqlite"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { afterAll, describe, expect, it } from "vitest"
import {
  baseEnv,
  type Child,
  consentOrganization,
  expectJson,
  faultStores,
  killAll,
  operatorToken,
  sleep,
  startServer,
  startWorker
} from "./processes.js"

/**
 * kill -9 of the `worker` in the middle of the purge of delivered messages: 20,000 messages
 * delivered 40 days ago are purged a batch at a time (`RETENTION_DELIVERED_DAYS` 30); the worker
 * is killed once some, not all, are gone. Afterwards no failed, pending or recently delivered
 * message is gone, every message left still has its attempt (a batch goes whole or not at all),
 * and the next worker's run finishes the purge.
 *
 * Run on a SQLite file and on PostgreSQL (the server named by DATABASE_URL, else PGlite). The
 * messages are written straight into the store by this process, with the ages they need.
 */
const OLD = 20_000
const KEPT = { failed: 300, pending: 300, recent: 1_000 }
// The server, this process's store and one worker at a time.
const stores = faultStores(4)

afterAll(async () => {
  await killAll()
  await stores.close()
})

const DAY = 24 * 3600_000

const storeOf = (env: Record<string, string>): Layer.Layer<StorePorts, unknown> =>
  env.SQLITE_PATH !== undefined
    ? SqliteStore.layer({ filename: env.SQLITE_PATH })
    : PgStore.layer({ url: env.DATABASE_URL!, maxConnections: 1 })

/** `n` messages of the webhook in one status, finished at `at`, each with one attempt. */
const seed = (organizationId: string, webhookId: string, prefix: string, n: number, status: string, at: string) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    for (let from = 0; from < n; from += 1000) {
      const ids = Array.from({ length: Math.min(1000, n - from) }, (_, i) => `${prefix}-${from + i}`)
      yield* Effect.orDie(storage.repository(DeliveriesTable).insert(ids.map((id) => ({
        id,
        organization_id: organizationId,
        webhook_id: webhookId,
        event_type: "event.created",
        regulation: "gdpr",
        status,
        attempts_count: 1,
        // Pending ones are due in a year: no dispatcher takes them during the test.
        next_attempt_at: status === "pending" ? new Date(Date.now() + 365 * DAY).toISOString() : null,
        last_status_code: 200,
        payload: {},
        created_at: at,
        updated_at: at,
        version: 2,
        lease_until: null,
        leased_by: null,
        trace_context: null
      } as any))))
      yield* Effect.orDie(storage.repository(AttemptsTable).insert(ids.map((id) => ({
        id: `a-${id}`,
        delivery_id: id,
        organization_id: organizationId,
        webhook_id: webhookId,
        attempted_at: at,
        status_code: 200,
        succeeded: status === "delivered",
        duration_ms: 3,
        error: null,
        response_excerpt: null
      }))))
    }
  })

/** The messages left, by the prefix of their ids, and the attempts left. */
const left = (organizationId: string) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const byPrefix: Record<string, number> = {}
    const deliveries = new Set<string>()
    for (let skip = 0;; skip += 1000) {
      const page = yield* storage.repository(DeliveriesTable).find({
        count: false,
        where: [eq("organization_id", organizationId)],
        sort: [{ field: "id", direction: 1 }],
        limit: 1000,
        skip,
        select: ["id"]
      })
      for (const d of page.data) {
        deliveries.add(d.id)
        const prefix = d.id.split("-")[0]!
        byPrefix[prefix] = (byPrefix[prefix] ?? 0) + 1
      }
      if (page.data.length < 1000) break
    }
    const attempts = new Set<string>()
    for (let skip = 0;; skip += 1000) {
      const page = yield* storage.repository(AttemptsTable).find({
        count: false,
        where: [eq("organization_id", organizationId)],
        sort: [{ field: "id", direction: 1 }],
        limit: 1000,
        skip,
        select: ["delivery_id"]
      })
      for (const a of page.data) attempts.add(a.delivery_id)
      if (page.data.length < 1000) break
    }
    return { byPrefix, attemptsWithout: [...attempts].filter((id) => !deliveries.has(id)).length, deliveriesWithout: [...deliveries].filter((id) => !attempts.has(id)).length }
  })

describe("kill -9 of a worker while it purges delivered messages", () => {
  for (const variant of stores.variants) {
    it(`${variant.name}: nothing not due is lost, and the next run finishes the purge`, async () => {
      const database = await variant.database()
      const env = baseEnv({
        ...database,
        WEBHOOK_ALLOW_HOSTS: "127.0.0.1",
        RETENTION_DELIVERED_DAYS: "30",
        RETENTION_INTERVAL_MS: "300"
      })
      const server = await startServer({ ...env, WEBHOOK_DISPATCHER: "false" })
      const token = await operatorToken(server.url)
      const org = await consentOrganization(server.url, token, "retention fault")
      const hook = await expectJson(201, `${server.url}/v1/webhooks`, "POST", {
        organization_id: org.id,
        url: "http://127.0.0.1:9/off",
        enabled: false
      }, token)
      const store = ManagedRuntime.make(storeOf(database))
      try {
        const now = Date.now()
        await store.runPromise(Effect.all([
          seed(org.id, hook.id, "old", OLD, "delivered", new Date(now - 40 * DAY).toISOString()),
          seed(org.id, hook.id, "failed", KEPT.failed, "failed", new Date(now - 40 * DAY).toISOString()),
          seed(org.id, hook.id, "pending", KEPT.pending, "pending", new Date(now - 40 * DAY).toISOString()),
          seed(org.id, hook.id, "recent", KEPT.recent, "delivered", new Date(now - 20 * DAY).toISOString())
        ], { discard: true }))
        const delivered = async () => {
          const stats = await expectJson(200, `${server.url}/v1/webhooks/deliveries/stats?organization_id=${org.id}`, "GET", undefined, token)
          return stats[0].counts.delivered as number
        }
        expect(await delivered()).toBe(OLD + KEPT.recent)

        let worker: Child = await startWorker(env)
        const deadline = Date.now() + 60_000
        // Killed once the purge is under way, well before it ends.
        while ((await delivered()) > OLD + KEPT.recent - 1_500) {
          if (Date.now() > deadline) throw new Error(`the purge did not start: ${worker.output()}`)
          await sleep(10)
        }
        await worker.kill()
        const midway = await store.runPromise(left(org.id))
        expect(midway.byPrefix.old).toBeGreaterThan(0)
        expect(midway.byPrefix.old).toBeLessThan(OLD)
        expect([midway.byPrefix.failed, midway.byPrefix.pending, midway.byPrefix.recent]).toEqual([KEPT.failed, KEPT.pending, KEPT.recent])
        expect([midway.attemptsWithout, midway.deliveriesWithout]).toEqual([0, 0])

        worker = await startWorker(env)
        while ((await delivered()) > KEPT.recent) {
          if (Date.now() > deadline + 60_000) throw new Error(`the purge did not finish: ${worker.output()}`)
          await sleep(50)
        }
        const after = await store.runPromise(left(org.id))
        expect(after.byPrefix).toEqual({ failed: KEPT.failed, pending: KEPT.pending, recent: KEPT.recent })
        expect([after.attemptsWithout, after.deliveriesWithout]).toEqual([0, 0])
        await worker.stop()
      } finally {
        await store.dispose()
        await server.stop()
      }
    })
  }
})
