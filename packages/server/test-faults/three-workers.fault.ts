import { createTestDatabase, type TestDatabase } from "@cmp/test-support/database"
import * as crypto from "node:crypto"
import { isDeepStrictEqual } from "node:util"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import {
  baseEnv,
  type Child,
  consentOrganization,
  expectJson,
  json,
  releaseAll,
  operatorToken,
  type Receiver,
  receiver,
  type ServerChild,
  sleep,
  startServer,
  startWorker
} from "./processes.js"

/**
 * Three dispatcher processes (`main.ts worker`) share one PostgreSQL outbox of 5,000 messages,
 * produced through the API (whose own dispatcher is off) while they deliver. The receiver
 * answers 500 to the first arrival of 30% of the messages (chosen by a hash of the message's
 * content, so the same ones every run) and 204 to everything else.
 *
 * - every message arrives and ends `delivered`;
 * - a message arrives twice only when its first arrival was answered 500 (or the worker lost
 *   the answer, which its attempt log then shows), never because two workers claimed it;
 * - every arrival of a message carries the `webhook-id` of its outbox row, the same as its first
 *   try, and the same body;
 * - the attempt log matches what the receiver answered, attempt by attempt;
 * - all three workers delivered, none logged an error.
 *
 * Needs a real PostgreSQL (DATABASE_URL): PGlite's socket serves one statement at a time per
 * client and cannot stand for concurrent `FOR UPDATE SKIP LOCKED` claimers.
 */
const realPostgres = Boolean(process.env.DATABASE_URL)
if (!realPostgres) console.warn("skipped: needs a real PostgreSQL in DATABASE_URL (PGlite's socket cannot serve concurrent claimers)")

const EVENTS = 2_500
/** Each event names a new user: event.created and user.created. */
const MESSAGES = EVENTS * 2
const PRODUCERS = 16

let db: TestDatabase | undefined
let admin: pg.Client | undefined
let hooks: Receiver | undefined
afterAll(() => releaseAll({ receiver: hooks, admin, db }))

/** A message by its content: its type and the id of the entity it is about. */
const contentKey = (payload: { type: string; parameters: { entity: { id: string } } }) => `${payload.type}:${payload.parameters.entity.id}`

/** The 30% whose first arrival is answered 500: a hash of the content, the same every run. */
const failsFirst = (key: string) => crypto.createHash("sha256").update(key).digest()[0]! < 77

const ok = (status: number | null) => status !== null && status >= 200 && status < 300

describe("three dispatcher processes on one PostgreSQL", () => {
  it.skipIf(!realPostgres)(
    `${MESSAGES} messages, 30% of first attempts answered 500: each arrives, duplicates only after a failed try, one webhook-id per message (needs DATABASE_URL)`,
    async () => {
      const started = Date.now()
      db = await createTestDatabase()
      admin = new pg.Client({ connectionString: db.url })
      await admin.connect()

      const seen = new Set<string>()
      hooks = await receiver((webhookId, body) => {
        const first = !seen.has(webhookId)
        seen.add(webhookId)
        return first && failsFirst(contentKey(JSON.parse(body))) ? 500 : 204
      })

      const common = {
        DATABASE_URL: db.url,
        WEBHOOK_ALLOW_HOSTS: "127.0.0.1",
        WEBHOOK_RETRY_SCHEDULE: "1,1,1,1,1",
        WEBHOOK_TIMEOUT_MS: "10000"
      }
      // The API server first (it migrates the database), then the workers.
      const api: ServerChild = await startServer(baseEnv({ ...common, WEBHOOK_DISPATCHER: "false" }))
      // Info: a worker logs each failed attempt with its worker_id.
      const workers: Array<Child> = await Promise.all([1, 2, 3].map(() => startWorker(baseEnv({ ...common, DATABASE_POOL_SIZE: "4", LOG_LEVEL: "Info" }))))
      /** The processes' output for a failure report, without the expected failed-attempt lines. */
      const outputs = () =>
        [`api:\n${api.output()}`, ...workers.map((w, i) => `worker ${i + 1}:\n${w.output()}`)].join("\n")
          .split("\n").filter((l) => !l.includes('"message":"webhook attempt failed"')).join("\n")
      try {
        const base = api.url
        const op = await operatorToken(base)
        const org = await consentOrganization(base, op)
        const hook = await expectJson(201, `${base}/v1/webhooks`, "POST", { organization_id: org.id, url: hooks.url, event_types: [] }, op)

        // Produce: each event names a new user, so it queues event.created and user.created.
        let next = 0
        const producer = async () => {
          while (next < EVENTS) {
            const i = next++
            const r = await json(`${base}/v1/consents/events`, "POST", {
              id: `evt-${i}`,
              organization_id: org.id,
              user: { organization_user_id: `user-${i}` },
              consents: { purposes: [{ id: "analytics", enabled: i % 2 === 0 }] }
            }, op, AbortSignal.timeout(30_000))
            if (r.status !== 201) throw new Error(`event ${i}: ${r.status} ${r.text}`)
          }
        }
        await Promise.all(Array.from({ length: PRODUCERS }, producer))
        const produced = Date.now()

        const outbox = (await admin.query<{ id: string; event_type: string; payload: any }>(
          "SELECT id, event_type, payload FROM webhook_deliveries WHERE webhook_id = $1",
          [hook.id]
        )).rows
        expect(outbox).toHaveLength(MESSAGES)
        const byKey = new Map(outbox.map((m) => [contentKey(m.payload), m]))
        expect(byKey.size).toBe(MESSAGES)
        expect(outbox.filter((m) => m.event_type === "event.created")).toHaveLength(EVENTS)
        expect(outbox.filter((m) => m.event_type === "user.created")).toHaveLength(EVENTS)

        // Wait until every message is delivered (or nothing moves any more).
        const deadline = Date.now() + 150_000
        for (;;) {
          const rows = (await admin.query<{ status: string; n: string }>(
            "SELECT status, count(*) AS n FROM webhook_deliveries WHERE webhook_id = $1 GROUP BY status",
            [hook.id]
          )).rows
          if (Number(rows.find((r) => r.status === "delivered")?.n ?? 0) === MESSAGES) break
          if (Date.now() > deadline) throw new Error(`not all delivered: ${JSON.stringify(rows)}`)
          await sleep(250)
        }
        const delivered = Date.now()
        // Anything sent twice by mistake would arrive now.
        await sleep(1500)

        const final = (await admin.query<{ id: string; status: string; attempts_count: number; last_status_code: number | null }>(
          "SELECT id, status, attempts_count, last_status_code FROM webhook_deliveries WHERE webhook_id = $1",
          [hook.id]
        )).rows
        expect(final.filter((m) => m.status !== "delivered" || !ok(m.last_status_code))).toEqual([])
        const attemptsCount = new Map(final.map((m) => [m.id, m.attempts_count]))

        /** The attempt log, per message, in order. */
        const logged = new Map<string, Array<number | null>>()
        const attemptRows = (await admin.query<{ delivery_id: string; status_code: number | null }>(
          `SELECT a.delivery_id, a.status_code FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
           WHERE d.webhook_id = $1 ORDER BY a.delivery_id, a.attempted_at, a.id`,
          [hook.id]
        )).rows
        for (const a of attemptRows) logged.set(a.delivery_id, [...(logged.get(a.delivery_id) ?? []), a.status_code])

        // What arrived, per message (by content), in arrival order.
        const arrivals = new Map<string, Array<{ webhookId: string; status: number; body: any }>>()
        for (const a of hooks.arrivals) {
          const body = JSON.parse(a.body)
          const key = contentKey(body)
          arrivals.set(key, [...(arrivals.get(key) ?? []), { webhookId: a.webhookId, status: a.status, body }])
        }
        // Nothing arrived that was not queued.
        expect([...arrivals.keys()].filter((k) => !byKey.has(k))).toEqual([])

        const problems: Array<string> = []
        let failedFirst = 0
        let lostAnswers = 0
        for (const [key, message] of byKey) {
          const got = arrivals.get(key) ?? []
          const attempts = logged.get(message.id) ?? []
          const lost = attempts.filter((s) => s === null).length
          lostAnswers += lost
          const fails = failsFirst(key)
          if (fails) failedFirst++
          const expected = fails ? [500, 204] : [204]
          const answered = got.map((a) => a.status)
          const what = `${key} (${message.id}): arrivals ${JSON.stringify(got.map((a) => [a.webhookId, a.status]))}, attempts ${JSON.stringify(attempts)}`
          if (got.length === 0) problems.push(`never arrived: ${what}`)
          // Every arrival carries the outbox row's id (so the first try's) and its exact payload.
          else if (got.some((a) => a.webhookId !== message.id)) problems.push(`webhook-id differs: ${what}`)
          else if (got.some((a) => !isDeepStrictEqual(a.body, message.payload))) problems.push(`body differs: ${what}`)
          else if (lost === 0) {
            // No answer was lost: exactly the expected tries, each logged as the receiver answered it.
            if (JSON.stringify(answered) !== JSON.stringify(expected)) problems.push(`expected ${JSON.stringify(expected)}: ${what}`)
            else if (JSON.stringify(attempts) !== JSON.stringify(answered)) problems.push(`attempt log differs: ${what}`)
          } else {
            // A lost answer (timeout, reset) may be followed by one more arrival each, no more.
            if (answered[0] !== expected[0] || !ok(answered.at(-1)!)) problems.push(`unexpected answers: ${what}`)
            if (got.length > expected.length + lost) problems.push(`more duplicates than lost answers: ${what}`)
          }
          if (attemptsCount.get(message.id) !== attempts.length) problems.push(`attempts_count ${attemptsCount.get(message.id)}: ${what}`)
        }
        expect(problems.slice(0, 20)).toEqual([])
        expect(hooks.arrivals.length).toBe(MESSAGES + failedFirst + lostAnswers)

        // All three workers took part (each logged some of the failed first attempts), none failed.
        for (const w of workers) {
          expect(w.output(), "a worker that delivered nothing").toMatch(/"message":"webhook attempt failed"/)
          expect(w.output()).not.toMatch(/"logLevel":"(ERROR|FATAL)"/)
        }
        console.log(
          `three workers: ${MESSAGES} messages, ${hooks.arrivals.length} arrivals (${failedFirst} answered 500 first, ${lostAnswers} lost answers); ` +
            `produced in ${((produced - started) / 1000).toFixed(1)} s, all delivered ${((delivered - produced) / 1000).toFixed(1)} s later`
        )
      } catch (e) {
        console.error(outputs().slice(-20_000))
        throw e
      } finally {
        await Promise.all(workers.map((w) => w.stop()))
        await api.stop()
      }
    },
    240_000
  )
})
