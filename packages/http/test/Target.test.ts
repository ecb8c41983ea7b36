import { SqliteStore } from "@cmp/store-sqlite"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type HttpApi, isHostHeader, isRewrittenPath, unsupportedMethodResponse, unsupportedMethods } from "../src/index.js"
import { makeApi } from "./api.js"
import { body, memoryApi, request } from "./requests.js"

/**
 * What every host agrees on about a request's target: a `Host` that could carry a path is
 * refused, a path a URL parser would rewrite is a path of its own (404), and the methods no
 * route takes are a 405 before any routing.
 */
let api: HttpApi

beforeAll(async () => {
  api = await memoryApi()
})
afterAll(() => api?.dispose())

const withHost = (host: string, url = "/v1/keys") => api.handle(request("GET", url, { headers: { host } }))

describe("the Host header", () => {
  it("a host name, an IPv4 or bracketed IPv6 address, each with an optional port, is taken", async () => {
    for (const host of ["api.example.com", "API.Example.COM:8443", "localhost", "127.0.0.1:3000", "[::1]", "[2001:db8::1]:443", "under_score.local"]) {
      expect(isHostHeader(host), host).toBe(true)
      expect([host, (await withHost(host)).status]).toEqual([host, 401])
    }
  })

  it("one that could carry a path, user information or another host is a 400", async () => {
    const refused = [
      "evil.example/v1/keys",
      "user@api.example.com",
      "api.example.com:80@evil.example",
      "api.example.com:port",
      "api.example.com:123456",
      "api.example.com?x",
      "api.example.com#x",
      "api.example.com\\x",
      "api example.com",
      "[::1",
      "::1",
      ""
    ]
    for (const host of refused) {
      expect(isHostHeader(host), host).toBe(false)
      const r = await withHost(host)
      expect([host, r.status]).toEqual([host, 400])
      expect(body(r)).toMatchObject({ name: "BadRequest", message: "Invalid Host header", code: 400 })
    }
    // Refused whatever the path, before the path is looked at.
    expect((await withHost("evil.example/x", "/nothing")).status).toBe(400)
  })

  it("plain HTTP without any Host cannot be redirected: a 400, not a redirect to nowhere", async () => {
    const strict = await makeApi({ store: SqliteStore.layer({ filename: ":memory:" }), hashCost: 1024, logLevel: "None", dispatcher: false })
    try {
      const r = await strict.handle(request("GET", "/v1/keys"))
      expect(r.status).toBe(400)
      expect(body(r).message).toBe("Invalid Host header")
      const bad = await strict.handle(request("GET", "/v1/keys", { headers: { host: "evil.example/x" } }))
      expect([bad.status, bad.headers.location]).toEqual([400, undefined])
    } finally {
      await strict.dispose()
    }
  })
})

describe("the request target", () => {
  it("dot segments, encoded or not, and backslashes are a 404 of the path as sent", async () => {
    const rewritten = [
      "/v1/keys/../organizations",
      "/v1/./keys",
      "/v1/keys/%2e%2e/organizations",
      "/v1/keys/.%2E",
      "/v1/%2E/keys",
      "/v1\\keys",
      "/docs/..",
      "/openapi.json/."
    ]
    for (const path of rewritten) {
      expect(isRewrittenPath(path), path).toBe(true)
      const r = await api.handle(request("GET", `${path}?$limit=1`, { mountPath: "/api" }))
      expect([path, r.status]).toEqual([path, 404])
      expect(body(r).message).toBe(`Page not found: GET /api${path}`)
    }
    for (const path of ["/v1/keys/a.b", "/v1/keys/...", "/v1/keys/%2e%2e%2e", "/v1/keys/.hidden"]) {
      expect(isRewrittenPath(path), path).toBe(false)
    }
  })

  it("CONNECT, TRACE and TRACK are a 405 listing every method the API takes, on any path", async () => {
    expect([...unsupportedMethods].sort()).toEqual(["CONNECT", "TRACE", "TRACK"])
    for (const method of ["TRACE", "trace", "CONNECT", "TRACK"]) {
      for (const url of ["/v1/keys", "/nothing"]) {
        const r = await api.handle(request(method, url))
        expect([method, url, r.status]).toEqual([method, url, 405])
        expect(r.headers.allow).toBe("GET, HEAD, POST, PUT, PATCH, DELETE")
        expect(body(r)).toMatchObject({ name: "MethodNotAllowed", message: `Method ${method} is not supported` })
      }
    }
    // The same answer the adapters give themselves for a method they cannot hand on.
    const own = unsupportedMethodResponse("TRACE")
    const served = await api.handle(request("TRACE", "/v1/keys"))
    expect([served.status, served.headers.allow, body(served)]).toEqual([own.status, own.headers.allow, body(own)])
  })
})
