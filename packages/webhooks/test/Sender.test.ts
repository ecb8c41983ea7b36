import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import * as fs from "node:fs"
import * as http from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import * as net from "node:net"
import * as tls from "node:tls"
import * as Address from "../src/Address.js"
import { headerProblem, openStream, parseRetryAfter, send, type SendRequest, type StreamRequest } from "../src/Sender.js"
import { closedPort, realSleep, receiver, waitFor } from "./Receiver.js"

const base = (url: string, extra: Partial<SendRequest> = {}): SendRequest => ({
  url,
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ hello: "wörld ✓" }),
  timeoutMs: 2000,
  allowHosts: ["127.0.0.1"],
  ...extra
})

describe("Sender", () => {
  it.scoped("2xx: status, excerpt, the exact body and headers reach the receiver", () =>
    Effect.gen(function*() {
      const r = yield* receiver((_req, res) => res.writeHead(204).end())
      const ok = yield* receiver((_req, res) => res.writeHead(200).end("thanks"))
      const body = JSON.stringify({ hello: "wörld ✓" })
      const a = yield* send(base(r.url, { headers: { "content-type": "application/json", "x-custom": "yes" } }))
      assert.deepStrictEqual([a.status, a.error, a.responseExcerpt], [204, null, null])
      assert.strictEqual(r.requests[0]!.method, "POST")
      assert.strictEqual(r.requests[0]!.body, body)
      assert.strictEqual(r.requests[0]!.headers["content-length"], String(Buffer.byteLength(body)))
      assert.strictEqual(r.requests[0]!.headers["x-custom"], "yes")
      assert.strictEqual(r.requests[0]!.headers.host, `127.0.0.1:${r.port}`)
      const b = yield* send(base(ok.url))
      assert.deepStrictEqual([b.status, b.error, b.responseExcerpt], [200, null, "thanks"])
      assert.isAtLeast(b.durationMs, 0)
    }))

  it.scoped("500 and 410 are results, not errors", () =>
    Effect.gen(function*() {
      const r = yield* receiver((_req, res, i) => res.writeHead(i === 0 ? 500 : 410).end(i === 0 ? "boom" : "gone"))
      const a = yield* send(base(r.url))
      assert.deepStrictEqual([a.status, a.error, a.responseExcerpt], [500, null, "boom"])
      const b = yield* send(base(r.url))
      assert.deepStrictEqual([b.status, b.responseExcerpt], [410, "gone"])
    }))

  it.scoped("a 3xx is returned as is; the redirect target is never called", () =>
    Effect.gen(function*() {
      const target = yield* receiver()
      const r = yield* receiver((_req, res, i) => res.writeHead(i === 0 ? 302 : 307, { location: target.url }).end())
      const a = yield* send(base(r.url))
      const b = yield* send(base(r.url))
      assert.deepStrictEqual([a.status, b.status], [302, 307])
      assert.strictEqual(target.requests.length, 0)
    }))

  it.scoped("the excerpt keeps at most 2 KiB of a large body", () =>
    Effect.gen(function*() {
      const r = yield* receiver((_req, res) => res.writeHead(500).end("x".repeat(100_000)))
      const a = yield* send(base(r.url))
      assert.strictEqual(a.status, 500)
      assert.strictEqual(a.responseExcerpt!.length, 2048)
    }))

  it.scoped("a receiver that never answers times out", () =>
    Effect.gen(function*() {
      const r = yield* receiver(() => {})
      const a = yield* send(base(r.url, { timeoutMs: 200 }))
      assert.deepStrictEqual([a.status, a.error, a.responseExcerpt], [null, "timeout after 200 ms", null])
      assert.isAtLeast(a.durationMs, 150)
      assert.strictEqual(r.requests.length, 1)
    }))

  it.scoped("a slow body after the status keeps the status", () =>
    Effect.gen(function*() {
      const r = yield* receiver((_req, res) => {
        res.writeHead(200)
        res.write("partial")
      })
      const a = yield* send(base(r.url, { timeoutMs: 200 }))
      assert.strictEqual(a.status, 200)
      assert.strictEqual(a.responseExcerpt, "partial")
      assert.strictEqual(a.error, "timeout after 200 ms while reading the response body")
    }))

  it.scoped("answered calls to one receiver share a kept-alive connection; an early-ended body does not", () =>
    Effect.gen(function*() {
      const sockets = new Set<string>()
      const r = yield* receiver((req, res, i) => {
        sockets.add(`${req.remoteAddress}:${(res.socket as net.Socket).remotePort}`)
        // The fourth answer is larger than the excerpt: the call ends early and drops its socket.
        res.writeHead(200).end(i === 3 ? "x".repeat(100_000) : "ok")
      })
      for (let i = 0; i < 3; i++) assert.strictEqual((yield* send(base(r.url))).status, 200)
      assert.strictEqual(sockets.size, 1)
      assert.strictEqual((yield* send(base(r.url))).status, 200)
      assert.strictEqual((yield* send(base(r.url))).status, 200)
      assert.strictEqual(sockets.size, 2)
    }))

  it.scoped("a kept-alive connection the receiver drops as it is reused is replaced, not counted as a failed attempt", () =>
    Effect.gen(function*() {
      const sockets: Array<number | undefined> = []
      const r = yield* receiver((_req, res, i) => {
        sockets.push(res.socket?.remotePort)
        // The second call arrives on the kept-alive socket, which the receiver drops unanswered
        // (as a server closing an idle connection at that moment would).
        if (i === 1) return res.socket?.destroy()
        res.writeHead(204).end()
      })
      assert.strictEqual((yield* send(base(r.url))).status, 204)
      const again = yield* send(base(r.url))
      assert.deepStrictEqual([again.status, again.error], [204, null])
      assert.strictEqual(r.requests.length, 3)
      assert.strictEqual(sockets[1], sockets[0])
      assert.notStrictEqual(sockets[2], sockets[1])
    }))

  it.effect("connection refused: no status, the error says why", () =>
    Effect.gen(function*() {
      const port = yield* closedPort()
      const a = yield* send(base(`http://127.0.0.1:${port}/hook`))
      assert.strictEqual(a.status, null)
      assert.match(a.error!, /ECONNREFUSED/)
    }))

  it.scoped("private, loopback and link-local addresses are refused without an allow-list entry", () =>
    Effect.gen(function*() {
      const r = yield* receiver()
      const cases: ReadonlyArray<[string, string]> = [
        [r.url, "127.0.0.1"],
        [`http://localhost:${r.port}/hook`, "127.0.0.1"],
        ["http://169.254.169.254/latest/meta-data/", "169.254.169.254"],
        ["http://10.0.0.1/hook", "10.0.0.1"],
        [`http://[::1]:${r.port}/hook`, "::1"],
        ["http://[::ffff:127.0.0.1]/hook", "::ffff:7f00:1"],
        ["http://100.64.0.1/hook", "100.64.0.1"],
        ["http://0.0.0.0/hook", "0.0.0.0"]
      ]
      for (const [url, address] of cases) {
        const a = yield* send(base(url, { allowHosts: [] }))
        assert.strictEqual(a.status, null, url)
        assert.strictEqual(a.error, `refused: ${address} is a private/loopback/link-local address`, url)
      }
      // Another host on the list does not open the door for these.
      const other = yield* send(base(r.url, { allowHosts: ["example.com"] }))
      assert.match(other.error!, /^refused: /)
      assert.strictEqual(r.requests.length, 0)
    }))

  it.scoped("allow-listed hosts may be loopback (exact, case-insensitive hostname)", () =>
    Effect.gen(function*() {
      const r = yield* receiver()
      const a = yield* send(base(r.url, { allowHosts: ["127.0.0.1"] }))
      assert.strictEqual(a.status, 200)
      const b = yield* send(base(`http://localhost:${r.port}/hook`, { allowHosts: ["LocalHost"] }))
      assert.strictEqual(b.status, 200)
      // The name is kept for the Host header while the connection goes to the vetted address.
      assert.strictEqual(r.requests[1]!.headers.host, `localhost:${r.port}`)
      // The allow-list names hosts, not addresses: 127.0.0.1 does not allow "localhost".
      const c = yield* send(base(`http://localhost:${r.port}/hook`, { allowHosts: ["127.0.0.1"] }))
      assert.strictEqual(c.status, null)
      assert.strictEqual(r.requests.length, 2)
    }))

  it.scoped("header values with CR/LF are refused before anything is sent", () =>
    Effect.gen(function*() {
      const r = yield* receiver()
      const a = yield* send(base(r.url, { headers: { "x-evil": "a\r\nx-injected: 1" } }))
      assert.deepStrictEqual([a.status, a.error], [null, "refused: header x-evil contains CR/LF"])
      const b = yield* send(base(r.url, { headers: { "x-evil": "a\nb" } }))
      assert.strictEqual(b.error, "refused: header x-evil contains CR/LF")
      const c = yield* send(base(r.url, { headers: { "bad name": "a" } }))
      assert.match(c.error!, /not a valid token/)
      assert.strictEqual(r.requests.length, 0)
    }))

  it.scoped("localAddress binds the outgoing socket", () =>
    Effect.gen(function*() {
      const r = yield* receiver()
      const a = yield* send(base(r.url, { localAddress: "127.0.0.1" }))
      assert.strictEqual(a.status, 200)
      assert.strictEqual(r.requests[0]!.remoteAddress, "127.0.0.1")
      // Another loopback address proves the bind is real, where the system allows binding it.
      const canBind = yield* Effect.promise(() =>
        new Promise<boolean>((resolve) => {
          const s = net.createServer().once("error", () => resolve(false))
          s.listen(0, "127.0.0.2", () => s.close(() => resolve(true)))
        })
      )
      if (canBind) {
        const b = yield* send(base(r.url, { localAddress: "127.0.0.2" }))
        assert.strictEqual(b.status, 200)
        assert.strictEqual(r.requests[1]!.remoteAddress, "127.0.0.2")
      }
      // A local address that can't reach the destination's family is an error, not a silent unbound call.
      const c = yield* send(base(r.url, { localAddress: "::1" }))
      assert.strictEqual(c.status, null)
      assert.match(c.error!, /family/)
    }))

  it.scoped("Retry-After is reported in seconds (delay or HTTP date against the Clock)", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2030-01-01T00:00:00Z"))
      const r = yield* receiver((_req, res, i) =>
        res.writeHead(i === 0 ? 429 : 503, { "retry-after": i === 0 ? "120" : "Tue, 01 Jan 2030 00:10:00 GMT" }).end()
      )
      const a = yield* send(base(r.url))
      assert.deepStrictEqual([a.status, a.retryAfterSeconds], [429, 120])
      const b = yield* send(base(r.url))
      assert.deepStrictEqual([b.status, b.retryAfterSeconds], [503, 600])
    }))

  it.scoped("https: the certificate is verified and SNI carries the hostname, not the pinned address", () =>
    Effect.gen(function*() {
      // A self-signed certificate for localhost (test fixture): not trusted, so the call fails.
      const key = fs.readFileSync(new URL("./fixtures/self-signed.key", import.meta.url))
      const cert = fs.readFileSync(new URL("./fixtures/self-signed.crt", import.meta.url))
      const serverNames: Array<string> = []
      let requests = 0
      const server = yield* Effect.acquireRelease(
        Effect.promise(() =>
          new Promise<https.Server>((resolve) => {
            const s = https.createServer({
              key,
              cert,
              SNICallback: (name, cb) => {
                serverNames.push(name)
                cb(null, tls.createSecureContext({ key, cert }))
              }
            }, (_req, res) => {
              requests++
              res.end()
            })
            s.listen(0, "127.0.0.1", () => resolve(s))
          })
        ),
        (s) => Effect.promise(() => new Promise<void>((resolve) => s.close(() => resolve())))
      )
      const port = (server.address() as AddressInfo).port
      const a = yield* send(base(`https://localhost:${port}/hook`, { allowHosts: ["localhost"] }))
      assert.strictEqual(a.status, null)
      assert.match(a.error!, /self[- ]signed/i)
      assert.deepStrictEqual(serverNames, ["localhost"])
      assert.strictEqual(requests, 0)
    }))

  it.effect("unsupported protocols and invalid URLs are refused", () =>
    Effect.gen(function*() {
      const a = yield* send(base("ftp://example.com/x"))
      assert.strictEqual(a.error, "refused: unsupported protocol ftp:")
      const b = yield* send(base("not a url"))
      assert.match(b.error!, /^invalid url/)
    }))
})

describe("Sender parsing", () => {
  it("header and Retry-After parsing", () => {
    assert.isNull(headerProblem({ "webhook-id": "msg_1", authorization: "Bearer abc" }))
    assert.strictEqual(parseRetryAfter(" 30 ", 0), 30)
    assert.strictEqual(parseRetryAfter("soon", 0), undefined)
    assert.strictEqual(parseRetryAfter("Thu, 01 Jan 1970 00:00:10 GMT", 20_000), 0)
    assert.strictEqual(parseRetryAfter(undefined, 0), undefined)
  })
})

describe("Address", () => {
  // The policy itself is tested in core (AddressPolicy.test.ts); this module only re-exports it.
  it("re-exports core's address policy under the old names", () => {
    assert.isTrue(Address.isNonPublicAddress("::ffff:7f00:1"))
    assert.isFalse(Address.isNonPublicAddress("8.8.8.8"))
    assert.isTrue(Address.isAllowedHost("[::1]", ["::1"]))
    assert.strictEqual(Address.normalizeHost("[FE80::1]"), "fe80::1")
  })
})

const streamBase = (url: string, extra: Partial<StreamRequest> = {}): StreamRequest => ({
  url,
  headers: { "content-type": "application/x-ndjson" },
  timeoutMs: 2000,
  allowHosts: ["127.0.0.1"],
  ...extra
})

interface Listener {
  readonly port: number
  /** Connections accepted so far. */
  readonly connections: () => number
}

/** A bare TCP listener on 127.0.0.1 that counts connections (and drops them), closed with the scope. */
const tcpListener = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ server: net.Server; listener: Listener }>((resolve) => {
      let count = 0
      const server = net.createServer((socket) => {
        count++
        socket.destroy()
      })
      server.listen(0, "127.0.0.1", () =>
        resolve({ server, listener: { port: (server.address() as AddressInfo).port, connections: () => count } })
      )
    })
  ),
  ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
).pipe(Effect.map(({ listener }) => listener))

/**
 * An HTTP server on 127.0.0.1 that hands over each request as it starts (before its body), so
 * a test can watch the body arrive and answer whenever it likes.
 */
const liveServer = (handle: (req: http.IncomingMessage, res: http.ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<http.Server>((resolve) => {
        const s = http.createServer(handle)
        s.listen(0, "127.0.0.1", () => resolve(s))
      })
    ),
    (s) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          s.closeAllConnections()
          s.close(() => resolve())
        })
      )
  ).pipe(Effect.map((s) => (s.address() as AddressInfo).port))

describe("openStream", () => {
  it.scoped("streams chunks as they are written (chunked), then answers the receiver's status", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      let headers: http.IncomingHttpHeaders = {}
      let ended = false
      const port = yield* liveServer((req, res) => {
        headers = req.headers
        req.setEncoding("utf8")
        req.on("data", (c: string) => seen.push(c))
        req.on("end", () => {
          ended = true
          res.writeHead(202).end("stored")
        })
      })
      const call = yield* openStream(streamBase(`http://127.0.0.1:${port}/in?x=1`, {
        headers: { "content-type": "application/x-ndjson", "content-length": "999" }
      }))
      const lines = ["{\"n\":1}\n", "{\"n\":2,\"s\":\"wörld ✓\"}\n", "{\"n\":3}\n"]
      for (const line of lines) {
        yield* call.write(line)
        // Each chunk reaches the receiver before the next is written: nothing waits for the whole body.
        const text = lines.slice(0, lines.indexOf(line) + 1).join("")
        assert.isTrue(yield* waitFor(() => seen.join("") === text), line)
      }
      assert.isFalse(ended)
      const result = yield* call.end
      assert.deepStrictEqual([result.status, result.error, result.responseExcerpt], [202, null, "stored"])
      assert.strictEqual(seen.join(""), lines.join(""))
      assert.isAtLeast(seen.length, 3)
      assert.strictEqual(headers["transfer-encoding"], "chunked")
      assert.strictEqual(headers["content-length"], undefined)
      assert.strictEqual(headers["content-type"], "application/x-ndjson")
      assert.strictEqual(headers.host, `127.0.0.1:${port}`)
      // A fresh connection per stream, not a kept-alive one.
      assert.strictEqual(headers.connection, "close")
      // After the end nothing more can be written.
      const late = yield* Effect.flip(call.write("x"))
      assert.strictEqual(late._tag, "StreamFailed")
    }))

  it.scoped("write waits while the receiver does not read (back-pressure), and resumes when it does", () =>
    Effect.gen(function*() {
      let request: http.IncomingMessage | undefined
      let received = 0
      const port = yield* liveServer((req, res) => {
        request = req
        req.pause()
        req.on("data", (c: Buffer) => (received += c.length))
        req.on("end", () => res.writeHead(200).end())
      })
      const call = yield* openStream(streamBase(`http://127.0.0.1:${port}/in`, { timeoutMs: 10_000 }))
      const chunk = "x".repeat(256 * 1024)
      let written = 0
      // 64 MiB is more than the socket buffers of both ends can hold.
      const writer = yield* Effect.fork(Effect.repeatN(Effect.tap(call.write(chunk), () => Effect.sync(() => written++)), 255))
      assert.isTrue(yield* waitFor(() => request !== undefined))
      yield* realSleep(300)
      const stalled = written
      yield* realSleep(200)
      assert.strictEqual(written, stalled)
      assert.isBelow(written, 256)
      request!.resume()
      yield* writer.await
      assert.strictEqual(written, 256)
      const result = yield* call.end
      assert.deepStrictEqual([result.status, result.error], [200, null])
      assert.strictEqual(received, 256 * chunk.length)
    }))

  it.scoped("a 3xx answer is a status, never followed; a 500 is a status too", () =>
    Effect.gen(function*() {
      const target = yield* receiver()
      const r = yield* receiver((_req, res, i) => res.writeHead(i === 0 ? 302 : 500, { location: target.url }).end("no"))
      for (const expected of [302, 500]) {
        const call = yield* openStream(streamBase(r.url))
        yield* call.write("{\"n\":1}\n")
        const result = yield* call.end
        assert.deepStrictEqual([result.status, result.error, result.responseExcerpt], [expected, null, "no"])
      }
      assert.strictEqual(r.requests.length, 2)
      assert.strictEqual(r.requests[0]!.body, "{\"n\":1}\n")
      assert.strictEqual(target.requests.length, 0)
    }))

  it.scoped("a receiver that never answers times out after the body ends", () =>
    Effect.gen(function*() {
      const r = yield* receiver(() => {})
      const call = yield* openStream(streamBase(r.url, { timeoutMs: 200 }))
      yield* call.write("{\"n\":1}\n")
      const result = yield* call.end
      assert.deepStrictEqual([result.status, result.error, result.responseExcerpt], [null, "timeout after 200 ms", null])
      assert.isAtLeast(result.durationMs, 150)
      assert.strictEqual(r.requests.length, 1)
    }))

  it.scoped("an answer before the body is complete fails the call, whatever its status", () =>
    Effect.gen(function*() {
      const port = yield* liveServer((_req, res) => res.writeHead(200).end("early"))
      const call = yield* openStream(streamBase(`http://127.0.0.1:${port}/in`))
      yield* call.write("{\"n\":1}\n")
      // Writes fail once the answer is in.
      let failure: { message: string; status: number | null } | undefined
      for (let i = 0; i < 100 && failure === undefined; i++) {
        yield* realSleep(10)
        failure = yield* Effect.match(call.write("{\"n\":2}\n"), { onFailure: (e) => e, onSuccess: () => undefined })
      }
      assert.deepStrictEqual(failure && [failure.message, failure.status], ["answered 200 before the body was complete", 200])
      const result = yield* call.end
      assert.deepStrictEqual([result.status, result.error], [200, "answered 200 before the body was complete"])
    }))

  it.scoped("abort drops the connection; later writes fail and end answers the abort", () =>
    Effect.gen(function*() {
      let aborted = false
      const port = yield* liveServer((req) => req.on("aborted", () => (aborted = true)).on("error", () => {}))
      const call = yield* openStream(streamBase(`http://127.0.0.1:${port}/in`))
      yield* call.write("{\"n\":1}\n")
      yield* realSleep(50)
      yield* call.abort
      assert.isTrue(yield* waitFor(() => aborted))
      const e = yield* Effect.flip(call.write("x"))
      assert.strictEqual(e.message, "aborted")
      const result = yield* call.end
      assert.deepStrictEqual([result.status, result.error], [null, "aborted"])
    }))

  it.effect("a closed (allow-listed) port: the connection error shows in write or end", () =>
    Effect.gen(function*() {
      const port = yield* closedPort()
      const call = yield* openStream(streamBase(`http://127.0.0.1:${port}/in`))
      yield* Effect.ignore(call.write("{\"n\":1}\n"))
      const result = yield* call.end
      assert.strictEqual(result.status, null)
      assert.match(result.error!, /ECONNREFUSED/)
    }))

  it.scoped("non-allow-listed loopback is refused before any connection, with one message for open and closed ports", () =>
    Effect.gen(function*() {
      const open = yield* tcpListener
      const closed = yield* closedPort()
      const cases: ReadonlyArray<[string, string]> = [
        ["http://127.0.0.1:PORT/in", "127.0.0.1"],
        ["https://[::ffff:7f00:1]:PORT/in", "::ffff:7f00:1"],
        ["https://[::ffff:127.0.0.1]:PORT/in", "::ffff:7f00:1"],
        ["http://[::1]:PORT/in", "::1"]
      ]
      for (const [template, address] of cases) {
        for (const port of [open.port, closed]) {
          const url = template.replace("PORT", String(port))
          const e = yield* Effect.flip(openStream(streamBase(url, { allowHosts: [] })))
          assert.strictEqual(e._tag, "SendRefused", url)
          assert.strictEqual(e.message, `refused: ${address} is a private/loopback/link-local address`, url)
        }
      }
      // A name that resolves to loopback is refused on its addresses (whichever comes first).
      for (const port of [open.port, closed]) {
        const e = yield* Effect.flip(openStream(streamBase(`https://localhost:${port}/in`, { allowHosts: ["127.0.0.1"] })))
        assert.match(e.message, /^refused: (127\.0\.0\.1|::1) is a private\/loopback\/link-local address$/)
      }
      yield* realSleep(100)
      assert.strictEqual(open.connections(), 0)
    }))

  it.effect("bad URLs, protocols and headers are refused before anything is opened", () =>
    Effect.gen(function*() {
      const a = yield* Effect.flip(openStream(streamBase("ftp://example.com/x")))
      assert.strictEqual(a.message, "refused: unsupported protocol ftp:")
      const b = yield* Effect.flip(openStream(streamBase("not a url")))
      assert.match(b.message, /^invalid url/)
      const c = yield* Effect.flip(openStream(streamBase("http://127.0.0.1:1/", { headers: { "x-evil": "a\r\nb: c" } })))
      assert.strictEqual(c.message, "refused: header x-evil contains CR/LF")
      // A failed resolution is a refusal too (a resolver that does not answer at all hits the timeout).
      const d = yield* Effect.flip(openStream(streamBase("https://no-such-host.invalid/")))
      assert.strictEqual(d._tag, "SendRefused")
      assert.match(d.message, /^(dns lookup of no-such-host\.invalid failed|timeout after 2000 ms)/)
    }))

  it.scoped("localAddress binds the streaming socket", () =>
    Effect.gen(function*() {
      const r = yield* receiver()
      const call = yield* openStream(streamBase(r.url, { localAddress: "127.0.0.1" }))
      yield* call.write("{}\n")
      const result = yield* call.end
      assert.strictEqual(result.status, 200)
      assert.strictEqual(r.requests[0]!.remoteAddress, "127.0.0.1")
      const e = yield* Effect.flip(openStream(streamBase(r.url, { localAddress: "::1" })))
      assert.match(e.message, /family/)
    }))
})
