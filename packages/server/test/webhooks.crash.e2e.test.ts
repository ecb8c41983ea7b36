import { startServer } from "@cmp/http-express"
import type { StoreLayer } from "@cmp/platform"
import { PgStore } from "@cmp/store-postgres"
import { createTestDatabase, type TestDatabase } from "@cmp/test-support/database"
import { SqliteStore } from "@cmp/store-sqlite"
import { type ChildProcess, spawn } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import {
  ADMIN,
  createEvent,
  createHook,
  deliveriesOf,
  deliveryOf,
  eventually,
  operatorOf,
  purposes,
  receiver,
  sleep,
  storeKind,
  unique,
  verifyAtItsTime
} from "./helpers.js"

/**
 * At least once, across processes: the API server runs in this process without a dispatcher,
 * a `worker` process (`tsx src/main.ts worker`) delivers from the same database. The receiver
 * stops that worker (SIGSTOP), answers 204 and then kills it (SIGKILL): it has sent the message
 * and its answer was written, but it can never record the outcome. A second worker claims the
 * message when the dead worker's lease (2 s) runs out and sends it again: a duplicate with the
 * same `webhook-id`, never a loss.
 *
 * Run once with ENCRYPTION_KEY given to both processes, once with the key the first start
 * generated and kept in the database: either way the worker opens the signing secrets sealed
 * by the API server.
 */

const main = path.join(import.meta.dirname, "..", "src", "main.ts")
const tsx = path.join(import.meta.dirname, "..", "node_modules", ".bin", "tsx")

interface WorkerProcess {
  readonly child: ChildProcess
  /** The worker's own pid (tsx runs the script in a child process of its own), once it is ready. */
  readonly pid: Promise<number>
  readonly exited: Promise<void>
  readonly output: () => string
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** `tsx src/main.ts worker`; `pid` resolves when it reports that it delivers. */
const spawnWorker = (env: NodeJS.ProcessEnv): WorkerProcess => {
  const child = spawn(tsx, [main, "worker"], { env })
  let out = ""
  const exited = new Promise<void>((done) => child.once("exit", () => done()))
  const pid = new Promise<number>((resolve, reject) => {
    child.stdout!.on("data", (d) => {
      out += String(d)
      // `workerId` is `<hostname>-<pid>` of the process that runs main.ts.
      const m = /"message":"delivering webhooks","workerId":"[^"]*-(\d+)"/.exec(out)
      if (m) resolve(Number(m[1]))
    })
    child.once("exit", (code, signal) => reject(new Error(`worker exited (${code ?? signal}) before it was ready: ${out}`)))
  })
  pid.catch(() => {})
  child.stderr!.on("data", (d) => (out += String(d)))
  return { child, pid, exited, output: () => out }
}

const stopWorker = async (w: WorkerProcess | undefined) => {
  if (!w) return
  if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill("SIGTERM")
  await Promise.race([w.exited, sleep(5000)])
  const pid = await Promise.race([w.pid.catch(() => 0), sleep(100).then(() => 0)])
  if (pid !== 0 && alive(pid)) process.kill(pid, "SIGKILL")
  if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill("SIGKILL")
}

const variants = [
  { name: "ENCRYPTION_KEY given to the API server and the worker", key: crypto.randomBytes(32).toString("base64") },
  { name: "the encryption key kept in the database", key: undefined }
]

describe(`a worker killed mid-delivery (${storeKind})`, () => {
  it.each(variants)("the message is sent again with the same webhook-id and ends delivered: $name", async ({ key }) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-crash-"))
    let db: TestDatabase | undefined
    let store: StoreLayer
    // The worker's environment: the same database, the webhook settings of the brief.
    const { DATABASE_URL: _url, ENCRYPTION_KEY: _key, ...inherited } = process.env
    const env: NodeJS.ProcessEnv = {
      ...inherited,
      WEBHOOK_ALLOW_HOSTS: "127.0.0.1",
      WEBHOOK_TIMEOUT_MS: "1000",
      WEBHOOK_LEASE_MS: "2000",
      LOG_LEVEL: "Warning",
      ...(key ? { ENCRYPTION_KEY: key } : {})
    }
    if (storeKind === "sqlite") {
      const file = path.join(dir, "consent.db")
      store = SqliteStore.layer({ filename: file })
      env.SQLITE_PATH = file
    } else {
      // PGlite's socket: one connection per client (this process and two workers, one at a time).
      db = await createTestDatabase({ clients: 3 })
      const pool = db.kind === "pglite" ? 1 : db.maxConnections
      store = PgStore.layer({ url: db.url, maxConnections: pool })
      env.DATABASE_URL = db.url
      env.DATABASE_POOL_SIZE = String(pool ?? 4)
    }
    const api = await startServer({
      store,
      port: 0,
      allowHttp: true,
      hashCost: 1024,
      admin: ADMIN,
      logLevel: "None",
      webhookAllowHosts: ["127.0.0.1"],
      dispatcher: false,
      encryptionKey: key
    })
    let w1: WorkerProcess | undefined
    let w2: WorkerProcess | undefined
    /** The pid of the worker to kill at the first request (it may arrive before the pid is known). */
    let victim: Promise<number> | undefined
    const r = await receiver((_req, res) => {
      const pid = victim
      victim = undefined
      if (pid === undefined) {
        res.statusCode = 204
        res.end()
        return
      }
      // The first request only: the worker dies having sent the message and got its 204. It is
      // stopped before the answer is written: killed only after, a worker given the CPU first (on
      // a loaded machine) could record the outcome in between.
      void pid.then((p) => {
        process.kill(p, "SIGSTOP")
        res.statusCode = 204
        res.end(() => process.kill(p, "SIGKILL"))
      })
    })
    try {
      const op = await operatorOf(api.url)
      const t = await op.tenant()
      const hook = await createHook(t, r.url, { event_types: ["event.created"] })
      await createEvent(t, unique("u"), purposes(["p", true]))
      const [queued] = await deliveriesOf(t, hook.id)
      expect(queued).toMatchObject({ status: "pending", attempts_count: 0 })
      // No dispatcher in this process: nothing is sent until a worker runs.
      await sleep(200)
      expect(r.requests).toHaveLength(0)

      w1 = spawnWorker(env)
      victim = w1.pid
      const pid1 = await w1.pid
      await r.waitFor(1, 20_000)
      await Promise.race([w1.exited, sleep(10_000)])
      expect(alive(pid1)).toBe(false)

      // The dead worker recorded nothing: the message is still leased to it.
      const leased = await deliveryOf(t, queued.id)
      expect(leased).toMatchObject({ status: "delivering", attempts_count: 0 })
      expect(leased.attempts).toEqual([])

      w2 = spawnWorker(env)
      await w2.pid
      await r.waitFor(2, 20_000)
      // Few API calls while the worker runs (PGlite's socket prefers clients taking turns).
      await sleep(300)
      const done = await eventually(async () => {
        const d = await deliveryOf(t, queued.id)
        return d.status === "delivered" ? d : undefined
      }, "the delivery to be recorded as delivered", 10_000, 300)
      expect(done).toMatchObject({ status: "delivered", attempts_count: 1, last_status_code: 204, next_attempt_at: null })
      expect(done.attempts).toHaveLength(1)
      expect(done.attempts[0].status_code).toBe(204)

      // A duplicate, not a loss: the same message id, the same body, both signed.
      const [first, second] = r.requests
      expect(first!.headers["webhook-id"]).toBe(queued.id)
      expect(second!.headers["webhook-id"]).toBe(queued.id)
      expect(second!.body).toBe(first!.body)
      expect(verifyAtItsTime(hook.signing_secret, first!)).toEqual(queued.payload)
      expect(verifyAtItsTime(hook.signing_secret, second!)).toEqual(queued.payload)
      // Not before the first worker's lease ran out.
      expect(second!.at - first!.at).toBeGreaterThanOrEqual(1500)
      await sleep(300)
      expect(r.requests).toHaveLength(2)
    } catch (e) {
      const logs = [w1, w2].map((w, i) => `worker ${i + 1}:\n${w?.output() ?? "(not started)"}`).join("\n")
      console.error(logs)
      throw e
    } finally {
      await stopWorker(w2)
      await stopWorker(w1)
      await r.close()
      await api.close()
      await db?.close()
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)
})
