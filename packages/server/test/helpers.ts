import type { ServerOptions } from "@cmp/http-express"
import type { DispatcherConfig } from "@cmp/webhooks"
import {
  as,
  operatorOf as baseOperatorOf,
  ManualClock,
  start as startBase,
  type Tenant as BaseTenant,
  type TestServer
} from "./api/helpers.js"
import { type FixtureOptions, type Overrides, useServer as useServerOf } from "./api/fixture.js"
import * as crypto from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { OAuth2Server } from "oauth2-mock-server"
import { Webhook } from "standardwebhooks"
import { afterAll, expect, vi } from "vitest"

/**
 * Helpers of the end-to-end webhook tests: in-process servers over the store under test (SQLite
 * `:memory:` by default, PostgreSQL with CMP_TEST_STORE=postgres), HTTP callers, a programmable
 * receiver, and a real OAuth2 authorization server. Servers, callers and tenants come from
 * `./api/helpers.ts`, so both suites start servers one way.
 */

export {
  ADMIN,
  as,
  call,
  type CallOptions,
  expect403,
  expect404,
  expectError,
  type Reply,
  storeKind,
  testStore,
  type TestServer,
  unique
} from "./api/helpers.js"

/** The dispatcher every in-process test server runs: 50 ms polls, 1 s timeout, five 300 s retries. */
export const DISPATCHER: DispatcherConfig = {
  allowHosts: ["127.0.0.1"],
  retrySchedule: [300, 300, 300, 300, 300],
  timeoutMs: 1000,
  pollIntervalMs: 50
}

/**
 * The http-express test server with its webhook dispatcher. Server time is a ManualClock
 * starting at the real now (so Standard Webhooks timestamps verify as they are);
 * `clock.advance` makes retries due without waiting.
 */
export const start = (overrides: Partial<ServerOptions> = {}): Promise<TestServer> =>
  startBase({
    clock: new ManualClock(Date.now()),
    webhookAllowHosts: ["127.0.0.1"],
    dispatcher: DISPATCHER,
    // The clock moves by days in some suites: nothing is purged unless a suite asks (the retention suite does).
    retention: false,
    ...overrides
  })

export type Caller = ReturnType<typeof as>

export interface Tenant extends BaseTenant {
  readonly call: Caller
}

/** The operator session, and tenants whose premium features (`consents_api`, `webhooks`) are on. */
export const operatorOf = async (base: string) => {
  const op = await baseOperatorOf(base)
  const tenant = async (features: Record<string, boolean> = { consents_api: true, webhooks: true }): Promise<Tenant> => {
    const t = await op.tenant()
    const flags = await op.featuresOf(t.org.id)
    const patched = await op.call("PATCH", `/v1/premium-features/${flags.id}`, { body: features })
    expect(patched.status, patched.text).toBe(200)
    return { ...t, call: as(base, t.token) }
  }
  return { ...op, tenant }
}

/**
 * `useServer` of `./api/fixture.ts` with this file's server (a webhook dispatcher, real-time
 * clock) and operator (tenants with `consents_api` and `webhooks` on); a minute to start.
 */
export const useServer = (overrides: Overrides = {}, options: Omit<FixtureOptions<Operator>, "start" | "operatorOf"> = {}) =>
  useServerOf(overrides, { start, operatorOf, timeout: 60_000, ...options })

type Operator = Awaited<ReturnType<typeof operatorOf>>

// ---------------------------------------------------------------- consent and webhook shortcuts

export const purposes = (...list: Array<[string, boolean]>) => list.map(([id, enabled]) => ({ id, enabled }))

/** Creates a consent event and answers the created event (201 asserted). */
export const createEvent = async (t: Tenant, ouid: string, p: Array<{ id: string; enabled: boolean }>, extra: Record<string, unknown> = {}) => {
  const r = await t.call("POST", "/v1/consents/events", {
    body: { organization_id: t.org.id, user: { organization_user_id: ouid }, consents: { purposes: p }, ...extra }
  })
  expect(r.status, r.text).toBe(201)
  return r.body
}

/** Creates a webhook and answers it, with the signing secret shown once. */
export const createHook = async (t: Tenant, url: string, body: Record<string, unknown> = {}) => {
  const r = await t.call("POST", "/v1/webhooks", { body: { organization_id: t.org.id, url, ...body } })
  expect(r.status, r.text).toBe(201)
  expect(r.body.signing_secret).toMatch(/^whsec_/)
  return r.body
}

/** The delivery log of one webhook, oldest first. */
export const deliveriesOf = async (t: Tenant, webhookId: string): Promise<Array<any>> => {
  const r = await t.call("GET", `/v1/webhooks/deliveries?webhook_id=${encodeURIComponent(webhookId)}&$sort[id]=1&$limit=1000`)
  expect(r.status, r.text).toBe(200)
  return r.body.data
}

/** One delivery with its attempts. */
export const deliveryOf = async (t: Tenant, id: string): Promise<any> => {
  const r = await t.call("GET", `/v1/webhooks/deliveries/${encodeURIComponent(id)}`)
  expect(r.status, r.text).toBe(200)
  return r.body
}

/** Polls `probe` in real time until it answers something truthy; fails the test after `timeoutMs`. */
export const eventually = async <A>(
  probe: () => Promise<A | undefined | null | false> | A | undefined | null | false,
  what: string,
  timeoutMs = 5000,
  intervalMs = 20
): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(intervalMs)
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Waits until every delivery of the webhook satisfies `done` (and there are `count` of them). */
export const settled = (t: Tenant, webhookId: string, count: number, done: (d: any) => boolean = (d) => d.status === "delivered", timeoutMs = 5000) =>
  eventually(async () => {
    const list = await deliveriesOf(t, webhookId)
    return list.length === count && list.every(done) ? list : undefined
  }, `${count} deliveries of ${webhookId} to settle`, timeoutMs, 25)

// ---------------------------------------------------------------- the receiver

/** A request as the receiver saw it. */
export interface Received {
  readonly method: string
  readonly url: string
  readonly headers: http.IncomingHttpHeaders
  /** The body exactly as received. */
  readonly body: string
  /** Real time of arrival (ms). */
  readonly at: number
}

/** How the receiver answers one request: a status (empty body), "hang" (never answers), or a handler. */
export type Answer = number | "hang" | ((req: Received, res: http.ServerResponse) => void)

export interface Receiver {
  readonly url: string
  readonly port: number
  readonly requests: Array<Received>
  /** Answers for the next requests, in order; then `fallback`. */
  readonly script: Array<Answer>
  fallback: Answer
  /** Parsed bodies of the requests so far. */
  readonly bodies: () => Array<any>
  /** Waits until `n` requests arrived (real time). */
  readonly waitFor: (n: number, timeoutMs?: number) => Promise<Array<Received>>
  readonly close: () => Promise<void>
}

/**
 * Keeps receivers to close once the file's tests are done: `const track = trackedReceivers()` at
 * a file's top level, then `await track(receiver())`.
 */
export const trackedReceivers = () => {
  const receivers: Array<Receiver> = []
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.close()))
  })
  return async (r: Promise<Receiver>) => {
    const got = await r
    receivers.push(got)
    return got
  }
}

/** A real HTTP server on 127.0.0.1 (port 0) that records every request and answers as programmed. */
export const receiver = async (fallback: Answer = 204): Promise<Receiver> => {
  const requests: Array<Received> = []
  const script: Array<Answer> = []
  const server = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const received: Received = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: Date.now()
      }
      requests.push(received)
      const answer = script.length > 0 ? script.shift()! : r.fallback
      if (answer === "hang") return
      if (typeof answer === "number") {
        res.statusCode = answer
        res.end()
        return
      }
      answer(received, res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const port = (server.address() as AddressInfo).port
  const r: Receiver = {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    requests,
    script,
    fallback,
    bodies: () => requests.map((q) => JSON.parse(q.body)),
    waitFor: (n, timeoutMs = 5000) =>
      eventually(() => (requests.length >= n ? requests.slice() : undefined), `${n} requests at ${port}`, timeoutMs, 5),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
  return r
}

/** A port nothing listens on (bound once, then released). */
export const closedPort = () =>
  new Promise<number>((resolve) => {
    const server = http.createServer()
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as AddressInfo).port
      server.close(() => resolve(port))
    })
  })

/** The three Standard Webhooks headers of a received request. */
export const signatureHeaders = (req: Received) => ({
  "webhook-id": String(req.headers["webhook-id"]),
  "webhook-timestamp": String(req.headers["webhook-timestamp"]),
  "webhook-signature": String(req.headers["webhook-signature"])
})

/**
 * Verifies a request with the standardwebhooks library "at" the request's own timestamp: its
 * 5-minute tolerance is measured against `Date.now()`, and deliveries made after the test moved
 * the server's clock carry moved timestamps. Throws when the signature does not verify.
 */
export const verifyAtItsTime = (secret: string, req: Received): unknown => {
  const spy = vi.spyOn(Date, "now").mockReturnValue(Number(req.headers["webhook-timestamp"]) * 1000)
  try {
    return new Webhook(secret).verify(req.body, signatureHeaders(req))
  } finally {
    spy.mockRestore()
  }
}

// ---------------------------------------------------------------- flatten, written independently

/**
 * The flat body api.md describes, computed here without the product's code: `type` and
 * `regulation` as they are; `parameters.entity` and `parameters.new_entity` under
 * `parameters__entity__`; arrays of objects with an `id` keyed by it, other arrays by index;
 * empty objects and arrays contribute nothing; `parameters.expired_at` (of
 * `user.consent_expired`) as `parameters__expired_at`.
 */
export const expectedFlat = (body: { type: string; regulation: string; parameters: Record<string, unknown> }) => {
  const out: Record<string, unknown> = { type: body.type, regulation: body.regulation }
  const walk = (prefix: string, v: unknown) => {
    if (v === null || typeof v !== "object") {
      out[prefix] = v
      return
    }
    if (Array.isArray(v)) {
      const byId = v.length > 0 && v.every((e) => e !== null && typeof e === "object" && !Array.isArray(e) && "id" in e)
      v.forEach((e, i) => walk(`${prefix}__${byId ? String((e as { id: unknown }).id) : i}`, e))
      return
    }
    for (const [k, child] of Object.entries(v)) walk(`${prefix}__${k}`, child)
  }
  for (const name of ["entity", "new_entity"]) {
    if (name in body.parameters) walk("parameters__entity", body.parameters[name])
  }
  if ("expired_at" in body.parameters) out.parameters__expired_at = body.parameters.expired_at
  return out
}

// ---------------------------------------------------------------- OAuth2 authorization server

export interface TokenIssued {
  readonly authorization: string | undefined
  readonly body: Record<string, unknown>
  readonly accessToken: string
}

export interface AuthServer {
  readonly issuer: string
  readonly tokenUrl: string
  readonly jwksUrl: string
  /** Every answered token request, in order. */
  readonly issued: Array<TokenIssued>
  readonly close: () => Promise<void>
}

/**
 * A real oauth2-mock-server on 127.0.0.1. Each token gets a random `jti`, so two tokens issued
 * within one second differ.
 */
export const authServer = async (): Promise<AuthServer> => {
  const server = new OAuth2Server()
  await server.issuer.keys.generate("RS256")
  await server.start(0, "127.0.0.1")
  const base = `http://127.0.0.1:${server.address().port}`
  const issued: Array<TokenIssued> = []
  server.service.on("beforeTokenSigning", (token: { payload: Record<string, unknown> }) => {
    token.payload.jti = crypto.randomUUID()
  })
  server.service.on("beforeResponse", (response: { body: unknown }, req: http.IncomingMessage & { body?: unknown }) => {
    const body = response.body as Record<string, unknown>
    if (typeof body?.access_token === "string") {
      issued.push({
        authorization: req.headers.authorization,
        body: { ...(req.body as Record<string, unknown>) },
        accessToken: body.access_token
      })
    }
  })
  return {
    issuer: server.issuer.url ?? base,
    tokenUrl: `${base}/token`,
    jwksUrl: `${base}/jwks`,
    issued,
    close: () => server.stop()
  }
}

/** Verifies an RS256 JWT against a JWKS (node:crypto only) and answers its payload. */
export const verifyJwt = async (jwt: string, jwksUrl: string): Promise<Record<string, unknown>> => {
  const [h, p, s] = jwt.split(".")
  if (!h || !p || !s) throw new Error("not a JWT")
  const header = JSON.parse(Buffer.from(h, "base64url").toString()) as { alg: string; kid: string }
  expect(header.alg).toBe("RS256")
  const jwks = await (await fetch(jwksUrl)).json() as { keys: Array<crypto.JsonWebKey & { kid: string }> }
  const jwk = jwks.keys.find((k) => k.kid === header.kid)
  if (!jwk) throw new Error(`no key ${header.kid} in the JWKS`)
  const key = crypto.createPublicKey({ key: jwk, format: "jwk" })
  const ok = crypto.verify("RSA-SHA256", Buffer.from(`${h}.${p}`), key, Buffer.from(s, "base64url"))
  if (!ok) throw new Error("JWT signature does not verify")
  return JSON.parse(Buffer.from(p, "base64url").toString()) as Record<string, unknown>
}
