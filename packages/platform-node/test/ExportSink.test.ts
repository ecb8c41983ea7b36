import { type ExportDestination, ExportFailed, ExportSink } from "@cmp/core"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { type ExportSinkOptions, NodeExportSinkLive } from "../src/ExportSink.js"

// Every listener here is on 127.0.0.1; nothing is sent to a private or link-local address.

const open = (options: ExportSinkOptions, destination: ExportDestination, fileName = "export.ndjson") =>
  Effect.flatMap(ExportSink, (sink) => sink.open(destination, fileName)).pipe(Effect.provide(NodeExportSinkLive(options)))

const https = (url: string): ExportDestination => ({ type: "https", url })

/** A bare TCP listener on 127.0.0.1 that counts the connections it accepts. */
const tcpListener = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ server: net.Server; port: number; connections: () => number }>((resolve) => {
      let count = 0
      const server = net.createServer((socket) => {
        count++
        socket.destroy()
      })
      server.listen(0, "127.0.0.1", () =>
        resolve({ server, port: (server.address() as AddressInfo).port, connections: () => count })
      )
    })
  ),
  ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
)

/** A port nothing listens on (bound once, then released). */
const closedPort = Effect.promise(() =>
  new Promise<number>((resolve) => {
    const server = net.createServer()
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as AddressInfo).port
      server.close(() => resolve(port))
    })
  })
)

interface Seen {
  readonly port: number
  readonly requests: Array<{ headers: http.IncomingHttpHeaders; chunks: Array<string>; remoteAddress?: string }>
}

/**
 * An HTTP receiver on 127.0.0.1 that records each request's body chunk by chunk as it arrives,
 * and answers with `answer(index)` once the body has ended.
 */
const httpReceiver = (answer: (index: number, res: http.ServerResponse) => void = (_i, res) => res.writeHead(200).end()) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ server: http.Server; seen: Seen }>((resolve) => {
        const requests: Seen["requests"] = []
        const server = http.createServer((req, res) => {
          const entry = { headers: req.headers, chunks: [] as Array<string>, remoteAddress: req.socket.remoteAddress }
          const index = requests.push(entry) - 1
          req.setEncoding("utf8")
          req.on("data", (c: string) => entry.chunks.push(c))
          req.on("end", () => answer(index, res))
        })
        server.listen(0, "127.0.0.1", () => resolve({ server, seen: { port: (server.address() as AddressInfo).port, requests } }))
      })
    ),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          server.closeAllConnections()
          server.close(() => resolve())
        })
      )
  ).pipe(Effect.map(({ seen }) => seen))

const waitFor = (condition: () => boolean, timeoutMs = 5000) =>
  Effect.promise(async () => {
    const deadline = Date.now() + timeoutMs
    while (!condition()) {
      if (Date.now() > deadline) return false
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    return true
  })

describe("NodeExportSinkLive, https destinations", () => {
  it.scopedLive("loopback in any form is refused before a connection, with one message for open and closed ports", () =>
    Effect.gen(function*() {
      const listener = yield* tcpListener
      const closed = yield* closedPort
      // 127.0.0.1 is allow-listed (as in development); its other spellings and names are not.
      const options = { allowHosts: ["127.0.0.1"], timeoutMs: 2000 }
      for (const template of ["https://[::ffff:7f00:1]:PORT/", "https://[::ffff:127.0.0.1]:PORT/", "https://localhost:PORT/"]) {
        const messages: Array<string> = []
        for (const port of [listener.port, closed]) {
          const e = yield* Effect.flip(open(options, https(template.replace("PORT", String(port)))))
          assert.instanceOf(e, ExportFailed)
          messages.push(e.message)
        }
        assert.strictEqual(messages[0], messages[1], template)
        assert.match(messages[0]!, /^POST \S+: refused: \S+ is a private\/loopback\/link-local address$/, template)
        assert.notInclude(messages[0]!, String(listener.port))
      }
      yield* Effect.sleep("100 millis")
      assert.strictEqual(listener.connections(), 0)
    }))

  it.scopedLive("the mapped forms are named as the policy reads them", () =>
    Effect.gen(function*() {
      const closed = yield* closedPort
      const e = yield* Effect.flip(open({}, https(`https://[::ffff:127.0.0.1]:${closed}/`)))
      assert.strictEqual(e.message, "POST [::ffff:7f00:1]: refused: ::ffff:7f00:1 is a private/loopback/link-local address")
    }))

  it.scopedLive("an allow-listed receiver gets the NDJSON body streamed in chunks", () =>
    Effect.gen(function*() {
      const r = yield* httpReceiver()
      const writer = yield* open({ allowHosts: ["127.0.0.1"], timeoutMs: 2000 }, https(`http://127.0.0.1:${r.port}/in`))
      const lines = ["{\"type\":\"event\",\"n\":1}\n", "{\"type\":\"event\",\"n\":2}\n", "{\"type\":\"user\",\"n\":3}\n"]
      for (const [i, line] of lines.entries()) {
        yield* writer.write(line)
        // Each page reaches the receiver before the next is written.
        assert.isTrue(yield* waitFor(() => r.requests[0]?.chunks.join("") === lines.slice(0, i + 1).join("")), line)
      }
      yield* writer.close
      const request = r.requests[0]!
      assert.strictEqual(r.requests.length, 1)
      assert.strictEqual(request.chunks.join(""), lines.join(""))
      assert.isAtLeast(request.chunks.length, 3)
      assert.strictEqual(request.headers["content-type"], "application/x-ndjson")
      assert.strictEqual(request.headers["transfer-encoding"], "chunked")
    }))

  it.scopedLive("a 3xx is a failure and is not followed; a non-2xx is a failure", () =>
    Effect.gen(function*() {
      const target = yield* httpReceiver()
      const r = yield* httpReceiver((i, res) =>
        res.writeHead(i === 0 ? 307 : 500, { location: `http://127.0.0.1:${target.port}/elsewhere` }).end()
      )
      const options = { allowHosts: ["127.0.0.1"], timeoutMs: 2000 }
      for (const status of [307, 500]) {
        const writer = yield* open(options, https(`http://127.0.0.1:${r.port}/in`))
        yield* writer.write("{\"n\":1}\n")
        const e = yield* Effect.flip(writer.close)
        assert.instanceOf(e, ExportFailed)
        assert.strictEqual(e.message, `POST 127.0.0.1 answered ${status}`)
      }
      assert.strictEqual(target.requests.length, 0)
    }))

  it.scopedLive("a receiver that does not answer times out", () =>
    Effect.gen(function*() {
      const r = yield* httpReceiver(() => {})
      const writer = yield* open({ allowHosts: ["127.0.0.1"], timeoutMs: 200 }, https(`http://127.0.0.1:${r.port}/in`))
      yield* writer.write("{}\n")
      const e = yield* Effect.flip(writer.close)
      assert.strictEqual(e.message, "POST 127.0.0.1: timeout after 200 ms")
    }))

  it.scopedLive("an aborted writer aborts the upload: the receiver never sees the body end", () =>
    Effect.gen(function*() {
      const got = { chunks: "", ended: false, closed: false }
      const server = yield* Effect.acquireRelease(
        Effect.promise(() =>
          new Promise<http.Server>((resolve) => {
            const s = http.createServer((req) => {
              req.setEncoding("utf8")
              req.on("data", (c: string) => (got.chunks += c))
              req.on("end", () => (got.ended = true))
              req.on("close", () => (got.closed = true))
            })
            s.listen(0, "127.0.0.1", () => resolve(s))
          })
        ),
        (s) => Effect.promise(() => new Promise<void>((resolve) => {
          s.closeAllConnections()
          s.close(() => resolve())
        }))
      )
      const port = (server.address() as AddressInfo).port
      const writer = yield* open({ allowHosts: ["127.0.0.1"], timeoutMs: 2000 }, https(`http://127.0.0.1:${port}/in`))
      yield* writer.write("{\"n\":1}\n")
      assert.isTrue(yield* waitFor(() => got.chunks.length > 0))
      yield* writer.abort
      assert.isTrue(yield* waitFor(() => got.closed))
      assert.isFalse(got.ended)
    }))

  it.scopedLive("plain http is refused for hosts not allow-listed; the local address binds the connection", () =>
    Effect.gen(function*() {
      const e = yield* Effect.flip(open({ allowHosts: [] }, https("http://example.com/in")))
      assert.strictEqual(e.message, "POST example.com: refused: plain http is only for hosts in WEBHOOK_ALLOW_HOSTS")
      const r = yield* httpReceiver()
      const url = `http://127.0.0.1:${r.port}/in`
      const writer = yield* open({ allowHosts: ["127.0.0.1"], localAddress: "127.0.0.1" }, https(url))
      yield* writer.write("{}\n")
      yield* writer.close
      assert.strictEqual(r.requests[0]!.remoteAddress, "127.0.0.1")
      const v6 = yield* Effect.flip(open({ allowHosts: ["127.0.0.1"], localAddress: "::1" }, https(url)))
      assert.match(v6.message, /family of local address ::1/)
    }))
})

describe("NodeExportSinkLive, directory destinations", () => {
  it.scopedLive("writes under the exports root; '..' and a missing root are refused", () =>
    Effect.gen(function*() {
      const root = yield* Effect.acquireRelease(
        Effect.promise(() => fs.promises.mkdtemp(path.join(os.tmpdir(), "exports-"))),
        (dir) => Effect.promise(() => fs.promises.rm(dir, { recursive: true, force: true }))
      )
      const writer = yield* open({ exportsRoot: root }, { type: "directory", path: "org/a" }, "one.ndjson")
      yield* writer.write("{\"n\":1}\n")
      yield* writer.write("{\"n\":2}\n")
      yield* writer.close
      assert.strictEqual(fs.readFileSync(path.join(root, "org/a/one.ndjson"), "utf8"), "{\"n\":1}\n{\"n\":2}\n")

      const dropped = yield* open({ exportsRoot: root }, { type: "directory", path: "org/a" }, "two.ndjson")
      yield* dropped.write("partial\n")
      yield* dropped.abort
      assert.isFalse(fs.existsSync(path.join(root, "org/a/two.ndjson")))

      // Interrupted while it waits for the stream to drain, then aborted: no file stays.
      const waiting = yield* open({ exportsRoot: root }, { type: "directory", path: "org/a" }, "three.ndjson")
      const big = "x".repeat(4 * 1024 * 1024)
      const fiber = yield* Effect.fork(waiting.write(big))
      yield* Fiber.interrupt(fiber)
      yield* waiting.abort
      assert.isFalse(fs.existsSync(path.join(root, "org/a/three.ndjson")))

      const outside = yield* Effect.flip(open({ exportsRoot: root }, { type: "directory", path: "../escape" }))
      assert.strictEqual(outside.message, "the directory is outside the exports root")
      assert.isFalse(fs.existsSync(path.join(root, "..", "escape")))
      const noRoot = yield* Effect.flip(open({}, { type: "directory", path: "org" }))
      assert.strictEqual(noRoot.message, "directory destinations need EXPORTS_ROOT on the server")
    }))
})
