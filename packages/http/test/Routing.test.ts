import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ApiResponse, HttpApi } from "../src/index.js"
import { body, type Caller, memoryApi, request, tenants, text } from "./requests.js"

/**
 * Which request reaches which operation, seen from outside: every documented operation is
 * routed, a known path answers a method it does not take with 405 and exactly the methods it
 * does take, HEAD goes wherever GET goes, and a path no route has is a 404.
 */
let api: HttpApi
let operator: Caller
let document: Record<string, any>

beforeAll(async () => {
  api = await memoryApi()
  operator = (await tenants(api)).operator
  document = body(await api.handle(request("GET", "/openapi.json")))
})
afterAll(() => api?.dispose())

const documented = ["get", "put", "post", "patch", "delete"]

/** Each documented path with the methods it documents, its `{id}`s filled in. */
const paths = () =>
  Object.entries(document.paths as Record<string, Record<string, unknown>>).map(([template, item]) => ({
    template,
    url: template.replace(/\{[^}]+\}/g, "some-id"),
    methods: documented.filter((m) => m in item).map((m) => m.toUpperCase())
  }))

/** Not "no such route": a 404 of a route is the contract's `NotFound` of a record, never "Page not found". */
const routed = (r: ApiResponse) => r.status !== 405 && !(r.status === 404 && /Page not found/.test(body(r).message))

describe("routes", () => {
  it("every documented operation is routed, with or without a token", async () => {
    for (const { methods, template, url } of paths()) {
      for (const method of methods) {
        const bare = await api.handle(request(method, url))
        expect(routed(bare), `${method} ${template}: ${bare.status} ${text(bare)}`).toBe(true)
        if (method === "GET") {
          const r = await operator(method, url)
          expect(routed(r), `${method} ${template} as the operator: ${r.status} ${text(r)}`).toBe(true)
        }
      }
    }
  })

  it("an operation that documents the bearer scheme asks for a token (401) before anything else", async () => {
    for (const { template, url } of paths()) {
      for (const [method, operation] of Object.entries(document.paths[template] as Record<string, any>)) {
        if (!documented.includes(method) || operation.security.length === 0) continue
        const r = await api.handle(request(method.toUpperCase(), url, { headers: { "content-type": "application/json" }, body: "{}" }))
        expect([`${method} ${template}`, r.status]).toEqual([`${method} ${template}`, 401])
        expect(body(r)).toMatchObject({ name: "NotAuthenticated", className: "not-authenticated" })
      }
    }
  })

  it("a method a path does not take is a 405 whose Allow lists what it documents, HEAD with GET", async () => {
    let probed = 0
    for (const { methods, template, url } of paths()) {
      const absent = documented.map((m) => m.toUpperCase()).find((m) => !methods.includes(m))
      if (absent === undefined) continue
      probed++
      const r = await operator(absent, url)
      expect([`${absent} ${template}`, r.status]).toEqual([`${absent} ${template}`, 405])
      expect(body(r)).toMatchObject({ name: "MethodNotAllowed", code: 405, className: "method-not-allowed" })
      const allow = (r.headers.allow ?? "").split(", ").sort()
      const expected = [...methods, ...(methods.includes("GET") ? ["HEAD"] : [])].sort()
      expect([template, allow]).toEqual([template, expected])
    }
    expect(probed).toBeGreaterThan(10)
  })

  it("HEAD is answered as GET", async () => {
    for (const url of ["/v1/keys", "/v1/organizations?$limit=1", "/v1/keys/no-such-key", "/openapi.json"]) {
      const [get, head] = [await operator("GET", url), await operator("HEAD", url)]
      expect([url, head.status, head.headers["content-type"]]).toEqual([url, get.status, get.headers["content-type"]])
    }
  })

  it("paths are matched without regard to case or a trailing slash; ids are taken as sent", async () => {
    const key = body(await operator("POST", "/v1/keys", { organization_id: "operator", name: "Mixed" }))
    for (const url of ["/v1/keys", "/V1/KEYS", "/v1/keys/", "/v1//keys"]) {
      expect([url, (await operator("GET", url)).status]).toEqual([url, 200])
    }
    expect(body(await operator("GET", `/v1/keys/${key.id}/`)).name).toBe("Mixed")
    expect((await operator("GET", `/v1/keys/${key.id.toUpperCase()}`)).status).toBe(key.id === key.id.toUpperCase() ? 200 : 404)
    // An encoded id is decoded once; an undecodable one is refused, not guessed.
    expect(body(await operator("GET", `/v1/keys/${encodeURIComponent(key.id)}`)).name).toBe("Mixed")
    const broken = await operator("GET", "/v1/keys/%E0%A4%A")
    expect(broken.status).toBe(400)
  })

  it("a path no route has is a 404 naming it, under the mount path", async () => {
    for (const url of ["/v1/nothing", "/v1/keys/a/b", "/v1", "/v2/keys", "/other"]) {
      const r = await operator("GET", url)
      expect([url, r.status]).toEqual([url, 404])
      expect(body(r)).toMatchObject({ name: "NotFound", className: "not-found" })
    }
    const mounted = await api.handle(request("GET", "/v1/nothing", { mountPath: "/consent-api" }))
    expect(body(mounted).message).toBe("Page not found: GET /consent-api/v1/nothing")
  })

  it("the document itself takes GET and HEAD only", async () => {
    const r = await api.handle(request("POST", "/openapi.json"))
    expect(r.status).toBe(405)
    expect(r.headers.allow).toBe("GET, HEAD")
  })
})
