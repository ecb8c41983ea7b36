import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type HttpApi, servedAt } from "../src/index.js"
import { body, memoryApi, request } from "./requests.js"

/**
 * The OpenAPI document as served at `/openapi.json`: where it says the API is, and what every
 * operation in it must carry for generated clients (an id of its own, its security).
 */
let api: HttpApi
let document: Record<string, any>

beforeAll(async () => {
  api = await memoryApi()
  document = body(await api.handle(request("GET", "/openapi.json")))
})
afterAll(() => api?.dispose())

const httpMethods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

/** Every operation of the document with its path and method. */
const operations = () =>
  Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item).filter(([method]) => httpMethods.includes(method)).map(([method, operation]) => ({ path, method, operation }))
  )

/** Every `$ref` anywhere in a value. */
const refsIn = (value: unknown): Array<string> => {
  if (Array.isArray(value)) return value.flatMap(refsIn)
  if (typeof value !== "object" || value === null) return []
  return Object.entries(value).flatMap(([k, v]) => (k === "$ref" && typeof v === "string" ? [v] : refsIn(v)))
}

describe("the served OpenAPI document", () => {
  it("is OpenAPI 3.1 with paths under /v1", () => {
    expect(document.openapi).toBe("3.1.0")
    expect(typeof document.info.title).toBe("string")
    expect(operations().length).toBeGreaterThan(20)
    for (const path of Object.keys(document.paths)) expect(path, path).toMatch(/^\/v1\//)
  })

  it("names the server where the host mounted the API, with one leading slash", async () => {
    expect(document.servers).toEqual([{ url: "/", description: "This server" }])
    const mounted = body(await api.handle(request("GET", "/openapi.json", { mountPath: "/consent-api" })))
    expect(mounted.servers).toEqual([{ url: "/consent-api", description: "This server" }])
    // `//host` would be another host, to which a client would send its token.
    expect(servedAt(api.openapi, "//evil.example/").servers).toEqual([{ url: "/evil.example", description: "This server" }])
    // Only the servers differ from the handler's own document, which has none.
    expect(api.openapi.servers).toBeUndefined()
    const { servers: _servers, ...rest } = mounted
    expect(rest).toEqual(api.openapi)
    expect(Object.keys(mounted).slice(0, 3)).toEqual(["openapi", "info", "servers"])
  })

  it("every operation has an operationId of its own", () => {
    const ids = operations().map(({ method, operation, path }) => {
      expect(typeof operation.operationId, `${method} ${path}`).toBe("string")
      expect(operation.operationId, `${method} ${path}`).not.toBe("")
      return operation.operationId as string
    })
    const repeated = ids.filter((id, i) => ids.indexOf(id) !== i)
    expect(repeated).toEqual([])
  })

  it("every operation states its security: the bearer, an end user's credential where the declaration opens it, or none for a credential exchange", () => {
    const schemes = document.components.securitySchemes
    expect(Object.keys(schemes).sort()).toEqual(["bearer", "consentToken", "publicApiKey", "publicApiKeyQuery"])
    expect(schemes.publicApiKey).toMatchObject({ type: "apiKey", in: "header", name: "x-public-api-key" })
    expect(schemes.publicApiKeyQuery).toMatchObject({ type: "apiKey", in: "query", name: "public_api_key" })
    expect(schemes.consentToken).toMatchObject({ type: "http", scheme: "bearer" })
    const open: Array<string> = []
    const endUsers: Record<string, unknown> = {}
    for (const { method, operation, path } of operations()) {
      expect(Array.isArray(operation.security), `${method} ${path}`).toBe(true)
      if (operation.security.length === 0) open.push(`${method} ${path}`)
      else {
        expect(operation.security[0], `${method} ${path}`).toEqual({ bearer: [] })
        if (operation.security.length > 1) endUsers[`${method} ${path}`] = operation.security.slice(1)
      }
    }
    expect(open).toContain("post /v1/sessions")
    expect(endUsers).toEqual({
      "post /v1/consents/events": [{ publicApiKey: [] }, { publicApiKeyQuery: [] }, { consentToken: [] }],
      "get /v1/consents/events": [{ consentToken: [] }],
      "get /v1/consents/users/{id}": [{ consentToken: [] }],
      "get /v1/consents/users/{id}/receipt": [{ consentToken: [] }]
    })
  })

  it("every operation documents a success answer and the contract's error body", () => {
    for (const { method, operation, path } of operations()) {
      const codes = Object.keys(operation.responses ?? {})
      expect(codes.some((c) => /^2\d\d$/.test(c)), `${method} ${path}: ${codes.join(",")}`).toBe(true)
      expect(codes.some((c) => /^[45]\d\d$/.test(c)), `${method} ${path}: ${codes.join(",")}`).toBe(true)
    }
  })

  it("every $ref points into the document", () => {
    const missing = [...new Set(refsIn(document))].filter((ref) => {
      if (!ref.startsWith("#/")) return true
      const target = ref.slice(2).split("/").reduce<any>((node, key) => node?.[key.replace(/~1/g, "/").replace(/~0/g, "~")], document)
      return target === undefined
    })
    expect(missing).toEqual([])
  })
})
