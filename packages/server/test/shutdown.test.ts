import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { createTestDatabase, type TestDatabase } from "@cmp/test-support/database"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import { childEnv, killLeftovers, startServer, startWorker } from "./built.js"

/**
 * SIGINT (Ctrl-C) and SIGTERM (a process manager) on the bundled server and worker: the first
 * signal drains (requests in flight get their answers, webhook calls in flight finish and are
 * recorded) and the process exits 0; a second one, later, exits at once. On SQLite, and on
 * PostgreSQL in the suite's PostgreSQL run.
 */

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-shutdown-"))
const databases: Array<TestDatabase> = []
afterEach(async () => {
  killLeftovers()
  await Promise.all(databases.splice(0).map((db) => db.close()))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

const ADMIN = { key: "admin", secret: "admin-secret-0123456789" }
let files = 0
/** A new database and the settings every process of one test shares. */
const environment = async () => {
  let store: Record<string, string>
  if (process.env.CMP_TEST_STORE === "postgres") {
    const db = await createTestDatabase({ clients: 2 })
    databases.push(db)
    store = { DATABASE_URL: db.url, DATABASE_POOL_SIZE: String(db.maxConnections ?? 4) }
  } else {
    store = { SQLITE_PATH: path.join(dir, `consent-${++files}.db`) }
  }
  return childEnv({
    ...store,
    ALLOW_HTTP: "true",
    LOG_LEVEL: "Warning",
    ADMIN_API_KEY: ADMIN.key,
    ADMIN_API_SECRET: ADMIN.secret,
    WEBHOOK_ALLOW_HOSTS: "127.0.0.1"
  })
}

/** The process's own lines of one message (`stopping`, `stopped`), parsed. */
const said = (output: string, message: string) =>
  output.split("\n").filter((l) => l.startsWith(`{"message":"${message}"`)).map((l) => JSON.parse(l) as Record<string, unknown>)

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const call = async (url: string, method: string, body?: unknown, token?: string) => {
  const res = await fetch(url, {
    method,
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const parsed = await res.json() as any
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(parsed)}`)
  return parsed
}

/** A receiver that holds every call until `answer` is called. */
const holdingReceiver = async () => {
  const held: Array<() => void> = []
  const server = http.createServer((req, res) => {
    req.resume()
    req.on("end", () => held.push(() => res.writeHead(204).end()))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    calls: () => held.length,
    answer: () => held.forEach((f) => f()),
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  }
}

/**
 * An organization with a webhook to `receiverUrl` and one consent event: one message
 * (user.created only, to keep it to one call). Answers the operator's token and the message id.
 */
const oneMessage = async (base: string, receiverUrl: string) => {
  const token = (await call(`${base}/v1/sessions`, "POST", { type: "api-key", ...ADMIN })).access_token as string
  const org = await call(`${base}/v1/organizations`, "POST", { name: "Shutdown" }, token)
  const flags = (await call(`${base}/v1/premium-features?organization_id=${org.id}`, "GET", undefined, token)).data[0]
  await call(`${base}/v1/premium-features/${flags.id}`, "PATCH", { consents_api: true, webhooks: true }, token)
  await call(`${base}/v1/webhooks`, "POST", { organization_id: org.id, url: receiverUrl, event_types: ["user.created"], flatten: false }, token)
  await call(`${base}/v1/consents/events`, "POST", {
    organization_id: org.id,
    user: { organization_user_id: "u-1" },
    consents: { purposes: [{ id: "analytics", enabled: true }] }
  }, token)
  const messages = await call(`${base}/v1/webhooks/deliveries?organization_id=${org.id}`, "GET", undefined, token)
  expect(messages.data).toHaveLength(1)
  return { token, id: messages.data[0].id as string }
}

/**
 * A session request whose body is not sent yet: it resolves `started` once the server has read
 * its headers (its `100 Continue`), and `send` completes it.
 */
const slowRequest = (base: string) => {
  const body = JSON.stringify({ type: "api-key", ...ADMIN })
  let started!: () => void
  const begun = new Promise<void>((resolve) => (started = resolve))
  const req = http.request(`${base}/v1/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), expect: "100-continue" }
  })
  req.on("continue", () => started())
  const answer = new Promise<{ status: number; connection: string | undefined; body: any }>((resolve, reject) => {
    req.on("response", (res) => {
      let text = ""
      res.on("data", (d) => (text += String(d)))
      res.on("end", () => resolve({ status: res.statusCode!, connection: res.headers.connection, body: JSON.parse(text) }))
    })
    req.on("error", reject)
  })
  req.flushHeaders()
  return { begun, send: () => req.end(body), answer }
}

/** The stored message, read through a fresh server on the same file. */
const messageAfterRestart = async (env: NodeJS.ProcessEnv, id: string) => {
  const again = await startServer({ ...env, WEBHOOK_DISPATCHER: "false" })
  try {
    const token = (await call(`${again.url}/v1/sessions`, "POST", { type: "api-key", ...ADMIN })).access_token
    return await call(`${again.url}/v1/webhooks/deliveries/${id}`, "GET", undefined, token)
  } finally {
    again.child.kill("SIGKILL")
    await again.exited
  }
}

describe("the server on a signal", () => {
  it.each(["SIGINT", "SIGTERM"] as const)("%s: the request and the webhook call in flight finish, then it exits 0", async (signal) => {
    const receiver = await holdingReceiver()
    try {
      const env = await environment()
      const server = await startServer(env)
      const { id } = await oneMessage(server.url, receiver.url)
      // The call is at the receiver, unanswered; a request is half sent.
      while (receiver.calls() === 0) await sleep(10)
      const request = slowRequest(server.url)
      await request.begun

      server.child.kill(signal)
      // Both still run, so the process waits for them.
      await sleep(300)
      expect(server.alive()).toBe(true)
      request.send()
      const answer = await request.answer
      expect(answer.status).toBe(201)
      expect(answer.body.access_token).toMatch(/\S+/)
      // The connection closes after the answer rather than waiting for more requests.
      expect(answer.connection).toBe("close")
      expect(server.alive()).toBe(true)
      receiver.answer()
      expect(await server.exited, server.output()).toBe(0)
      // It said that it was stopping, then that it stopped, and why.
      expect(said(server.output(), "stopping")).toEqual([{ message: "stopping", signal, pid: server.child.pid }])
      expect(said(server.output(), "stopped")).toEqual([{ message: "stopped", signal, exitCode: 0, pid: server.child.pid }])

      const message = await messageAfterRestart(env, id)
      expect([message.status, message.attempts_count, message.last_status_code]).toEqual(["delivered", 1, 204])
    } finally {
      await receiver.close()
    }
  }, 60_000)

  it("a second signal, a while after the first, ends the drain at once with the signal's code", async () => {
    const server = await startServer(await environment())
    const request = slowRequest(server.url)
    request.answer.catch(() => undefined)
    await request.begun
    server.child.kill("SIGTERM")
    // Closer together, the two would count as one Ctrl-C (the terminal and pnpm both send it).
    await sleep(1200)
    expect(server.alive()).toBe(true)
    server.child.kill("SIGINT")
    expect(await server.exited).toBe(130)
    expect(said(server.output(), "stopped")).toEqual([
      { message: "stopped", signal: "SIGINT", drain: "cut short by a second signal", exitCode: 130, pid: server.child.pid }
    ])
  }, 60_000)
})

describe("the worker on a signal", () => {
  it.each(["SIGTERM", "SIGINT"] as const)("%s: the webhook call in flight finishes and is recorded, then it exits 0", async (signal) => {
    const receiver = await holdingReceiver()
    try {
      const env = await environment()
      // The API does not deliver; the worker does.
      const server = await startServer({ ...env, WEBHOOK_DISPATCHER: "false" })
      const { id, token } = await oneMessage(server.url, receiver.url)
      const worker = await startWorker(env)
      while (receiver.calls() === 0) await sleep(10)

      worker.child.kill(signal)
      await sleep(300)
      expect(worker.alive()).toBe(true)
      receiver.answer()
      expect(await worker.exited, worker.output()).toBe(0)
      expect(said(worker.output(), "stopped")).toEqual([{ message: "stopped", signal, exitCode: 0, pid: worker.child.pid }])

      const message = await call(`${server.url}/v1/webhooks/deliveries/${id}`, "GET", undefined, token)
      expect([message.status, message.attempts_count, message.last_status_code]).toEqual(["delivered", 1, 204])
      server.child.kill("SIGTERM")
      expect(await server.exited).toBe(0)
    } finally {
      await receiver.close()
    }
  }, 60_000)
})
