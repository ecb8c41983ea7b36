import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { drainable } from "../src/Drain.js"

/**
 * The graceful close under `RunningServer.close`, on a bare Node server whose answers the test
 * releases by hand, and a client that keeps its connections alive as browsers and fetch do.
 */

const agents: Array<http.Agent> = []
afterEach(() => {
  for (const a of agents.splice(0)) a.destroy()
})

const start = async () => {
  const held: Array<() => void> = []
  const server = http.createServer((req, res) => {
    if (req.url === "/slow") held.push(() => res.end("slow done"))
    else res.end("fast")
  })
  const drain = drainable(server)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const port = (server.address() as AddressInfo).port
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 })
  agents.push(agent)
  const get = (path: string) =>
    new Promise<{ status: number; body: string; connection: string | undefined }>((resolve, reject) => {
      http.get({ host: "127.0.0.1", port, path, agent }, (res) => {
        let body = ""
        res.on("data", (d) => (body += String(d)))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection }))
      }).on("error", reject)
    })
  const heldCount = () => held.length
  const release = () => held.splice(0).forEach((answer) => answer())
  return { server, drain, get, heldCount, release }
}

const until = async (condition: () => boolean) => {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5))
}

describe("graceful close", () => {
  it("a request in flight gets its answer, its connection then closes, and close resolves", async () => {
    const s = await start()
    // An idle kept-alive connection, which close must not wait for.
    expect((await s.get("/fast")).connection).toBe("keep-alive")
    const slow = s.get("/slow")
    await until(() => s.heldCount() === 1)
    let closed = false
    const closing = s.drain.close().then(() => {
      closed = true
    })
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(closed).toBe(false)
    s.release()
    const answer = await slow
    expect(answer).toEqual({ status: 200, body: "slow done", connection: "close" })
    await closing
    expect(s.server.listening).toBe(false)
  })

  it("an answer already under way when the close began still ends its connection afterwards", async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/plain" })
      res.write("part one, ")
      setTimeout(() => res.end("part two"), 100)
    })
    const drain = drainable(server)
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
    const port = (server.address() as AddressInfo).port
    const agent = new http.Agent({ keepAlive: true })
    agents.push(agent)
    let closing: Promise<void> | undefined
    const body = new Promise<string>((resolve) => {
      http.get({ host: "127.0.0.1", port, path: "/", agent }, (res) => {
        let text = ""
        res.on("data", (d) => {
          text += String(d)
          if (text === "part one, ") closing = drain.close()
        })
        res.on("end", () => resolve(text))
      })
    })
    expect(await body).toBe("part one, part two")
    // Resolves only once the kept-alive connection is closed.
    await closing
    expect(server.listening).toBe(false)
  })

  it("what still runs after the grace period is cut", async () => {
    const s = await start()
    const slow = s.get("/slow").then(() => "answered", () => "cut")
    await until(() => s.heldCount() === 1)
    await s.drain.close(20)
    expect(await slow).toBe("cut")
  })
})
