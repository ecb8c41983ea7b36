import { SqliteStore } from "@cmp/store-sqlite"
import { ManualClock } from "@cmp/test-support/clock"
import { ADMIN, START } from "@cmp/test-support/http"
import type * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createFetchHandler, type FetchApi, type FetchHandlerOptions, serveNode, toFetchResponse } from "../src/index.js"

/**
 * The fetch handler called directly with web `Request`s, as Hono, Next.js, Bun or Deno call it,
 * mounted under a prefix; and once through `serveNode` on Node's own server. The HTTP suites of
 * the server package run through it too (`CMP_TEST_ADAPTER=fetch`).
 */

const options = (more: Partial<FetchHandlerOptions> = {}): FetchHandlerOptions => ({
  store: SqliteStore.layer({ filename: ":memory:" }),
  hashCost: 1024,
  clock: new ManualClock(START),
  admin: ADMIN,
  logLevel: "None",
  dispatcher: false,
  ...more
})

const origin = "https://cmp.example"
const json = (method: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  new Request(`${origin}${path}`, { method, headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) })

let api: FetchApi

beforeAll(async () => {
  api = await createFetchHandler(options({ basePath: "/consent-api/" }))
})
afterAll(() => api?.close())

describe("a fetch handler mounted under /consent-api", () => {
  it("answers under the prefix: a session, then a read with its token", async () => {
    const session = await api.fetch(json("POST", "/consent-api/v1/sessions", { type: "api-key", ...ADMIN }))
    expect(session.status).toBe(201)
    expect(session.headers.get("cache-control")).toBe("no-store")
    const { access_token } = await session.json()
    const keys = await api.fetch(new Request(`${origin}/consent-api/v1/keys?$limit=1`, { headers: { authorization: `Bearer ${access_token}` } }))
    expect(keys.status).toBe(200)
    expect((await keys.json()).limit).toBe(1)
  })

  it("a path outside the prefix is a 404 in the contract's shape, with the usual headers", async () => {
    for (const path of ["/v1/sessions", "/consent-apix/v1/sessions", "/"]) {
      const r = await api.fetch(json("POST", path, { type: "api-key", ...ADMIN }))
      expect(r.status, path).toBe(404)
      expect(r.headers.get("x-content-type-options")).toBe("nosniff")
      expect(r.headers.get("x-request-id")).toBeTruthy()
      expect(await r.json()).toMatchObject({ code: 404, name: "NotFound", message: `Page not found: POST ${path}` })
    }
    const traced = await api.fetch(new Request(`${origin}/elsewhere`, { headers: { "x-request-id": "trace-42" } }))
    expect(traced.headers.get("x-request-id")).toBe("trace-42")
    expect(api.ownsRequest(new Request(`${origin}/v1/keys`))).toBe(false)
    expect(api.ownsRequest(new Request(`${origin}/consent-api/v1/keys`))).toBe(true)
    expect(api.ownsRequest(new Request(`${origin}/consent-api/health`))).toBe(false)
  })

  it("redirects and 404s of the API name the prefix", async () => {
    const docs = await api.fetch(new Request(`${origin}/consent-api/docs`))
    expect(docs.status).toBe(301)
    expect(docs.headers.get("location")).toBe("/consent-api/docs/")
    const missing = await api.fetch(new Request(`${origin}/consent-api/v1/nothing-here`))
    expect(missing.status).toBe(404)
    expect((await missing.json()).message).toBe("Page not found: GET /consent-api/v1/nothing-here")
  })

  it("serves the docs page and its assets as bytes with their types; HEAD has the length and no body", async () => {
    const page = await api.fetch(new Request(`${origin}/consent-api/docs/`))
    expect(page.status).toBe(200)
    expect(page.headers.get("content-type")).toMatch(/^text\/html/)
    expect(await page.text()).toContain("swagger-ui-bundle.js")
    const css = await api.fetch(new Request(`${origin}/consent-api/docs/swagger-ui.css`))
    expect(css.headers.get("content-type")).toMatch(/^text\/css/)
    const bytes = new Uint8Array(await css.arrayBuffer())
    expect(bytes.byteLength).toBeGreaterThan(1000)
    expect(Number(css.headers.get("content-length"))).toBe(bytes.byteLength)
    const head = await api.fetch(new Request(`${origin}/consent-api/docs/swagger-ui.css`, { method: "HEAD" }))
    expect(head.status).toBe(200)
    expect(Number(head.headers.get("content-length"))).toBe(bytes.byteLength)
    expect(head.body).toBeNull()
  })

  it("a streamed body past 1 MiB without Content-Length is 413", async () => {
    const chunk = new Uint8Array(64 * 1024).fill(0x20)
    let sent = 0
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        // Never ends on its own: the handler must stop reading at the limit.
        sent += chunk.byteLength
        controller.enqueue(chunk)
      }
    })
    const r = await api.fetch(new Request(`${origin}/consent-api/v1/sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      duplex: "half"
    } as RequestInit))
    expect(r.status).toBe(413)
    expect((await r.json()).name).toBe("PayloadTooLarge")
    expect(sent).toBeLessThan(2 * 1024 * 1024)
  })

  it("the client address the host passes is the one failed sign-ins are counted against", async () => {
    const attempt = (address: string, key: string) =>
      api.fetch(json("POST", "/consent-api/v1/sessions", { type: "api-key", key, secret: "wrong" }), { clientAddress: address })
    for (let i = 0; i < 5; i++) expect((await attempt("203.0.113.7", `made-up-${i}`)).status).toBe(400)
    expect((await attempt("203.0.113.7", "another-made-up")).status).toBe(429)
    expect((await attempt("198.51.100.9", "another-made-up")).status).toBe(400)
  })
})

describe("a Request the host parsed", () => {
  it("is answered at its URL's path; a Host header that is not a host name is refused", async () => {
    const spoofed = await api.fetch(new Request(`${origin}/consent-api/openapi.json`, { headers: { host: "cmp.example/consent-api/v1/keys?#" } }))
    expect(spoofed.status).toBe(400)
    expect((await spoofed.json()).message).toBe("Invalid Host header")
    const plain = await api.fetch(new Request(`${origin}/consent-api/openapi.json`, { headers: { host: "cmp.example" } }))
    expect(plain.status).toBe(200)
  })
})

describe("plain HTTP", () => {
  it("is redirected to https with the prefix, path and query, unless allowed", async () => {
    const strict = await createFetchHandler(options({ basePath: "/consent-api" }))
    try {
      const r = await strict.fetch(new Request("http://cmp.example/consent-api/v1/keys?$limit=2"))
      expect(r.status).toBe(301)
      expect(r.headers.get("location")).toBe("https://cmp.example/consent-api/v1/keys?$limit=2")
      const secure = await strict.fetch(new Request("https://cmp.example/consent-api/openapi.json"))
      expect(secure.status).toBe(200)
    } finally {
      await strict.close()
    }
  })
})

describe("toFetchResponse", () => {
  it("keeps several values of one header as separate lines", () => {
    const r = toFetchResponse({ status: 200, headers: { "set-cookie": ["a=1", "b=2"] } as unknown as Record<string, string>, body: "" })
    expect(r.headers.getSetCookie()).toEqual(["a=1", "b=2"])
  })
})

describe("serveNode", () => {
  let server: http.Server
  let local: FetchApi
  let base: string

  beforeAll(async () => {
    local = await createFetchHandler(options({ allowHttp: true }))
    server = serveNode(local.fetch)
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    await new Promise<void>((resolve) => {
      server?.close(() => resolve())
      server?.closeAllConnections()
    })
    await local?.close()
  })

  it("serves the API on node:http, bodies both ways", async () => {
    const r = await fetch(`${base}/v1/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ type: "api-key", ...ADMIN }) })
    expect(r.status).toBe(201)
    expect((await r.json()).access_token).toBeTruthy()
  })

  it("answers a body over the limit with 413 and keeps serving", async () => {
    const big = await fetch(`${base}/v1/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: " ".repeat(1024 * 1024 + 1) })
    expect(big.status).toBe(413)
    const next = await fetch(`${base}/openapi.json`)
    expect(next.status).toBe(200)
  })
})

describe("serveNode's request", () => {
  let server: http.Server
  let port: number
  let calls = 0

  beforeAll(async () => {
    // Echoes the URL the handler is given.
    server = serveNode(async (request) => {
      calls++
      const text = `${request.method} ${request.url}`
      return new Response(text, { headers: { "content-length": String(Buffer.byteLength(text)) } })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
    port = (server.address() as AddressInfo).port
  })
  afterAll(async () => {
    await new Promise<void>((resolve) => {
      server?.close(() => resolve())
      server?.closeAllConnections()
    })
  })

  const send = (head: ReadonlyArray<string>) =>
    new Promise<{ status: number; headers: string; body: string }>((resolve, reject) => {
      const socket = net.connect(port, "127.0.0.1", () => socket.write([...head, "Connection: close", "", ""].join("\r\n")))
      let text = ""
      socket.setEncoding("latin1")
      socket.on("data", (c) => (text += c))
      socket.on("end", () => {
        const split = text.indexOf("\r\n\r\n")
        resolve({ status: Number(text.split(" ")[1]), headers: text.slice(0, split).toLowerCase(), body: text.slice(split + 4) })
      })
      socket.on("error", reject)
    })

  it("has the request target's path, whatever the Host header holds", async () => {
    const spoofed = await send(["GET /public/health?x=1 HTTP/1.1", `Host: 127.0.0.1:${port}/consent-api/v1/organizations?#`])
    expect(spoofed.body).toBe("GET http://localhost/public/health?x=1")
    const named = await send(["GET /public/health HTTP/1.1", "Host: api.example.com"])
    expect(named.body).toBe("GET http://api.example.com/public/health")
    const slashes = await send(["GET //evil.example/consent-api HTTP/1.1", "Host: api.example.com"])
    expect(slashes.body).toBe("GET http://api.example.com//evil.example/consent-api")
  })

  it("refuses, without calling the handler, targets a URL parser would rewrite and methods a Request cannot carry", async () => {
    const before = calls
    for (const target of ["/a/%2e%2e/b", "/a/.%2E/b", "/a/../b", "/a/./b", "/a\\b", "http://api.example.com/a", "*"]) {
      const r = await send([`GET ${target} HTTP/1.1`, "Host: api.example.com"])
      expect(r.status, target).toBe(404)
      expect(r.headers, target).toContain("x-content-type-options: nosniff")
      expect(JSON.parse(r.body), target).toMatchObject({ name: "NotFound", code: 404 })
    }
    const trace = await send(["TRACE /a HTTP/1.1", "Host: api.example.com"])
    expect(trace.status).toBe(405)
    expect(trace.headers).toMatch(/\r\nallow: get, head, post, put, patch, delete/)
    expect(calls).toBe(before)
    // An encoded backslash is no separator to any parser: the handler has it as sent.
    expect((await send(["GET /a%5cb HTTP/1.1", "Host: api.example.com"])).body).toBe("GET http://api.example.com/a%5cb")
  })
})
