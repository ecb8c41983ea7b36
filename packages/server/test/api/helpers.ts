import { type RunningServer, type ServerOptions, startServer } from "@cmp/http-express"
import { createFetchHandler, serveNode } from "@cmp/http-fetch"
import type { StoreLayer } from "@cmp/platform"
import { PgStore } from "@cmp/store-postgres"
import { SqliteStore } from "@cmp/store-sqlite"
import { ManualClock } from "@cmp/test-support/clock"
import { createTestDatabase } from "@cmp/test-support/database"
import { ADMIN, as, client, START, unique } from "@cmp/test-support/http"
import * as http from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { expect } from "vitest"
import { captureRunLog, markServerStart, runLogPath } from "./run-log.js"

// When the file loads, before any suite's hooks: a suite that spies on the console itself
// (the logs suites) sees its server's lines, then gives the console back to the capture.
captureRunLog()

/**
 * The server of the API suites: the real Express server (what `pnpm start` serves) over a fresh
 * database of the store under test, with a hand-moved clock. Suites start it through
 * `useServer` of `./fixture.ts`, which also signs the operator in and makes tenants.
 */

export * from "@cmp/test-support/http"
export { ManualClock }

export interface TestServer extends RunningServer {
  readonly clock: ManualClock
}

/** Which store the suite runs on: `pnpm test` runs it once per store. */
export const storeKind = process.env.CMP_TEST_STORE === "postgres" ? "postgres" : "sqlite"

/**
 * Which adapter serves the suite: `http-express`'s (`startServer`, the default: Node's own
 * `http` server with that adapter's request helpers, as `pnpm start` serves) or, with
 * `CMP_TEST_ADAPTER=fetch`, the web-standard fetch handler on Node's own `http` server.
 */
export const adapterKind = process.env.CMP_TEST_ADAPTER === "fetch" ? "fetch" : "express"

/** The same options as `startServer`, served by `createFetchHandler` through `serveNode`. */
const startFetchServer = async (options: ServerOptions): Promise<RunningServer> => {
  const api = await createFetchHandler(options)
  const server = serveNode(api.fetch, options.tls ? https.createServer({ cert: options.tls.cert, key: options.tls.key }) : http.createServer())
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject)
      server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve())
    })
  } catch (error) {
    await api.dispose()
    throw error
  }
  const { port } = server.address() as AddressInfo
  const close = async () => {
    await new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeIdleConnections()
    })
    await api.dispose()
  }
  // The suites use the server's URL and `close`; the Express router is not part of a fetch host.
  return { api: api as unknown as RunningServer["api"], server, url: `${options.tls ? "https" : "http"}://127.0.0.1:${port}`, close }
}

/** A fresh store for one test server, and how to dispose of it after the server. */
export const testStore = async (): Promise<{ layer: StoreLayer; close: () => Promise<void> }> => {
  if (storeKind === "sqlite") return { layer: SqliteStore.layer({ filename: ":memory:" }), close: async () => {} }
  const db = await createTestDatabase()
  return { layer: PgStore.layer({ url: db.url, maxConnections: db.maxConnections }), close: db.close }
}

/** A real listening server on a random port over a fresh database of the store under test. */
export const start = async (overrides: Partial<ServerOptions> = {}): Promise<TestServer> => {
  markServerStart()
  const clock = (overrides.clock as ManualClock | undefined) ?? new ManualClock(START)
  const store = await testStore()
  const server = await (adapterKind === "fetch" ? startFetchServer : startServer)({
    store: store.layer,
    port: 0,
    allowHttp: true,
    hashCost: 1024,
    clock,
    admin: ADMIN,
    // Nothing delivers unless a suite asks for a dispatcher (the webhook suites do).
    dispatcher: false,
    // Nor is anything purged unless a suite asks (the retention suite does): suites move the clock by days.
    retention: false,
    // No page host's proof is looked up outside the machine: no TXT record anywhere, unless a
    // suite hands in its own resolver (the domains suite does).
    dns: { resolveTxt: async () => [] },
    // Every line, into the run's log, which is searched for personal data after the run;
    // TEST_LOG_LEVEL=Error shows the server's logs (the cause of a 500) while debugging.
    logLevel: (process.env.TEST_LOG_LEVEL as ServerOptions["logLevel"]) ?? (runLogPath() === undefined ? "None" : "Debug"),
    ...overrides
  })
  return {
    ...server,
    clock,
    close: async () => {
      await server.close()
      await store.close()
    }
  }
}

/** A person invited into each of the organizations (by their own keys), accepted, signed in by email. */
export const memberOf = async (base: string, ...tenants: ReadonlyArray<{ readonly token: string; readonly org: { readonly id: string } }>) => {
  const email = `${unique("member")}@example.com`
  const password = "correct horse battery staple"
  for (const t of tenants) {
    const invited = await as(base, t.token)("POST", "/v1/members", { body: { name: "Ada", email, organization_id: t.org.id } })
    expect(invited.status, invited.text).toBe(201)
    const accepted = await client(base).call("POST", "/v1/invitations/accept", { body: { token: invited.body.invitation.token, password } })
    expect(accepted.status, accepted.text).toBe(201)
  }
  const session = await client(base).call("POST", "/v1/sessions", { body: { type: "email", key: email, secret: password } })
  expect(session.status, session.text).toBe(201)
  return as(base, session.body.access_token)
}

type Caller = ReturnType<typeof as>

/**
 * A notice text content approved by the operator (`op`): a content of `textId`, or of a new text
 * of the tenant's organization.
 */
export const approvedContent = async (
  op: { readonly call: Caller },
  t: { readonly org: { readonly id: string }; readonly call: Caller },
  content: string,
  textId?: string
) => {
  let text = textId
  if (text === undefined) {
    const made = await t.call("POST", "/v1/widgets/notices/texts", { body: { organization_id: t.org.id, name: unique("Banner") } })
    expect(made.status, made.text).toBe(201)
    text = made.body.id as string
  }
  const c = await t.call("POST", "/v1/widgets/notices/texts-contents", { body: { organization_id: t.org.id, text_id: text, content } })
  expect(c.status, c.text).toBe(201)
  const approved = await op.call("PATCH", `/v1/widgets/notices/texts-contents/${c.body.id}`, { body: { status: "approved" } })
  expect(approved.status, approved.text).toBe(200)
  return approved.body
}


/** A hosted page's answer, its headers by lower-case name. */
export interface PageReply {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly text: string
}

/**
 * A request as a browser sends it to a page, with the `Host` the visitor typed (a page host
 * proven by an organization), which fetch cannot set.
 */
export const getPage = (base: string, path: string, headers: Record<string, string> = {}, method = "GET"): Promise<PageReply> =>
  new Promise((resolve, reject) => {
    const url = new URL(base)
    const request = http.request({ host: url.hostname, port: url.port, path, method, headers }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (c: Buffer) => chunks.push(c))
      response.on("end", () => resolve({ status: response.statusCode!, headers: response.headers, text: Buffer.concat(chunks).toString("utf8") }))
    })
    request.on("error", reject)
    request.end()
  })
