import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import * as fs from "node:fs"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import * as net from "node:net"
import * as tls from "node:tls"
import { isAllowedHost, isNonPublicAddress } from "../src/Address.js"
import { headerProblem, parseRetryAfter, send, type SendRequest } from "../src/Sender.js"
import { closedPort, receiver } from "./Receiver.js"

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

describe("Address", () => {
  it("classifies non-public addresses, including mapped and embedded IPv4", () => {
    const nonPublic = [
      "127.0.0.1", "127.255.255.254", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
      "169.254.169.254", "100.64.0.1", "100.127.255.255", "0.0.0.0", "224.0.0.1", "255.255.255.255",
      "::", "::1", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0", "febf::1", "ff02::1",
      "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1",
      "64:ff9b::a9fe:a9fe", "2002:7f00:1::1", "2001:db8::1", "not-an-ip"
    ]
    const isPublic = [
      "8.8.8.8", "1.1.1.1", "172.32.0.1", "172.15.255.255", "100.128.0.1", "100.63.255.255",
      "169.255.0.1", "2606:4700:4700::1111", "2a00:1450:4001:82b::200e", "::ffff:8.8.8.8",
      "64:ff9b::808:808", "2002:808:808::1"
    ]
    for (const a of nonPublic) assert.isTrue(isNonPublicAddress(a), a)
    for (const a of isPublic) assert.isFalse(isNonPublicAddress(a), a)
  })

  it("matches allow-listed hostnames exactly, ignoring case and IPv6 brackets", () => {
    assert.isTrue(isAllowedHost("LOCALHOST", ["localhost"]))
    assert.isTrue(isAllowedHost("[::1]", ["::1"]))
    assert.isTrue(isAllowedHost("::1", ["[::1]"]))
    assert.isFalse(isAllowedHost("evil.localhost", ["localhost"]))
    assert.isFalse(isAllowedHost("localhost", []))
  })

  it("header and Retry-After parsing", () => {
    assert.isNull(headerProblem({ "webhook-id": "msg_1", authorization: "Bearer abc" }))
    assert.strictEqual(parseRetryAfter(" 30 ", 0), 30)
    assert.strictEqual(parseRetryAfter("soon", 0), undefined)
    assert.strictEqual(parseRetryAfter("Thu, 01 Jan 1970 00:00:10 GMT", 20_000), 0)
    assert.strictEqual(parseRetryAfter(undefined, 0), undefined)
  })
})
