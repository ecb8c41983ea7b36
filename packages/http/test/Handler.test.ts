import { SqliteStore } from "@cmp/store-sqlite"
import { ADMIN } from "@cmp/test-support/http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ApiRequest, ApiResponse, HttpApi } from "../src/index.js"
import { docsFiles, makeApi } from "./api.js"

/**
 * The HTTP layer without any framework or socket: plain requests in, plain responses out, as a
 * host on Fastify, Hono or a web-standard `fetch` handler would call it.
 */
let api: HttpApi

beforeAll(async () => {
  api = await makeApi({
    store: SqliteStore.layer({ filename: ":memory:" }),
    hashCost: 1024,
    admin: ADMIN,
    logLevel: "None",
    allowHttp: true
  })
})
afterAll(() => api?.dispose())

const request = (method: string, url: string, extra: Partial<ApiRequest> = {}): ApiRequest => ({
  method,
  url,
  headers: {},
  encrypted: false,
  remoteAddress: "127.0.0.1",
  ...extra
})

const text = (r: ApiResponse) => (typeof r.body === "string" ? r.body : Buffer.from(r.body).toString("utf8"))
const body = (r: ApiResponse) => JSON.parse(text(r))

async function* chunks(...parts: Array<string>): AsyncIterable<Uint8Array> {
  for (const p of parts) yield new TextEncoder().encode(p)
}

const session = (b: ApiRequest["body"]) =>
  api.handle(request("POST", "/v1/sessions", { headers: { "content-type": "application/json" }, body: b }))

describe("plain requests", () => {
  it("a session from a string, from bytes and from a stream of chunks; its token opens the API", async () => {
    const credentials = JSON.stringify({ type: "api-key", ...ADMIN })
    for (const b of [credentials, new TextEncoder().encode(credentials), chunks(credentials.slice(0, 7), credentials.slice(7))]) {
      const r = await session(b)
      expect(r.status, text(r)).toBe(201)
      expect(r.headers["content-type"]).toMatch(/^application\/json/)
      expect(typeof body(r).access_token).toBe("string")
    }
    const token = body(await session(credentials)).access_token as string
    const orgs = await api.handle(request("GET", "/v1/organizations?$limit=1", { headers: { authorization: `Bearer ${token}` } }))
    expect(orgs.status).toBe(200)
    expect(body(orgs)).toMatchObject({ limit: 1, skip: 0 })
    expect((await api.handle(request("GET", "/v1/organizations"))).status).toBe(401)
  })

  it("every answer carries a request id and nosniff; an error has the contract's body", async () => {
    const r = await api.handle(request("GET", "/v1/nothing-here", { headers: { "x-request-id": "trace-1" } }))
    expect(r.status).toBe(404)
    expect(r.headers["x-request-id"]).toBe("trace-1")
    expect(r.headers["x-content-type-options"]).toBe("nosniff")
    expect(body(r)).toMatchObject({ name: "NotFound", code: 404, className: "not-found", errors: {} })
    const other = await api.handle(request("GET", "/v1/keys", { headers: { "x-request-id": "bad id <x>" } }))
    expect(other.headers["x-request-id"]).toMatch(/^[\w-]+$/)
  })

  it("an unsupported method of a known service is 405 with Allow", async () => {
    const r = await api.handle(request("DELETE", "/v1/keys"))
    expect(r.status).toBe(405)
    expect(r.headers.allow).toBe("GET, HEAD, POST")
    const action = await api.handle(request("GET", "/v1/sessions"))
    expect(action.status).toBe(405)
    expect(action.headers.allow).toBe("POST")
  })

  it("bodies: over the limit is 413 (declared or streamed), another media type 415, broken JSON 400", async () => {
    const big = "x".repeat(1024 * 1024 + 1)
    const declared = await api.handle(request("POST", "/v1/sessions", {
      headers: { "content-type": "application/json", "content-length": String(big.length) },
      body: chunks("{")
    }))
    expect(declared.status).toBe(413)
    const streamed = await session(chunks("{\"type\":\"", big, "\"}"))
    expect(streamed.status).toBe(413)
    const form = await api.handle(request("POST", "/v1/sessions", {
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "type=api-key"
    }))
    expect(form.status).toBe(415)
    expect(body(form)).toMatchObject({ name: "UnsupportedMediaType", className: "unsupported-media-type" })
    const broken = await session("{\"type\":")
    expect(broken.status).toBe(400)
    expect(body(broken).errors).toEqual({ body: "is not valid JSON" })
    expect((await session("\"a string\"")).status).toBe(400)
  })

  it("plain HTTP is redirected to https under the mount path unless allowed", async () => {
    const strict = await makeApi({ store: SqliteStore.layer({ filename: ":memory:" }), hashCost: 1024, logLevel: "None" })
    try {
      const r = await strict.handle(request("GET", "/v1/keys?$limit=1", { mountPath: "/consent", headers: { host: "api.example.com" } }))
      expect(r.status).toBe(301)
      expect(r.headers.location).toBe("https://api.example.com/consent/v1/keys?$limit=1")
      // Said in the contract's error shape too, for a client that does not follow redirects.
      expect(r.headers["content-type"]).toMatch(/^application\/json/)
      expect(body(r)).toEqual({
        name: "MovedPermanently",
        message: expect.stringContaining("https://api.example.com/consent/v1/keys?$limit=1"),
        code: 301,
        className: "moved-permanently",
        errors: {}
      })
      expect(body(r).message).toContain("ALLOW_HTTP=true")
      const secure = await strict.handle(request("GET", "/v1/keys", { encrypted: true }))
      expect(secure.status).toBe(401)
    } finally {
      await strict.dispose()
    }
  })

  it("owns only its paths, so a host keeps the rest", () => {
    for (const p of ["/v1", "/v1/keys", "/V1/keys?x=1", "/openapi.json", "/docs", "/docs/init.js"]) expect(api.owns(p), p).toBe(true)
    for (const p of ["/", "/health", "/v10/keys", "/docsx"]) expect(api.owns(p), p).toBe(false)
  })

  it("serves its OpenAPI document and the offline docs page", async () => {
    const doc = await api.handle(request("GET", "/openapi.json"))
    expect(body(doc).openapi).toBe("3.1.0")
    const page = await api.handle(request("GET", "/docs/"))
    expect(page.headers["content-type"]).toMatch(/text\/html/)
    const bundle = await api.handle(request("GET", "/docs/swagger-ui-bundle.js"))
    expect(bundle.status).toBe(200)
    expect(bundle.headers["content-type"]).toMatch(/javascript/)
    expect((await api.handle(request("GET", "/docs/..%2Fpackage.json"))).status).toBe(404)
    expect((await api.handle(request("GET", "/docs/package.json/../../x"))).status).toBe(404)
  })

  it("serves the docs page's files the host hands in, and asks for no other", async () => {
    const asked: Array<string> = []
    const host = await makeApi({
      store: SqliteStore.layer({ filename: ":memory:" }),
      hashCost: 1024,
      logLevel: "None",
      allowHttp: true,
      dispatcher: false,
      docsAssets: (name) => {
        asked.push(name)
        return docsFiles[name]
      }
    })
    try {
      const css = await host.handle(request("GET", "/docs/swagger-ui.css"))
      expect(css.status).toBe(200)
      expect(css.headers["content-type"]).toBe("text/css; charset=utf-8")
      expect(css.body).toEqual(docsFiles["swagger-ui.css"])
      for (const name of ["package.json", "index.html", "oauth2-redirect.html", "swagger-ui-bundle.js.map"]) {
        expect((await host.handle(request("GET", `/docs/${name}`))).status, name).toBe(404)
      }
      expect(asked.every((name) => name === "swagger-ui.css")).toBe(true)
    } finally {
      await host.dispose()
    }
  })

  it("without the docs page's files, serves the page and answers 404 for them", async () => {
    const bare = await makeApi({
      store: SqliteStore.layer({ filename: ":memory:" }),
      hashCost: 1024,
      logLevel: "None",
      allowHttp: true,
      dispatcher: false,
      docsAssets: undefined
    })
    try {
      expect((await bare.handle(request("GET", "/docs/"))).status).toBe(200)
      expect((await bare.handle(request("GET", "/docs/swagger-ui-bundle.js"))).status).toBe(404)
    } finally {
      await bare.dispose()
    }
  })
})
