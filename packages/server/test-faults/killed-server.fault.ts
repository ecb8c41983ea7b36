import { createTestDatabase, type TestDatabase } from "@cmp/test-support/database"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { baseEnv, consentOrganization, expectJson, findAll, json, killAll, operatorToken, sleep, startServer } from "./processes.js"

/**
 * kill -9 of the server while clients stream consent events: after a restart on the same
 * database every event that got a 201 is there, once, and has its webhook message. Consent is
 * legal evidence: an acknowledged write must survive a crash.
 *
 * Run on a SQLite file and on PostgreSQL: a fresh database on the server named by DATABASE_URL
 * (dropped afterwards), or, where it is unset, an in-process PGlite behind its socket (the
 * server process connects to it like to any PostgreSQL, with one connection).
 */
const dirs: Array<string> = []
const databases: Array<TestDatabase> = []

afterAll(async () => {
  await killAll()
  for (const db of databases) await db.close()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const variants = [
  {
    name: "SQLite file",
    database: async (): Promise<Record<string, string>> => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-fault-"))
      dirs.push(dir)
      return { SQLITE_PATH: path.join(dir, "consent.db") }
    }
  },
  {
    name: process.env.DATABASE_URL ? "PostgreSQL" : "PostgreSQL (PGlite, DATABASE_URL unset)",
    database: async (): Promise<Record<string, string>> => {
      // Two clients: the killed server's connection may still be closing when the second connects.
      const db = await createTestDatabase({ clients: 2 })
      databases.push(db)
      return { DATABASE_URL: db.url, DATABASE_POOL_SIZE: db.kind === "pglite" ? "1" : "10" }
    }
  }
]

describe.each(variants)("kill -9 while streaming consent events ($name)", ({ database }) => {
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
    const hook = await expectJson(201, `${first.url}/v1/webhooks`, "POST", {
      organization_id: org.id,
      url: "http://127.0.0.1:9/hook",
      event_types: ["event.created"]
    }, op)

    // Eight clients stream events with ids of their own; the server is killed mid-stream.
    const acknowledged = new Set<string>()
    const attempted = new Set<string>()
    const unexpected: Array<string> = []
    let stop = false
    const client = async (c: number) => {
      for (let i = 0; !stop; i++) {
        const id = `evt-${c}-${i}`
        attempted.add(id)
        try {
          const r = await json(`${first.url}/v1/consents/events`, "POST", {
            id,
            organization_id: org.id,
            user: { organization_user_id: `user-${c}-${i % 5}` },
            consents: { purposes: [{ id: "analytics", enabled: i % 2 === 0 }] }
          }, op, AbortSignal.timeout(30_000))
          if (r.status === 201) acknowledged.add(id)
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
    await first.kill()
    stop = true
    await streaming
    expect(unexpected).toEqual([])

    const second = await startServer(env)
    const token = await operatorToken(second.url)
    const events = (await findAll(second.url, `/v1/consents/events?organization_id=${org.id}&$select[]=id`, token)).map((e: { id: string }) => e.id)
    // Every acknowledged event is there; none twice; only attempted ones (in flight at the kill) besides.
    expect([...acknowledged].filter((id) => !events.includes(id))).toEqual([])
    expect(new Set(events).size).toBe(events.length)
    expect(events.filter((id) => !attempted.has(id))).toEqual([])
    expect(events.length - acknowledged.size).toBeLessThanOrEqual(8)

    // Every stored event has its message in the outbox (written in the same transaction), once.
    const messages = (await findAll(second.url, `/v1/webhooks/deliveries?webhook_id=${hook.id}`, token))
      .map((d: { payload: { parameters: { entity: { id: string } } } }) => d.payload.parameters.entity.id)
    expect(events.filter((id) => !messages.includes(id))).toEqual([])
    expect(messages.slice().sort()).toEqual(events.slice().sort())
    await second.stop()
  })
})
