import { createTestDatabase, type TestDatabase } from "@cmp/test-support/database"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"

/**
 * Helpers of the fault tests: the real server (`src/main.ts`) and its `worker` command as
 * child processes, and a small JSON client. Each process is `node --import tsx src/main.ts`, a
 * single process, so its pid is the server's own (the `tsx` binary would run the script in a
 * child of its own, which a SIGKILL of the wrapper would leave running).
 */

const packageDir = path.join(import.meta.dirname, "..")
const main = path.join(packageDir, "src", "main.ts")

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export const ADMIN_KEY = "admin"
export const ADMIN_SECRET = "admin-secret-0123456789"

/**
 * The environment of every child: this process's, without any database or key settings of its
 * own (each test names its database), plus the operator key and plain HTTP on a free port.
 */
export const baseEnv = (extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv => {
  const { DATABASE_URL: _url, DATABASE_POOL_SIZE: _pool, SQLITE_PATH: _file, ENCRYPTION_KEY: _key, JWT_SECRET: _jwt, ...inherited } = process.env
  return {
    ...inherited,
    ALLOW_HTTP: "true",
    LOG_LEVEL: "Warning",
    PORT: "0",
    ADMIN_API_KEY: ADMIN_KEY,
    ADMIN_API_SECRET: ADMIN_SECRET,
    ...extra
  }
}

/**
 * The stores a fault test runs on, each a `database()` giving the environment of its processes:
 * a SQLite file, and PostgreSQL (a fresh database on the server DATABASE_URL names, dropped
 * afterwards, else an in-process PGlite behind its socket) with `clients` connections at once (a
 * killed process's connection may still be closing when the next one connects). `close`
 * removes what they made.
 */
export const faultStores = (clients: number) => {
  const dirs: Array<string> = []
  const databases: Array<TestDatabase> = []
  return {
    variants: [
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
          const db = await createTestDatabase({ clients })
          databases.push(db)
          return { DATABASE_URL: db.url, DATABASE_POOL_SIZE: db.kind === "pglite" ? "1" : "10" }
        }
      }
    ],
    close: async () => {
      for (const db of databases) await db.close()
      for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}

export interface Child {
  readonly child: ChildProcess
  readonly pid: number
  /** stdout and stderr so far. */
  readonly output: () => string
  readonly exited: Promise<void>
  readonly alive: () => boolean
  /** SIGKILL, and wait for the exit. */
  readonly kill: () => Promise<void>
  /** SIGTERM (a clean shutdown), then SIGKILL after `graceMs`. */
  readonly stop: (graceMs?: number) => Promise<void>
}

export interface ServerChild extends Child {
  readonly url: string
}

const running = new Set<Child>()

/** Kills every child still running (afterAll of each file). */
export const killAll = async () => {
  await Promise.all([...running].map((c) => c.kill()))
}

/** The teardown of a PostgreSQL fault test: the processes first, then what they used. */
export const releaseAll = async (held: {
  readonly receiver?: { readonly close: () => Promise<unknown> } | undefined
  readonly admin?: { readonly end: () => Promise<unknown> } | undefined
  readonly db?: { readonly close: () => Promise<unknown> } | undefined
}) => {
  await killAll()
  await held.receiver?.close()
  await held.admin?.end()
  await held.db?.close()
}

const spawnMain = <A>(args: Array<string>, env: NodeJS.ProcessEnv, ready: (out: string) => A | undefined, what: string, timeoutMs = 60_000) =>
  new Promise<Child & { readonly ready: A }>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", main, ...args], { env, cwd: packageDir, stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let done = false
    const exited = new Promise<void>((r) => child.once("exit", () => r()))
    const alive = () => child.exitCode === null && child.signalCode === null
    const handle: Child = {
      child,
      pid: child.pid!,
      output: () => out,
      exited,
      alive,
      kill: async () => {
        if (alive()) child.kill("SIGKILL")
        await exited
        running.delete(handle)
      },
      stop: async (graceMs = 10_000) => {
        if (alive()) child.kill("SIGTERM")
        await Promise.race([exited, sleep(graceMs)])
        await handle.kill()
      }
    }
    running.add(handle)
    const timer = setTimeout(() => {
      if (done) return
      done = true
      void handle.kill()
      reject(new Error(`${what} not ready after ${timeoutMs} ms: ${out}`))
    }, timeoutMs)
    const check = () => {
      if (done) return
      const value = ready(out)
      if (value === undefined) return
      done = true
      clearTimeout(timer)
      resolve({ ...handle, ready: value })
    }
    child.stdout!.on("data", (d) => {
      out += String(d)
      check()
    })
    child.stderr!.on("data", (d) => {
      out += String(d)
      check()
    })
    child.once("exit", (code, signal) => {
      running.delete(handle)
      if (done) return
      done = true
      clearTimeout(timer)
      reject(new Error(`${what} exited (${code ?? signal}) before it was ready: ${out}`))
    })
  })

/** `main.ts` (serve): resolves once it logs that it listens. */
export const startServer = async (env: NodeJS.ProcessEnv): Promise<ServerChild> => {
  const c = await spawnMain([], env, (out) => /"message":"listening","url":"([^"]+)"/.exec(out)?.[1], "server")
  return { ...c, url: c.ready }
}

/** `main.ts worker`: resolves once it logs that it delivers webhooks. */
export const startWorker = (env: NodeJS.ProcessEnv): Promise<Child> =>
  spawnMain(["worker"], env, (out) => (/"message":"delivering webhooks"/.test(out) ? true : undefined), "worker")

/** `main.ts <command>`: resolves once its output (stdout or stderr) matches `ready`. */
export const startCommand = (args: Array<string>, env: NodeJS.ProcessEnv, ready: RegExp): Promise<Child> =>
  spawnMain(args, env, (out) => (ready.test(out) ? true : undefined), args[0] ?? "command")

// ---------------------------------------------------------------- HTTP

export interface Reply {
  readonly status: number
  readonly body: any
  readonly text: string
  readonly headers: Headers
}

export const json = async (
  url: string,
  method: string,
  body?: unknown,
  token?: string,
  signal?: AbortSignal,
  headers: Record<string, string> = {}
): Promise<Reply> => {
  const res = await fetch(url, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal
  })
  const text = await res.text()
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    parsed = undefined
  }
  return { status: res.status, body: parsed, text, headers: res.headers }
}

/** Asserting variant: throws with the body when the status is not the expected one. */
export const expectJson = async (status: number, url: string, method: string, body?: unknown, token?: string): Promise<any> => {
  const r = await json(url, method, body, token)
  if (r.status !== status) throw new Error(`${method} ${url}: expected ${status}, got ${r.status}: ${r.text}`)
  return r.body
}

export const operatorToken = async (base: string): Promise<string> =>
  (await expectJson(201, `${base}/v1/sessions`, "POST", { type: "api-key", key: ADMIN_KEY, secret: ADMIN_SECRET })).access_token

/** A new organization with the consents API and webhooks switched on. */
export const consentOrganization = async (base: string, token: string, name = "fault"): Promise<{ id: string }> => {
  const org = await expectJson(201, `${base}/v1/organizations`, "POST", { name }, token)
  const flags = (await expectJson(200, `${base}/v1/premium-features?organization_id=${org.id}`, "GET", undefined, token)).data[0]
  await expectJson(200, `${base}/v1/premium-features/${flags.id}`, "PATCH", { consents_api: true, webhooks: true }, token)
  return org
}

/** Every row of a find, 1,000 per page (`query` without `$limit`/`$skip`). */
export const findAll = async (base: string, pathAndQuery: string, token: string): Promise<Array<any>> => {
  const rows: Array<any> = []
  const sep = pathAndQuery.includes("?") ? "&" : "?"
  for (let skip = 0;; skip += 1000) {
    const page = await expectJson(200, `${base}${pathAndQuery}${sep}$limit=1000&$skip=${skip}`, "GET", undefined, token)
    rows.push(...page.data)
    if (page.data.length < 1000) return rows
  }
}

// ---------------------------------------------------------------- a webhook receiver

export interface Arrival {
  readonly webhookId: string
  readonly body: string
  readonly at: number
  /** The status the receiver answered. */
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
}

export interface Receiver {
  readonly url: string
  readonly arrivals: Array<Arrival>
  readonly close: () => Promise<void>
}

/**
 * A real HTTP server on 127.0.0.1 that records every request (its `webhook-id` and raw body)
 * and answers the status `answer` gives it (204 by default).
 */
export const receiver = async (answer: (webhookId: string, body: string) => number = () => 204): Promise<Receiver> => {
  const arrivals: Array<Arrival> = []
  const server = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const webhookId = String(req.headers["webhook-id"] ?? "")
      const body = Buffer.concat(chunks).toString("utf8")
      const status = answer(webhookId, body)
      arrivals.push({ webhookId, body, at: Date.now(), status, headers: req.headers })
      res.statusCode = status
      res.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}/hook`,
    arrivals,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
