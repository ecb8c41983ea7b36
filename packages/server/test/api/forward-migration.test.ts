import { eq, Storage, UserStatesTable } from "@cmp/core"
import { type RunningServer, type ServerOptions, startServer } from "@cmp/http-express"
import type { StoreLayer } from "@cmp/platform"
import { PgStore } from "@cmp/store-postgres"
import { SqliteStore } from "@cmp/store-sqlite"
import { createTestDatabase } from "@cmp/test-support/database"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import { Webhook } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { call, type CallOptions, type Reply, storeKind } from "./helpers.js"

/**
 * Forward migration: a database made by the previous release (commit c26579d, through its REST
 * API only, see packages/test-support/fixtures/c26579d/README.md) is opened by the current
 * server, which migrates it on start. Everything the old server answered reads back the same,
 * every principal of the old data still logs in, the secrets it sealed still open, new writes
 * work on the old rows, and a second start on the migrated database opens it again. The
 * consent log, which c26579d did not keep, covers the consent rows it left: every
 * organization's log verifies from the first start on, and stays the same across a restart.
 *
 * Only the REST contract is relied on: the fixture's expected answers are what c26579d's API
 * answered, and the tables under them may change shape in any later migration.
 */

const FIXTURE = path.resolve(import.meta.dirname, "..", "..", "..", "test-support", "fixtures", "c26579d")
/** What the old server answered, per store (ids and timestamps differ between the two runs). */
const expected = JSON.parse(fs.readFileSync(path.join(FIXTURE, `expected.${storeKind}.json`), "utf8"))
/** The old server's ENCRYPTION_KEY (README.md): it sealed the webhook signing and OAuth client secrets. */
const ENCRYPTION_KEY = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
const A = expected.ids.A
const B = expected.ids.B

interface FixtureStore {
  readonly layer: () => StoreLayer
  readonly close: () => Promise<void>
}

/** A copy of the fixture database for this run, in the store under test. */
const openFixture = async (): Promise<FixtureStore> => {
  if (storeKind === "sqlite") {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-forward-migration-"))
    const filename = path.join(dir, "consent.db")
    fs.copyFileSync(path.join(FIXTURE, "consent.sqlite"), filename)
    return {
      layer: () => SqliteStore.layer({ filename }),
      close: async () => fs.rmSync(dir, { recursive: true, force: true })
    }
  }
  // Two clients for PGlite's socket: the second server connects while the first one's closed
  // connection may still be counted (they never run statements at the same time).
  const db = await createTestDatabase({ clients: 2 })
  await db.exec(fs.readFileSync(path.join(FIXTURE, "postgres.sql"), "utf8"))
  return { layer: () => PgStore.layer({ url: db.url, maxConnections: db.maxConnections }), close: db.close }
}

/** TXT records published for the fixture's page hosts, by name. */
const published: Record<string, Array<Array<string>>> = {}

/** The current server on the fixture, with the old server's operator key and encryption key; real time. */
const open = (store: FixtureStore, overrides: Partial<ServerOptions> = {}): Promise<RunningServer> =>
  startServer({
    store: store.layer(),
    port: 0,
    allowHttp: true,
    hashCost: 1024,
    admin: expected.admin,
    encryptionKey: ENCRYPTION_KEY,
    webhookAllowHosts: ["127.0.0.1"],
    // Messages stay queued until the test starts a server that delivers them.
    dispatcher: false,
    // The fixture's page host was made on a day that real time leaves behind: kept, to be read back.
    domainRelease: false,
    // Its messages were delivered on a day real time leaves behind: kept too, to be read back.
    retention: false,
    // The TXT records this test publishes, and none else: no look-up leaves the machine.
    dns: { resolveTxt: async (name) => published[name] ?? [] },
    logLevel: (process.env.TEST_LOG_LEVEL as ServerOptions["logLevel"]) ?? "None",
    ...overrides
  })

/** A webhook receiver answering 200. */
interface Received {
  readonly url: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}
const receiver = async () => {
  const requests: Array<Received> = []
  const server = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      requests.push({ url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") })
      res.writeHead(200, { "content-type": "text/plain" }).end("ok")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return { url, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

const eventually = async <T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 10_000): Promise<T> => {
  const until = Date.now() + timeoutMs
  for (;;) {
    const got = await probe()
    if (got !== undefined) return got
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

let store: FixtureStore
let server: RunningServer | undefined
let hook: Awaited<ReturnType<typeof receiver>>
/** Every answer of the test with a 5xx status: there must be none. */
const serverErrors: Array<string> = []
const tokens: Record<string, string> = {}

const send = async (method: string, url: string, options: CallOptions = {}): Promise<Reply> => {
  const r = await call(server!.url, method, url, options)
  if (r.status >= 500) serverErrors.push(`${method} ${url}: ${r.status} ${r.text.slice(0, 300)}`)
  return r
}
/** A call as one of the fixture's principals: `operator`, `A` or `B`. */
const as = (who: string) => (method: string, url: string, options: CallOptions = {}) => send(method, url, { token: tokens[who], ...options })

const login = async (key: string, secret: string, type = "api-key") => {
  const r = await send("POST", "/v1/sessions", { body: { type, key, secret } })
  expect(r.status, r.text).toBe(201)
  return r.body.access_token as string
}
const loginAll = async () => {
  tokens.operator = await login(expected.admin.key, expected.admin.secret)
  tokens.A = await login(A.key_id, A.key_secret)
  tokens.B = await login(B.key_id, B.key_secret)
}

/**
 * A consent user as c26579d answered it, in today's contract: `consents` was keyed by
 * regulation, and is now the state of one regulation (`gdpr` unless asked) in the shape of an
 * event's `consents`. The states themselves must read back unchanged.
 */
const userToday = (old: any, regulation = "gdpr") => {
  const { consents, ...rest } = old
  const state = consents[regulation] ?? {}
  const v = state.vendors ?? {}
  // No policy existed: a state is given when a purpose or vendor is enabled, else refused.
  const given = (v.enabled ?? []).length > 0 || (state.purposes ?? []).some((p: { enabled: boolean }) => p.enabled)
  return {
    ...rest,
    regulation,
    consent_state: consents[regulation] === undefined ? "none" : given ? "given" : "refused",
    // No event of c26579d carried a Global Privacy Control signal.
    gpc: false,
    consents: {
      purposes: state.purposes ?? [],
      vendors: { enabled: v.enabled ?? [], disabled: v.disabled ?? [], enabled_li: v.enabled_li ?? [], disabled_li: v.disabled_li ?? [] },
      ...(state.tcfcs !== undefined ? { tcfcs: state.tcfcs } : {})
    }
  }
}
/** A quota as c26579d answered it, in today's contract: the `webhooks` count quota came later (20 for existing organizations). */
const quotaToday = (old: any) => ({ ...old, webhooks: 20 })

/**
 * Events gained who recorded them for their user, their proofs, the notice text shown and the
 * browser's GPC signal: none, for every event made before.
 */
const eventToday = (old: any) => ({ ...old, delegate: null, proofs_id: [], notice_text_content_id: null, gpc: false })

const domainVerification = (old: any) =>
  old.usage === "cmp" ? null : { record: `_cmp-verify.${old.id}`, value: expect.stringMatching(/^[0-9a-f]{48,64}$/) }

/**
 * Organizations gained the date before which they refuse consent tokens, secrets whether they
 * require expirations, keys and organizations the date their replaced credential ends, webhooks the end of a rotation's overlap: none.
 * Organizations also gained how long their inactive users' consent events are kept: forever.
 */
const addedLater: ReadonlyArray<readonly [string, (old: any) => any]> = [
  ["/v1/organizations", (old) => ({ ...old, consent_tokens_revoked_before: null, previous_key_expires_at: null, consent_retention_days: null })],
  ["/v1/keys", (old) => ({ ...old, previous_secret_expires_at: null })],
  // Page hosts gained the TXT record that proves them, random per domain (a cmp domain has none),
  // and every domain the reason of a failure: none.
  ["/v1/domains", (old) => ({ ...old, verification: domainVerification(old), failure_reason: null })],
  ["/v1/secrets", (old) => ({ ...old, require_expiration: false })],
  // Webhooks (not their deliveries) gained the end of a signing secret's overlap: none running.
  ["/v1/webhooks(?!/deliveries)", (old) => ({ ...old, previous_secret_expires_at: null })]
]

/** An old answer in today's contract: consent users changed shape, quotas and events gained a field. */
const today = (record: any) => {
  if (record.path.startsWith("/v1/quotas")) {
    return Array.isArray(record.body.data) ? { ...record.body, data: record.body.data.map(quotaToday) } : quotaToday(record.body)
  }
  for (const [path, added] of addedLater) {
    if (new RegExp(`^${path}(/|\\?|$)`).test(record.path)) return Array.isArray(record.body.data) ? { ...record.body, data: record.body.data.map(added) } : added(record.body)
  }
  if (record.path.startsWith("/v1/consents/events")) {
    return Array.isArray(record.body.data) ? { ...record.body, data: record.body.data.map(eventToday) } : eventToday(record.body)
  }
  if (!record.path.startsWith("/v1/consents/users")) return record.body
  return Array.isArray(record.body.data) ? { ...record.body, data: record.body.data.map((u: any) => userToday(u)) } : userToday(record.body)
}

/** Every organization's consent log as the operator verifies it, by organization id. */
const verifyAll = async () => {
  const orgs = await as("operator")("GET", "/v1/organizations?$limit=1000")
  expect(orgs.status, orgs.text).toBe(200)
  const out: Record<string, any> = {}
  for (const o of orgs.body.data) {
    const r = await as("operator")("GET", `/v1/consents/log/verify?organization_id=${o.id}`)
    expect(r.status, `${o.id}: ${r.text}`).toBe(200)
    out[o.id] = r.body
  }
  return out
}
/** The logs of the first start, before anything is written through the current server. */
let firstLogs: Record<string, any>

/** A page's rows by id: the fixture's lists are compared without relying on an order of ties or collations. */
const byId = (body: any) => ({ ...body, data: [...body.data].sort((x: any, y: any) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0)) })

beforeAll(async () => {
  hook = await receiver()
  store = await openFixture()
  server = await open(store)
  await loginAll()
}, 60_000)

afterAll(async () => {
  await server?.close()
  await store?.close()
  await hook?.close()
})

describe(`forward migration from c26579d (${storeKind})`, () => {
  it("the fixture is the one of this store, made by c26579d", () => {
    expect(expected.made_by).toBe("c26579d")
    expect(expected.records.length).toBeGreaterThan(100)
    expect(expected.totals.length).toBeGreaterThan(50)
  })

  it("every principal of the old data logs in: the operator key, the organizations' keys, a member's password, a platform integration", async () => {
    // The operator key made on the old server's first start (the current one finds it there).
    expect(tokens.operator).toBeTruthy()
    const member = await login(A.member_email, A.member_password, "email")
    const orgs = await send("GET", "/v1/organizations", { token: member })
    expect(orgs.status, orgs.text).toBe(200)
    expect(orgs.body.data.map((o: any) => o.id)).toEqual([A.organization_id])
    const integration = await send("POST", "/v1/platform-integrations/sessions", {
      headers: { "x-platform-authorization": A.platform_integration_token }
    })
    expect(integration.status, integration.text).toBe(201)
    expect(integration.body.platform_integration_id).toBe(A.platform_integration_id)
    // A wrong secret is still refused.
    const wrong = await send("POST", "/v1/sessions", { body: { type: "api-key", key: A.key_id, secret: `${A.key_secret}x` } })
    expect(wrong.status).toBe(400)
  })

  it("every record reads back exactly as c26579d answered it", async () => {
    const problems: Array<string> = []
    for (const r of expected.records) {
      const got = await as(r.as)("GET", r.path)
      if (got.status !== 200) {
        problems.push(`${r.as} GET ${r.path}: ${got.status} ${got.text.slice(0, 300)}`)
        continue
      }
      try {
        if (r.unordered) expect(byId(got.body)).toStrictEqual(byId(today(r)))
        else expect(got.body).toStrictEqual(today(r))
      } catch (e) {
        problems.push(`${r.as} GET ${r.path}: ${e instanceof Error ? e.message : String(e)}`)
      }
    }
    expect(problems).toEqual([])
  })

  it("every collection holds as many rows as before, and what was refused is still refused", async () => {
    const problems: Array<string> = []
    for (const t of expected.totals) {
      const got = await as(t.as)("GET", t.path)
      if (got.status !== t.status) problems.push(`${t.as} GET ${t.path}: ${got.status}, expected ${t.status}: ${got.text.slice(0, 200)}`)
      else if (t.status === 200 && got.body.total !== t.total) problems.push(`${t.as} GET ${t.path}: total ${got.body.total}, expected ${t.total}`)
    }
    expect(problems).toEqual([])
  })

  it("the consent log covers the consent rows made before it: every organization's log verifies", async () => {
    firstLogs = await verifyAll()
    expect(Object.keys(firstLogs)).toEqual(expect.arrayContaining([A.organization_id, B.organization_id]))
    // A log without the old rows would answer { valid: false, first_invalid: { reason: "missing", ... } }.
    expect(Object.entries(firstLogs).filter(([, log]) => !log.valid)).toEqual([])
    for (const o of [A, B]) {
      const log = firstLogs[o.organization_id]
      expect(log, o.label).toMatchObject({ valid: true, first_invalid: null, head: expect.stringMatching(/^[0-9a-f]{64}$/) })
      expect(log.entries, o.label).toBeGreaterThan(0)
      // The organization's own key reads the same (both had the consents API then).
      const own = await as(o.label)("GET", "/v1/consents/log/verify")
      expect(own.status, own.text).toBe(200)
      expect(own.body).toStrictEqual(log)
    }
  })

  it("a proof report on a user made by c26579d names a log entry for each of its old events", async () => {
    // A had versions_and_proofs on already (the flag predates proofs).
    const r = await as("A")("POST", "/v1/consents/proof-reports", { body: { organization_id: A.organization_id, user_id: A.user_id } })
    expect(r.status, r.text).toBe(201)
    const events = r.body.report.regulations.flatMap((g: any) => g.events)
    const old = await as("A")("GET", `/v1/consents/events?user_id=${A.user_id}&$limit=1000`)
    expect(events.map((e: any) => e.id).sort()).toEqual(old.body.data.map((e: any) => e.id).sort())
    expect(events.length).toBeGreaterThan(0)
    expect(events.filter((e: any) => e.log.length === 0).map((e: any) => e.id)).toEqual([])
    expect(r.body.report.log_head).toBe(firstLogs[A.organization_id].head)
    expect(r.body.report.user_log.length).toBeGreaterThan(0)
    // Reading the log and making a report write no entry.
    expect((await as("operator")("GET", `/v1/consents/log/verify?organization_id=${A.organization_id}`)).body).toStrictEqual(firstLogs[A.organization_id])
  })

  it("the dashboards offered to an organization are still listed with their signed URLs", async () => {
    for (const o of [A, B]) {
      const r = await as(o.label)("GET", "/v1/analytics/dashboards-urls?$limit=100")
      expect(r.status, r.text).toBe(200)
      expect(r.body.data.map((d: any) => d.id).sort()).toEqual([o.dashboard_id, expected.ids.global_dashboard_id].sort())
      for (const d of r.body.data) expect(d.url).toMatch(/^https:\/\//)
    }
  })

  it("the delivery log still lists each webhook's messages with their attempts", async () => {
    const delivered = A.webhooks[0]
    const r = await as("A")("GET", `/v1/webhooks/deliveries?webhook_id=${delivered.id}&$limit=1000`)
    expect(r.status, r.text).toBe(200)
    const old = expected.records.filter((x: any) => x.as === "A" && x.path.startsWith("/v1/webhooks/deliveries/") && x.body.webhook_id === delivered.id)
    expect(old.length).toBeGreaterThan(0)
    expect(r.body.total).toBe(old.length)
    expect(r.body.data.every((d: any) => d.status === "delivered" && d.attempts_count === 1)).toBe(true)
    // Filters and sorting still work on the old rows.
    const failed = await as("B")("GET", "/v1/webhooks/deliveries?status=failed&$sort[created_at]=-1")
    expect(failed.status, failed.text).toBe(200)
    expect(failed.body.total).toBeGreaterThan(0)
    expect(failed.body.data.every((d: any) => d.organization_id === B.organization_id && d.status === "failed")).toBe(true)
  })

  it("every state of the old users has its row, naming its user's creation and its time", async () => {
    const users = expected.records.filter((x: any) => /^\/v1\/consents\/users\/[^/?]+$/.test(x.path)).map((x: any) => x.body)
    expect(users.length).toBeGreaterThan(0)
    for (const old of users) {
      const rows = await server!.api.runtime.runPromise(Effect.flatMap(Storage, (s) =>
        s.repository(UserStatesTable).find({
          count: false,
          where: [eq("organization_id", old.organization_id), eq("user_id", old.id)],
          sort: [],
          ordered: false,
          limit: 100,
          skip: 0
        })))
      const states = old.consents as Record<string, any>
      expect(rows.data.map((r) => r.regulation).sort()).toEqual(Object.keys(states).sort())
      for (const r of rows.data) {
        expect(r.state.purposes).toEqual(states[r.regulation].purposes ?? [])
        expect(new Date(r.user_created_at).toISOString()).toBe(old.created_at)
        const time = states[r.regulation].updated_at
        expect(r.last_event_at === null ? undefined : new Date(r.last_event_at).toISOString()).toBe(time === undefined ? undefined : new Date(time).toISOString())
        // What the consent_state filter reads, completed from the state by the migration.
        expect(r.vendors_enabled).toBe((states[r.regulation].vendors?.enabled ?? []).length > 0)
        expect(r.enabled_purposes).toEqual((states[r.regulation].purposes ?? []).filter((p: any) => p.enabled).map((p: any) => p.id))
      }
    }
  })

  it("the consent_state filter lists the old users in the states they show", async () => {
    const all = await as("A")("GET", "/v1/consents/users?$limit=1000")
    expect(all.status, all.text).toBe(200)
    expect(all.body.data.length).toBeGreaterThan(0)
    for (const state of ["none", "given", "refused"]) {
      const found = await as("A")("GET", `/v1/consents/users?consent_state=${state}&$limit=1000`)
      expect(found.status, found.text).toBe(200)
      expect(found.body.data.map((u: any) => u.id).sort())
        .toEqual(all.body.data.filter((u: any) => u.consent_state === state).map((u: any) => u.id).sort())
    }
  })

  it("a consent event can still be created in A: it changes the old user and queues its messages", async () => {
    const before = expected.records.find((x: any) => x.as === "A" && x.path === `/v1/consents/users/${A.user_id}`).body
    const queued = (await as("A")("GET", `/v1/webhooks/deliveries?webhook_id=${A.webhooks[0].id}&$limit=0`)).body.total
    const e = await as("A")("POST", "/v1/consents/events", {
      body: {
        id: "order-2001",
        organization_id: A.organization_id,
        user: { organization_user_id: "crm-0001" },
        consents: { purposes: [{ id: "analytics", enabled: true }, { id: "newsletter", enabled: true }] }
      }
    })
    expect(e.status, e.text).toBe(201)
    expect(e.body.user.id).toBe(A.user_id)
    const user = await as("A")("GET", `/v1/consents/users/${A.user_id}`)
    expect(user.status, user.text).toBe(200)
    expect(user.body.version).toBeGreaterThan(before.version)
    expect(user.body.created_at).toBe(before.created_at)
    const purposes = Object.fromEntries(user.body.consents.purposes.map((p: any) => [p.id, p.enabled]))
    expect(purposes).toMatchObject({ analytics: true, newsletter: true, ads: true })
    // The CCPA status of the old events is untouched.
    expect(before.consents.ccpa).toBeDefined()
    const ccpa = await as("A")("GET", `/v1/consents/users/${A.user_id}?regulation=ccpa`)
    expect(ccpa.body.consents).toStrictEqual(userToday(before, "ccpa").consents)
    // A client-chosen id of the old data is still taken in its organization.
    const again = await as("A")("POST", "/v1/consents/events", {
      body: { id: "order-1001", organization_id: A.organization_id, user: { organization_user_id: "crm-0001" }, consents: {} }
    })
    expect(again.status, again.text).toBe(409)
    // event.created and user.updated, for the webhook of every event type.
    const after = (await as("A")("GET", `/v1/webhooks/deliveries?webhook_id=${A.webhooks[0].id}&$limit=0`)).body.total
    expect(after).toBe(queued + 2)
    // B's user of the same organization_user_id is not A's.
    const other = await as("B")("GET", "/v1/consents/users/crm-0001?$by_organization_user_id=true")
    expect(other.status, other.text).toBe(200)
    expect(other.body.id).toBe(B.user_id)
    expect(other.body.consents).toStrictEqual(
      userToday(expected.records.find((x: any) => x.as === "B" && x.path === `/v1/consents/users/${B.user_id}`).body).consents
    )
    // The new event and the old user's change follow the old rows' entries in A's log; B's is untouched.
    const logs = await verifyAll()
    expect(logs[A.organization_id]).toMatchObject({ valid: true, first_invalid: null })
    expect(logs[A.organization_id].entries).toBeGreaterThan(firstLogs[A.organization_id].entries)
    expect(logs[A.organization_id].head).not.toBe(firstLogs[A.organization_id].head)
    expect(logs[B.organization_id]).toStrictEqual(firstLogs[B.organization_id])
  })

  it("a Secret made by c26579d (kept only as a hash) cannot sign user ids, even correctly; one made now can", async () => {
    const features = await as("operator")("PATCH", `/v1/premium-features/${A.premium_features_id}`, { body: { store_cmp_consents: true } })
    expect(features.status, features.text).toBe(200)
    const org = await as("A")("GET", `/v1/organizations/${A.organization_id}`)
    const headers = { "x-public-api-key": org.body.public_api_key as string }
    const signedWith = (secretId: string, secret: string, user: string) => ({
      organization_id: A.organization_id,
      user: {
        organization_user_id: user,
        organization_user_id_auth: {
          algorithm: "hmac-sha256",
          secret_id: secretId,
          digest: crypto.createHmac("sha256", secret).update(user).digest("hex")
        }
      },
      consents: { purposes: [{ id: "analytics", enabled: true }] }
    })
    const old = await send("POST", "/v1/consents/events", { headers, body: signedWith(A.secret_id, A.secret_value, "signed-old") })
    expect(old.status, old.text).toBe(403)
    expect(old.body.message).toMatch(/create a new one/)
    const made = await as("A")("POST", "/v1/secrets", { body: { organization_id: A.organization_id, name: "signs user ids" } })
    expect(made.status, made.text).toBe(201)
    const now = await send("POST", "/v1/consents/events", { headers, body: signedWith(made.body.id, made.body.secret, "signed-new") })
    expect(now.status, now.text).toBe(201)
    // The old data's counts are compared again after a restart.
    expect((await as("A")("DELETE", `/v1/secrets/${made.body.id}`)).status).toBe(200)
  })

  it("a page host made by c26579d got its own TXT record to publish: it is deployed only once the record holds it", async () => {
    const id = B.domain_id
    const domain = (await as("B")("GET", `/v1/domains/${id}`)).body
    expect(domain).toMatchObject({ usage: "privacy-center", status: "draft", verification: { record: `_cmp-verify.${id}` } })
    const cmp = (await as("A")("GET", `/v1/domains/${A.domain_id}`)).body
    expect(cmp).toMatchObject({ usage: "cmp", verification: null, failure_reason: null })
    const unproven = await as("B")("PATCH", `/v1/domains/${id}`, { body: { enabled: true, status: "scheduled" } })
    expect(unproven.status, unproven.text).toBe(200)
    expect(unproven.body).toMatchObject({ status: "failed", failure_reason: expect.stringContaining(domain.verification.record) })
    published[domain.verification.record] = [[domain.verification.value]]
    const proven = await as("B")("PATCH", `/v1/domains/${id}`, { body: { status: "scheduled" } })
    expect(proven.body).toMatchObject({ status: "ready", failure_reason: null, verification: domain.verification })
  })

  it("a second start on the migrated database opens it again, and the secrets sealed by c26579d still sign", async () => {
    // The webhook of A now points at this test's receiver (its old receiver is gone).
    const patched = await as("A")("PATCH", `/v1/webhooks/${A.webhooks[0].id}`, { body: { url: `${hook.url}/hooks/a` } })
    expect(patched.status, patched.text).toBe(200)
    // So does B's webhook whose receiver answered 410 Gone (it was switched off then).
    const gone = B.webhooks[1]
    const revived = await as("B")("PATCH", `/v1/webhooks/${gone.id}`, { body: { url: `${hook.url}/hooks/b`, enabled: true } })
    expect(revived.status, revived.text).toBe(200)
    const events = (await as("A")("GET", "/v1/consents/events?$limit=0")).body.total
    const organization = (await as("A")("GET", `/v1/organizations/${A.organization_id}`)).body
    const logs = await verifyAll()
    expect(Object.values(logs).filter((log) => !log.valid)).toEqual([])
    await server!.close()
    server = undefined
    server = await open(store, {
      dispatcher: { allowHosts: ["127.0.0.1"], retrySchedule: [86_400], timeoutMs: 2000, pollIntervalMs: 50 }
    })
    await loginAll()
    // The old rows were entered once: the second start adds nothing to any log.
    expect(await verifyAll()).toStrictEqual(logs)
    expect((await as("A")("GET", "/v1/consents/events?$limit=0")).body.total).toBe(events)
    expect((await as("A")("GET", `/v1/organizations/${A.organization_id}`)).body).toStrictEqual(organization)
    for (const t of expected.totals.filter((x: any) => !x.path.startsWith("/v1/consents/") && !x.path.startsWith("/v1/webhooks/deliveries"))) {
      const got = await as(t.as)("GET", t.path)
      expect(got.status, `${t.path}: ${got.text}`).toBe(t.status)
      if (t.status === 200) expect(got.body.total, t.path).toBe(t.total)
    }

    // The two messages queued above are delivered, signed with the signing secret c26579d
    // sealed with its encryption key; so is an old failed message replayed. An old delivered
    // message is not sent again.
    const delivered = expected.records.find((x: any) => x.as === "A" && x.path.startsWith("/v1/webhooks/deliveries/") && x.body.webhook_id === A.webhooks[0].id).body
    expect((await as("A")("POST", `/v1/webhooks/deliveries/${delivered.id}/replay`)).status).toBe(409)
    const replayed = expected.records.find((x: any) => x.as === "B" && x.path.startsWith("/v1/webhooks/deliveries/") && x.body.webhook_id === gone.id && x.body.status === "failed").body
    const replay = await as("B")("POST", `/v1/webhooks/deliveries/${replayed.id}/replay`)
    expect(replay.status, replay.text).toBe(200)
    const requests = await eventually(
      async () => (hook.requests.some((q) => q.headers["webhook-id"] === replayed.id) && hook.requests.length >= 3 ? hook.requests : undefined),
      "the receiver to get the new messages and the replayed one"
    )
    for (const q of requests) {
      const verifier = new Webhook(q.url === "/hooks/b" ? gone.signing_secret : A.webhooks[0].signing_secret)
      const headers = {
        "webhook-id": String(q.headers["webhook-id"]),
        "webhook-timestamp": String(q.headers["webhook-timestamp"]),
        "webhook-signature": String(q.headers["webhook-signature"])
      }
      expect(() => verifier.verify(q.body, headers), `signature of ${headers["webhook-id"]}`).not.toThrow()
    }
    const old = requests.find((q) => q.headers["webhook-id"] === replayed.id)!
    expect(JSON.parse(old.body)).toStrictEqual(replayed.payload)
  }, 60_000)

  // PGlite's one session cannot serve two servers' migrations at once.
  it.skipIf(storeKind === "postgres" && !process.env.DATABASE_URL)(
    "two servers starting at once on another copy of the old database enter its rows in the log once",
    async () => {
      const copy = await openFixture()
      const both: Array<RunningServer> = []
      try {
        const started = await Promise.allSettled([open(copy), open(copy)])
        for (const s of started) if (s.status === "fulfilled") both.push(s.value)
        expect(started.filter((s) => s.status === "rejected").map((s) => String((s as PromiseRejectedResult).reason))).toEqual([])
        for (const running of both) {
          const session = await call(running.url, "POST", "/v1/sessions", { body: { type: "api-key", key: expected.admin.key, secret: expected.admin.secret } })
          expect(session.status, session.text).toBe(201)
          for (const o of [A, B]) {
            const r = await call(running.url, "GET", `/v1/consents/log/verify?organization_id=${o.organization_id}`, { token: session.body.access_token })
            expect(r.status, r.text).toBe(200)
            expect(r.body, o.label).toMatchObject({ valid: true, first_invalid: null })
            // As many entries as one server made of the same rows on the first copy.
            expect(r.body.entries, o.label).toBe(firstLogs[o.organization_id].entries)
          }
        }
      } finally {
        for (const running of both) await running.close()
        await copy.close()
      }
    },
    60_000
  )

  it("answered no 5xx", () => {
    expect(serverErrors).toEqual([])
  })
})
