import {
  Conflict,
  type DomainError,
  Forbidden,
  InvalidInput,
  NotAuthenticated,
  NotFound,
  QuotaExceeded,
  StoreUnavailable,
  TooManyRequests
} from "@cmp/core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type ApiResponse,
  errorBody,
  errorResponse,
  type ErrorStatus,
  fromDomainError,
  type HttpApi,
  internalErrorResponse,
  statusOf,
  unavailableResponse
} from "../src/index.js"
import { body, type Caller, memoryApi, request, tenants } from "./requests.js"

/**
 * The contract's error answers: each domain error as its status and Feathers-style body
 * (`{ name, message, code, className, errors }`), both as mapped and as a request gets it.
 */

describe("the mapping of domain errors", () => {
  const cases: ReadonlyArray<readonly [DomainError, number, string, string, Record<string, string>]> = [
    [new InvalidInput({ message: "Invalid body", errors: { name: "is missing" } }), 400, "BadRequest", "bad-request", { name: "is missing" }],
    [new InvalidInput({ message: "Invalid body" }), 400, "BadRequest", "bad-request", {}],
    [new NotAuthenticated({ message: "No token" }), 401, "NotAuthenticated", "not-authenticated", {}],
    [new Forbidden({ message: "Not yours" }), 403, "Forbidden", "forbidden", {}],
    [new QuotaExceeded({ message: "Quota reached", quota: "secrets", limit: 20 }), 403, "Forbidden", "forbidden", { secrets: "limit of 20 reached" }],
    [new NotFound({ message: "No key" }), 404, "NotFound", "not-found", {}],
    [new Conflict({ message: "Taken", errors: { name: "already exists" } }), 409, "Conflict", "conflict", { name: "already exists" }],
    [new TooManyRequests({ message: "Slow down", retryAfterSeconds: 7 }), 429, "TooManyRequests", "too-many-requests", {}]
  ]

  it("every domain error has its status, name, class name, message and field errors", () => {
    for (const [error, code, name, className, errors] of cases) {
      expect([error._tag, statusOf(error)]).toEqual([error._tag, code])
      expect(fromDomainError(error)).toEqual({ name, message: error.message, code, className, errors })
    }
    // Every tag of the union is covered above.
    expect(new Set(cases.map(([e]) => e._tag)).size).toBe(7)
  })

  it("every status the API answers with an error has one body shape", () => {
    const kinds: ReadonlyArray<readonly [ErrorStatus, string, string]> = [
      [400, "BadRequest", "bad-request"],
      [401, "NotAuthenticated", "not-authenticated"],
      [403, "Forbidden", "forbidden"],
      [404, "NotFound", "not-found"],
      [405, "MethodNotAllowed", "method-not-allowed"],
      [408, "RequestTimeout", "request-timeout"],
      [409, "Conflict", "conflict"],
      [413, "PayloadTooLarge", "payload-too-large"],
      [415, "UnsupportedMediaType", "unsupported-media-type"],
      [429, "TooManyRequests", "too-many-requests"],
      [500, "GeneralError", "general-error"],
      [503, "Unavailable", "unavailable"]
    ]
    for (const [code, name, className] of kinds) {
      expect(errorBody(code, "m")).toEqual({ name, message: "m", code, className, errors: {} })
      const r = errorResponse(code, "m", { f: "x" }, { "x-extra": "1" })
      expect([r.status, r.headers["content-type"], r.headers["x-extra"]]).toEqual([code, "application/json; charset=utf-8", "1"])
      expect(JSON.parse(r.body as string)).toEqual({ name, message: "m", code, className, errors: { f: "x" } })
    }
  })

  it("a store that cannot serve is a 503 to retry; a bug is a 500 that says nothing more", () => {
    const unavailable = unavailableResponse(new StoreUnavailable({ message: "the database is read-only", reason: "read-only" }))
    expect([unavailable.status, unavailable.headers["retry-after"]]).toEqual([503, "5"])
    expect(JSON.parse(unavailable.body as string)).toEqual({
      name: "Unavailable",
      message: "Service unavailable: the database is read-only",
      code: 503,
      className: "unavailable",
      errors: {}
    })
    const bug = internalErrorResponse()
    expect(bug.status).toBe(500)
    expect(JSON.parse(bug.body as string)).toEqual({
      name: "GeneralError",
      message: "An internal error occurred",
      code: 500,
      className: "general-error",
      errors: {}
    })
  })
})

describe("domain errors as answers", () => {
  let api: HttpApi
  let operator: Caller
  let a: { id: string; call: Caller }
  let b: { id: string; call: Caller }

  beforeAll(async () => {
    api = await memoryApi()
    const t = await tenants(api)
    operator = t.operator
    a = await t.organization("A")
    b = await t.organization("B")
  })
  afterAll(() => api?.dispose())

  /** The id of an organization's row of quotas. */
  const quotaOf = async (organizationId: string) =>
    body(await operator("GET", `/v1/quotas?organization_id=${organizationId}`)).data[0].id as string

  /** Asserts the answer is the contract's error body with this code and these field errors. */
  const expectAnswer = async (r: Promise<ApiResponse>, code: ErrorStatus, errors: Record<string, string>) => {
    const answer = await r
    const got = body(answer)
    expect(answer.status).toBe(code)
    expect(typeof got.message).toBe("string")
    expect(got).toEqual(errorBody(code, got.message, errors))
    return answer
  }

  it("InvalidInput is a 400 naming every field at fault", async () => {
    await expectAnswer(a.call("POST", "/v1/keys", { organization_id: a.id, name: "k", colour: "red", secret: "s" }), 400, {
      colour: "is not a field of this resource",
      secret: "is output only and cannot be set"
    })
  })

  it("NotAuthenticated is a 401, without a token or with one that is not valid", async () => {
    await expectAnswer(api.handle(request("GET", "/v1/keys")), 401, {})
    await expectAnswer(api.handle(request("GET", "/v1/keys", { headers: { authorization: "Bearer not-a-token" } })), 401, {})
  })

  it("Forbidden is a 403; so is a count quota reached, naming the quota", async () => {
    await expectAnswer(a.call("POST", "/v1/keys", { organization_id: b.id, name: "intruder" }), 403, {})
    expect((await operator("PATCH", `/v1/quotas/${await quotaOf(b.id)}`, { secrets: 0 })).status).toBe(200)
    await expectAnswer(b.call("POST", "/v1/secrets", { organization_id: b.id, name: "s" }), 403, { secrets: "limit of 0 reached" })
  })

  it("NotFound is a 404, the same for another organization's row as for none", async () => {
    const own = body(await b.call("GET", "/v1/keys")).data[0].id as string
    const other = await expectAnswer(a.call("GET", `/v1/keys/${own}`), 404, {})
    const none = await expectAnswer(a.call("GET", "/v1/keys/no-such-key"), 404, {})
    expect(body(other).message.replace(own, "?")).toBe(body(none).message.replace("no-such-key", "?"))
  })

  it("Conflict is a 409 naming the field", async () => {
    expect((await a.call("POST", "/v1/keys", { organization_id: a.id, name: "twin" })).status).toBe(201)
    const r = await a.call("POST", "/v1/keys", { organization_id: a.id, name: "twin" })
    expect(r.status).toBe(409)
    expect(body(r)).toMatchObject({ name: "Conflict", className: "conflict", code: 409 })
    expect(Object.keys(body(r).errors)).toEqual(["name"])
  })

  it("TooManyRequests is a 429 with Retry-After", async () => {
    const c = await tenants(api).then((t) => t.organization("C"))
    expect((await operator("PATCH", `/v1/quotas/${await quotaOf(c.id)}`, { api_requests: 1 })).status).toBe(200)
    expect((await c.call("GET", "/v1/keys")).status).toBe(200)
    const r = await expectAnswer(c.call("GET", "/v1/keys"), 429, {})
    expect(Number(r.headers["retry-after"])).toBeGreaterThan(0)
  })
})
