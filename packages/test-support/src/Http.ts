import { expect } from "vitest"

/**
 * Callers of a running API for tests: requests by fetch, the contract's error body asserted,
 * the operator's session and organizations with a logged-in client key. They speak HTTP only,
 * so any server of the API can be tested with them.
 */

/** The moment every test server starts at (server time, moved by the ManualClock). */
export const START = Date.parse("2026-11-22T10:00:00.000Z")

export const ADMIN = { key: "admin", secret: "admin-secret-0123456789" } as const

/** A signing key the auth tests can forge tokens with. */
export const JWT_SECRET = "test-jwt-secret-0123456789-abcdefghijklmnop"

export interface Reply {
  readonly status: number
  readonly headers: Headers
  /** Parsed JSON when the response is JSON, the text otherwise. */
  readonly body: any
  readonly text: string
}

export interface CallOptions {
  readonly token?: string | undefined
  readonly body?: unknown
  /** Sent as is (no JSON encoding); the content-type defaults to application/json. */
  readonly rawBody?: string | undefined
  readonly headers?: Record<string, string> | undefined
  readonly redirect?: RequestRedirect | undefined
}

export const call = async (base: string, method: string, path: string, options: CallOptions = {}): Promise<Reply> => {
  const headers: Record<string, string> = {}
  let body: string | undefined
  if (options.rawBody !== undefined) {
    body = options.rawBody
    headers["content-type"] = "application/json"
  } else if (options.body !== undefined) {
    body = JSON.stringify(options.body)
    headers["content-type"] = "application/json"
  }
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
  Object.assign(headers, options.headers ?? {})
  const res = await fetch(base + path, { method, headers, body, redirect: options.redirect ?? "manual" })
  const text = await res.text()
  let parsed: unknown = text
  if ((res.headers.get("content-type") ?? "").includes("json") && text.length > 0) parsed = JSON.parse(text)
  return { status: res.status, headers: res.headers, body: parsed, text }
}

/** Bound helpers for one server. */
export const client = (base: string) => {
  const c = (method: string, path: string, options?: CallOptions) => call(base, method, path, options)
  const login = async (key: string, secret: string): Promise<string> => {
    const r = await c("POST", "/v1/sessions", { body: { type: "api-key", key, secret } })
    expect(r.status, JSON.stringify(r.body)).toBe(201)
    return r.body.access_token as string
  }
  return { call: c, login }
}

/** Asserts the contract's error body. */
export const expectError = (r: Reply, code: number, name: string, className: string) => {
  expect(r.status, r.text).toBe(code)
  expect(r.body).toMatchObject({ name, code, className })
  expect(typeof r.body.message).toBe("string")
  expect(typeof r.body.errors).toBe("object")
  expect(r.body.errors).not.toBeNull()
  expect(Array.isArray(r.body.errors)).toBe(false)
  expect(r.headers.get("x-request-id")).toBeTruthy()
  // Never a stack trace or SQL in an error.
  expect(r.text).not.toMatch(/\bat .+\(.*:\d+:\d+\)|SQLITE_|SqlError|better-sqlite3/i)
}

export const expect400 = (r: Reply) => expectError(r, 400, "BadRequest", "bad-request")
export const expect401 = (r: Reply) => expectError(r, 401, "NotAuthenticated", "not-authenticated")
export const expect403 = (r: Reply) => expectError(r, 403, "Forbidden", "forbidden")
export const expect404 = (r: Reply) => expectError(r, 404, "NotFound", "not-found")
export const expect405 = (r: Reply) => expectError(r, 405, "MethodNotAllowed", "method-not-allowed")
export const expect409 = (r: Reply) => expectError(r, 409, "Conflict", "conflict")

let counter = 0
/** A name unique within the test run. */
export const unique = (prefix: string) => `${prefix}-${++counter}-${Math.random().toString(36).slice(2, 8)}`

export interface Tenant {
  readonly org: any
  readonly key: any
  readonly secret: string
  readonly token: string
}

/** The operator session plus helpers creating organizations with a logged-in client key. */
export const operatorOf = async (base: string) => {
  const { call: c, login } = client(base)
  const token = await login(ADMIN.key, ADMIN.secret)
  const op = (method: string, path: string, options: CallOptions = {}) => c(method, path, { token, ...options })
  const createOrg = async (body: Record<string, unknown> = {}) => {
    const r = await op("POST", "/v1/organizations", { body: { name: unique("org"), ...body } })
    expect(r.status, r.text).toBe(201)
    return r.body
  }
  const createKey = async (organizationId: string, body: Record<string, unknown> = {}) => {
    const r = await op("POST", "/v1/keys", { body: { organization_id: organizationId, name: unique("key"), ...body } })
    expect(r.status, r.text).toBe(201)
    return r.body
  }
  /** A new organization, a client key for it, and that key's access token. */
  const tenant = async (orgBody: Record<string, unknown> = {}): Promise<Tenant> => {
    const org = await createOrg(orgBody)
    const key = await createKey(org.id)
    const secret = key.secret as string
    const tok = await login(key.id, secret)
    return { org, key, secret, token: tok }
  }
  const quotaOf = async (organizationId: string) => {
    const r = await op("GET", `/v1/quotas?organization_id=${encodeURIComponent(organizationId)}`)
    expect(r.status, r.text).toBe(200)
    expect(r.body.data).toHaveLength(1)
    return r.body.data[0]
  }
  const featuresOf = async (organizationId: string) => {
    const r = await op("GET", `/v1/premium-features?organization_id=${encodeURIComponent(organizationId)}`)
    expect(r.status, r.text).toBe(200)
    expect(r.body.data).toHaveLength(1)
    return r.body.data[0]
  }
  return { token, call: op, login, createOrg, createKey, tenant, quotaOf, featuresOf }
}

/** A token-bound caller. */
export const as = (base: string, token: string) => (method: string, path: string, options: CallOptions = {}) =>
  call(base, method, path, { token, ...options })
