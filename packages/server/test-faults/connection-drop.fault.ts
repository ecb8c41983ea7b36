import { createTestDatabase, type TestDatabase } from "@cmp/test-support/database"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import {
  baseEnv,
  consentOrganization,
  expectJson,
  json,
  releaseAll,
  operatorToken,
  type Receiver,
  receiver,
  type Reply,
  type ServerChild,
  sleep,
  startServer
} from "./processes.js"

/**
 * PostgreSQL drops the server's connections mid-load (`pg_terminate_backend` of every backend
 * of the server's database, four times) while eight clients stream consent events with ids of
 * their own. A client retries an event whose answer was a 5xx with the same id, as the 503's
 * Retry-After invites it to.
 *
 * - every answer is a 201, or a 5xx with the contract's error body (a 503 naming the database,
 *   or a 500 that says nothing of the cause); never a hang, never a 4xx, except the 409 of a
 *   retry whose first attempt was committed before its answer was lost;
 * - between and after the drops the server recovers by itself: new requests succeed, no restart;
 * - every event is stored exactly once, with exactly one outbox message (checked in SQL and
 *   through the API), and the in-server dispatcher, whose connections were dropped too,
 *   delivers every message.
 *
 * Needs a real PostgreSQL (DATABASE_URL): PGlite has no backends to terminate.
 */
const realPostgres = Boolean(process.env.DATABASE_URL)
if (!realPostgres) console.warn("skipped: needs a real PostgreSQL in DATABASE_URL (PGlite has no backends to terminate)")

let db: TestDatabase | undefined
let admin: pg.Client | undefined
let hooks: Receiver | undefined
afterAll(() => releaseAll({ receiver: hooks, admin, db }))

/** A lost connection is the database being unavailable: 503 in the contract's error body, never a bare 500. */
const expectServerError = (r: Reply, what: string) => {
  if (r.status !== 503) throw new Error(`${what}: ${r.status} is not 201 or 503: ${r.text}`)
  expect(r.body, `${what}: ${r.text}`).toEqual({
    name: "Unavailable",
    message: expect.any(String),
    code: 503,
    className: "unavailable",
    errors: expect.any(Object)
  })
  expect(r.body.message, what).toMatch(/database/)
  expect(r.headers.get("retry-after"), what).toBe("5")
}

const REQUEST_TIMEOUT_MS = 15_000

describe("PostgreSQL connections terminated mid-load", () => {
  it.skipIf(!realPostgres)(
    "answers 201 or a contract 5xx, recovers without a restart, and keeps every event once with its message (needs DATABASE_URL)",
    async () => {
      db = await createTestDatabase()
      admin = new pg.Client({ connectionString: db.url })
      await admin.connect()
      const dbName = new URL(db.url).pathname.slice(1)
      hooks = await receiver()
      const server: ServerChild = await startServer(baseEnv({
        DATABASE_URL: db.url,
        DATABASE_POOL_SIZE: "10",
        WEBHOOK_ALLOW_HOSTS: "127.0.0.1",
        WEBHOOK_RETRY_SCHEDULE: "1,1,1,1,1,1,1,1,1,1",
        WEBHOOK_TIMEOUT_MS: "2000",
        // A message whose outcome could not be written (its connection dropped) stays leased
        // until the lease runs out, then is sent again: a short lease keeps the test short.
        WEBHOOK_LEASE_MS: "4000"
      }))
      const base = server.url
      try {
        const op = await operatorToken(base)
        const org = await consentOrganization(base, op)
        const hook = await expectJson(201, `${base}/v1/webhooks`, "POST", {
          organization_id: org.id,
          url: hooks.url,
          event_types: ["event.created"]
        }, op)

        const statuses: Record<number, number> = {}
        const acknowledged = new Set<string>()
        /** Events answered 409 on a retry: their first attempt was committed, its answer lost. */
        const committedBeforeLost = new Set<string>()
        const problems: Array<string> = []
        let stop = false

        const createEvent = (id: string, user: string, signal: AbortSignal) =>
          json(`${base}/v1/consents/events`, "POST", {
            id,
            organization_id: org.id,
            user: { organization_user_id: user },
            consents: { purposes: [{ id: "analytics", enabled: true }] }
          }, op, signal)

        /** One event, retried with its id after a 5xx until it is acknowledged (201, or 409 after a 5xx). */
        const submit = async (id: string, user: string) => {
          let failed = false
          for (let attempt = 1; attempt <= 50; attempt++) {
            let r: Reply
            try {
              r = await createEvent(id, user, AbortSignal.timeout(REQUEST_TIMEOUT_MS))
            } catch (e) {
              problems.push(`${id}: no answer (${e instanceof Error ? e.message : String(e)})`)
              return
            }
            statuses[r.status] = (statuses[r.status] ?? 0) + 1
            if (r.status === 201) {
              acknowledged.add(id)
              return
            }
            if (r.status === 409 && failed && r.body?.errors?.id !== undefined) {
              committedBeforeLost.add(id)
              acknowledged.add(id)
              return
            }
            if (r.status < 500) {
              problems.push(`${id}: ${r.status} ${r.text}`)
              return
            }
            try {
              expectServerError(r, id)
            } catch (e) {
              problems.push(String(e))
              return
            }
            failed = true
            await sleep(50)
          }
          problems.push(`${id}: still failing after 50 attempts`)
        }

        const client = async (c: number) => {
          for (let i = 0; !stop && problems.length === 0; i++) await submit(`evt-${c}-${i}`, `user-${c}-${i % 5}`)
        }
        const streaming = Promise.all(Array.from({ length: 8 }, (_, c) => client(c)))

        /** Waits until `n` more events are acknowledged: the server makes progress. */
        const progress = async (n: number, what: string) => {
          const target = acknowledged.size + n
          const deadline = Date.now() + 30_000
          while (acknowledged.size < target && problems.length === 0) {
            if (Date.now() > deadline) throw new Error(`no recovery ${what}: ${acknowledged.size}/${target} acknowledged, ${JSON.stringify(statuses)}\n${server.output()}`)
            await sleep(10)
          }
        }

        try {
          await progress(100, "before the first drop")
          const terminated: Array<number> = []
          for (let round = 0; round < 4; round++) {
            const r = await admin.query(
              "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
              [dbName]
            )
            terminated.push(r.rowCount ?? 0)
            // Between the drops the server must get going again on its own.
            await progress(50, `after drop ${round + 1}`)
          }
          // Every drop hit the server's connections (the pool and the dispatcher's).
          expect(terminated.every((n) => n > 0), `backends terminated per drop: ${terminated}`).toBe(true)
          await progress(100, "after the last drop")
        } finally {
          stop = true
          await streaming
        }
        expect(problems).toEqual([])

        // Recovered: with no load, new requests succeed at the first attempt.
        for (let i = 0; i < 30; i++) {
          const r = await createEvent(`after-${i}`, `user-after-${i}`, AbortSignal.timeout(REQUEST_TIMEOUT_MS))
          expect(r.status, r.text).toBe(201)
          acknowledged.add(`after-${i}`)
        }

        // In SQL: exactly the acknowledged events, each with exactly one outbox message.
        const stored = (await admin.query<{ id: string }>("SELECT id FROM consent_events WHERE organization_id = $1", [org.id])).rows.map((r) => r.id)
        expect(stored.length).toBe(new Set(stored).size)
        expect(new Set(stored)).toEqual(acknowledged)
        const outbox = (await admin.query<{ event_id: string; n: string }>(
          `SELECT payload->'parameters'->'entity'->>'id' AS event_id, count(*) AS n FROM webhook_deliveries
           WHERE webhook_id = $1 AND event_type = 'event.created' GROUP BY 1`,
          [hook.id]
        )).rows
        expect(outbox.filter((r) => Number(r.n) !== 1)).toEqual([])
        expect(new Set(outbox.map((r) => r.event_id))).toEqual(acknowledged)
        const [{ n: allMessages }] = (await admin.query<{ n: string }>("SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = $1", [hook.id])).rows
        expect(Number(allMessages)).toBe(acknowledged.size)

        // Through the API, the same count.
        expect((await expectJson(200, `${base}/v1/consents/events?organization_id=${org.id}&$limit=0`, "GET", undefined, op)).total).toBe(acknowledged.size)
        expect((await expectJson(200, `${base}/v1/webhooks/deliveries?webhook_id=${hook.id}&$limit=0`, "GET", undefined, op)).total).toBe(acknowledged.size)

        // The dispatcher recovered too: every message ends delivered and arrived.
        const deadline = Date.now() + 60_000
        for (;;) {
          const rows = (await admin.query<{ status: string; n: string }>(
            "SELECT status, count(*) AS n FROM webhook_deliveries WHERE webhook_id = $1 GROUP BY status",
            [hook.id]
          )).rows
          const delivered = Number(rows.find((r) => r.status === "delivered")?.n ?? 0)
          if (delivered === acknowledged.size) break
          if (Date.now() > deadline) throw new Error(`messages not all delivered: ${JSON.stringify(rows)}\n${server.output()}`)
          await sleep(250)
        }
        const ids = (await admin.query<{ id: string }>("SELECT id FROM webhook_deliveries WHERE webhook_id = $1", [hook.id])).rows.map((r) => r.id)
        const arrived = new Set(hooks.arrivals.map((a) => a.webhookId))
        expect(ids.filter((id) => !arrived.has(id))).toEqual([])
        console.log(
          `connection drops: answers ${JSON.stringify(statuses)}, 409 after a lost answer: ${committedBeforeLost.size}, ` +
            `events ${acknowledged.size}, webhook arrivals ${hooks.arrivals.length}`
        )
      } catch (e) {
        console.error(`server output:\n${server.output()}`)
        throw e
      } finally {
        await server.stop()
      }
    },
    180_000
  )
})
