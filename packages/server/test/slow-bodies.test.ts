import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { createTestDatabase, type TestDatabase } from "@cmp/test-support/database"
import { afterAll, expect, it } from "vitest"
import { childEnv, killLeftovers, startServer } from "./built.js"

/**
 * Many connections that send almost all of a large body without a token do not hold the
 * server's memory: the bundled server (its own process, so its resident memory is its alone)
 * answers each with 401 from its headers and discards what follows.
 */

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-slow-bodies-"))
let db: TestDatabase | undefined
const sockets: Array<net.Socket> = []
afterAll(async () => {
  for (const s of sockets) s.destroy()
  killLeftovers()
  await db?.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

const CONNECTIONS = 400
const BODY = 1024 * 1024

/** Resident memory of a process, in bytes. */
const rss = (pid: number) => {
  const line = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))
  return Number(line![1]) * 1024
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

it.skipIf(process.platform !== "linux")(`${CONNECTIONS} connections sending almost all of a 1 MiB body without a token: each gets 401 at once, memory stays flat`, async () => {
  let store: Record<string, string>
  if (process.env.CMP_TEST_STORE === "postgres") {
    db = await createTestDatabase({ clients: 2 })
    store = { DATABASE_URL: db.url, DATABASE_POOL_SIZE: String(db.maxConnections ?? 4) }
  } else {
    store = { SQLITE_PATH: path.join(dir, "consent.db") }
  }
  const server = await startServer(childEnv({
    ...store,
    ALLOW_HTTP: "true",
    LOG_LEVEL: "Warning",
    ADMIN_API_KEY: "admin",
    ADMIN_API_SECRET: "admin-secret-0123456789"
  }))
  const pid = server.child.pid!
  const { hostname, port } = new URL(server.url)
  // Warm up: the first requests load code and fill caches the server keeps anyway.
  for (let i = 0; i < 20; i++) await fetch(`${server.url}/v1/keys`, { method: "POST", body: "{}" })
  const before = rss(pid)

  const head = [
    "POST /v1/keys HTTP/1.1",
    `host: ${hostname}`,
    "content-type: application/json",
    `content-length: ${BODY}`,
    "",
    ""
  ].join("\r\n")
  const piece = Buffer.alloc(BODY / 8, " ")
  const answers: Array<() => string> = []
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    const socket = net.connect(Number(port), hostname)
    sockets.push(socket)
    let received = ""
    socket.on("data", (d) => (received += d.toString("latin1")))
    answers.push(() => received)
    socket.on("error", () => undefined)
    await new Promise((resolve) => socket.once("connect", resolve))
    const write = (data: string | Buffer) => new Promise<void>((resolve) => socket.write(data, () => resolve()))
    await write(head)
    // The body in pieces, slowly, all but its last byte.
    for (let i = 0; i < 7; i++) {
      await write(piece)
      await sleep(10)
    }
    await write(piece.subarray(1))
  }))

  // The server has had the bytes; sample its memory while every body is still unfinished.
  let peak = 0
  for (let i = 0; i < 10; i++) {
    await sleep(200)
    peak = Math.max(peak, rss(pid))
  }
  expect(peak - before, `resident memory grew from ${before >> 20} MiB to ${peak >> 20} MiB`).toBeLessThan(100 * 1024 * 1024)
  // Each answered, though no body is done.
  expect(answers).toHaveLength(CONNECTIONS)
  for (const received of answers) expect(received()).toMatch(/^HTTP\/1\.1 401 /)
}, 120_000)
