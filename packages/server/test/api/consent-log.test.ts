import { type ServerOptions, startServer } from "@cmp/http-express"
import type { StoreLayer } from "@cmp/platform"
import { PgStore } from "@cmp/store-postgres"
import { SqliteStore } from "@cmp/store-sqlite"
import { createTestDatabase } from "@cmp/test-support/database"
import { dataUri, samplePdf, samplePng } from "@cmp/test-support/proof-samples"
import canonicalize from "canonicalize"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import { describe, expect, it } from "vitest"
import { ADMIN, expect403, expect404, expectError, ManualClock, START, storeKind, type TestServer, unique } from "./helpers.js"
import { type TestTenant, useServer } from "./fixture.js"

/**
 * The consent log through HTTP and under it: every write of consent events, users and proofs
 * leaves an entry of digests that `GET /v1/consents/log/verify` checks against the chains and
 * against the rows, so an edit made behind the API's back (a row, or an entry) is named.
 * The suite edits the database directly, so its server runs on a database it can reach too:
 * a file on SQLite, a database of its own on PostgreSQL.
 */

/** The few statements the suite runs itself, with `?` placeholders on both stores. */
interface Direct {
  readonly query: (sql: string, params?: ReadonlyArray<unknown>) => Promise<Array<Record<string, unknown>>>
  readonly run: (sql: string, params?: ReadonlyArray<unknown>) => Promise<number>
}

interface SqliteHandle {
  prepare(sql: string): { all(...params: Array<unknown>): Array<Record<string, unknown>>; run(...params: Array<unknown>): { changes: number } }
  close(): void
}

/** The store of the server and a connection of the suite's own to the same database. */
const reachableStore = async (): Promise<{ layer: StoreLayer; direct: Direct; close: () => Promise<void> }> => {
  if (storeKind === "sqlite") {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-consent-log-"))
    const filename = path.join(dir, "consent.db")
    // Opened once the server has made and migrated the file.
    let handle: SqliteHandle | undefined
    const open = (): SqliteHandle => {
      if (handle) return handle
      const Database = createRequire(import.meta.url)("better-sqlite3") as new (filename: string) => SqliteHandle
      handle = new Database(filename)
      return handle
    }
    return {
      layer: SqliteStore.layer({ filename }),
      direct: {
        query: async (sql, params = []) => open().prepare(sql).all(...params),
        run: async (sql, params = []) => open().prepare(sql).run(...params).changes
      },
      close: async () => {
        handle?.close()
        fs.rmSync(dir, { recursive: true, force: true })
      }
    }
  }
  // A second client beside the server's pool (PGlite's socket counts its connections).
  const db = await createTestDatabase({ clients: 2 })
  let client: pg.Client | undefined
  const open = async (): Promise<pg.Client> => {
    if (client) return client
    const c = new pg.Client({ connectionString: db.url })
    await c.connect()
    client = c
    return c
  }
  const numbered = (sql: string) => {
    let n = 0
    return sql.replace(/\?/g, () => `$${++n}`)
  }
  return {
    layer: PgStore.layer({ url: db.url, maxConnections: db.maxConnections }),
    direct: {
      query: async (sql, params = []) => (await (await open()).query(numbered(sql), [...params])).rows,
      run: async (sql, params = []) => (await (await open()).query(numbered(sql), [...params])).rowCount ?? 0
    },
    close: async () => {
      await client?.end()
      await db.close()
    }
  }
}

let direct: Direct | undefined
const db = (): Direct => {
  if (!direct) throw new Error("the database is reachable once the server started")
  return direct
}

/** `start` of `./helpers.ts` on that store (the Express server: this suite is about the store, not the adapter). */
const startReachable = async (overrides: Partial<ServerOptions> = {}): Promise<TestServer> => {
  const store = await reachableStore()
  const clock = new ManualClock(START)
  const server = await startServer({
    store: store.layer,
    port: 0,
    allowHttp: true,
    hashCost: 1024,
    clock,
    admin: ADMIN,
    dispatcher: false,
    logLevel: (process.env.TEST_LOG_LEVEL as ServerOptions["logLevel"]) ?? "None",
    ...overrides
  }).catch(async (error: unknown) => {
    await store.close()
    throw error
  })
  direct = store.direct
  return {
    ...server,
    clock,
    close: async () => {
      await server.close()
      await store.close()
    }
  }
}

const { op, server, tenant } = useServer({}, { start: startReachable, timeout: 60_000 })

const FEATURES = { consents_api: true, versions_and_proofs: true }
const HEX64 = /^[0-9a-f]{64}$/

const sha256 = (text: string) => crypto.createHash("sha256").update(text, "utf8").digest("hex")

/** How the log names a row without holding it: the SHA-256 of its table, organization and id. */
const subjectOf = (table: "consent_events" | "consent_users" | "consent_proofs", organizationId: string, id: string) =>
  sha256(`${table}\n${organizationId}\n${id}`)

const purposes = (...list: Array<[string, boolean]>) => list.map(([id, enabled]) => ({ id, enabled }))

const eventBody = (t: TestTenant, organizationUserId: string, extra: Record<string, unknown> = {}) => ({
  organization_id: t.org.id,
  user: { organization_user_id: organizationUserId },
  consents: { purposes: purposes(["analytics", true]) },
  ...extra
})

const created = async (t: TestTenant, path: string, body: unknown) => {
  const r = await t.call("POST", path, { body })
  expect(r.status, `${path}: ${r.text}`).toBe(201)
  return r.body
}

const verify = async (t: TestTenant, organizationId: string | undefined = t.org.id) => {
  const r = await t.call("GET", `/v1/consents/log/verify${organizationId === undefined ? "" : `?organization_id=${organizationId}`}`)
  expect(r.status, r.text).toBe(200)
  return r.body
}

interface LogRow {
  readonly shard: number
  readonly seq: number
  readonly createdAt: number
  readonly changes: string
  readonly hash: string
}

const millisOf = (value: unknown) => (value instanceof Date ? value.getTime() : Date.parse(String(value)))

/** The organization's log entries, read from the table. */
const logRows = async (organizationId: string): Promise<Array<LogRow>> =>
  (await db().query("SELECT shard, seq, created_at, changes, hash FROM consent_log WHERE organization_id = ?", [organizationId])).map((r) => ({
    shard: Number(r.shard),
    seq: Number(r.seq),
    createdAt: millisOf(r.created_at),
    changes: String(r.changes),
    hash: String(r.hash)
  }))

/** The latest entry (by time, then seq) whose changes name the subject. */
const latestCovering = (rows: ReadonlyArray<LogRow>, subject: string): LogRow => {
  const covering = rows.filter((r) => (JSON.parse(r.changes).changes as Array<{ s: string }>).some((c) => c.s === subject))
  expect(covering.length, `an entry covers ${subject}`).toBeGreaterThan(0)
  return covering.reduce((a, b) => (b.createdAt > a.createdAt || (b.createdAt === a.createdAt && b.seq > a.seq) ? b : a))
}

describe("consent log: verify", () => {
  it("after writes of events, users and proofs: valid, with as many entries as the table holds and a 64-hex head", async () => {
    const t = await tenant(FEATURES)
    const ouid = unique("crm")
    const e = await created(t, "/v1/consents/events", eventBody(t, ouid))
    const patched = await t.call("PATCH", `/v1/consents/events/${e.id}`, { body: { metadata: { channel: "web" } } })
    expect(patched.status, patched.text).toBe(200)
    const u = await created(t, "/v1/consents/users", {
      organization_id: t.org.id,
      organization_user_id: unique("crm"),
      consents: { purposes: purposes(["ads", false]) }
    })
    const up = await t.call("PATCH", `/v1/consents/users/${u.id}`, { body: { country: "FR" } })
    expect(up.status, up.text).toBe(200)
    const p = await created(t, "/v1/consents/proofs", { organization_id: t.org.id, file: dataUri("image/png", samplePng()) })
    const kept = await created(t, "/v1/consents/proofs", { organization_id: t.org.id, file: dataUri("application/pdf", samplePdf()) })
    const removed = await t.call("DELETE", `/v1/consents/proofs/${p.id}`)
    expect(removed.status, removed.text).toBe(200)

    const v = await verify(t)
    expect(v).toEqual({ valid: true, entries: expect.any(Number), head: expect.stringMatching(HEX64), first_invalid: null })
    // Seven writes, each its own transaction with at least one entry.
    expect(v.entries).toBeGreaterThanOrEqual(7)

    const rows = await logRows(t.org.id)
    expect(rows).toHaveLength(v.entries)
    for (const r of rows) {
      expect(r.shard).toBeGreaterThanOrEqual(0)
      expect(r.shard).toBeLessThan(16)
      expect(r.hash).toMatch(HEX64)
      const parsed = JSON.parse(r.changes)
      // Stored as the canonical JSON it is hashed as.
      expect(canonicalize(parsed)).toBe(r.changes)
      expect(Object.keys(parsed).sort()).toEqual(["at", "changes"])
      expect(Number.isNaN(Date.parse(parsed.at))).toBe(false)
      for (const c of parsed.changes) {
        expect(["create", "update", "remove"]).toContain(c.a)
        expect(["event", "user", "proof"]).toContain(c.k)
        expect(c.s).toMatch(HEX64)
        if (c.d !== null) expect(c.d).toMatch(HEX64)
      }
      // Digests only: no id or value of the organization's data.
      for (const plain of [ouid, u.organization_user_id, e.id, e.user.id, u.id, p.id, kept.id, "analytics", "FR"]) {
        expect(r.changes).not.toContain(plain)
      }
    }
    const all = rows.flatMap((r) => JSON.parse(r.changes).changes as Array<{ a: string; k: string; s: string; d: string | null }>)
    const about = (table: "consent_events" | "consent_users" | "consent_proofs", id: string) =>
      all.filter((c) => c.s === subjectOf(table, t.org.id, id)).map((c) => `${c.k}:${c.a}`).sort()
    expect(about("consent_events", e.id)).toEqual(expect.arrayContaining(["event:create", "event:update"]))
    expect(about("consent_users", e.user.id)).toContain("user:create")
    expect(about("consent_users", u.id)).toEqual(expect.arrayContaining(["user:create", "user:update"]))
    expect(about("consent_proofs", p.id)).toEqual(["proof:create", "proof:remove"])
    expect(about("consent_proofs", kept.id)).toEqual(["proof:create"])
    // A removal leaves no row to digest.
    const removal = all.find((c) => c.s === subjectOf("consent_proofs", t.org.id, p.id) && c.a === "remove")
    expect(removal?.d).toBeNull()

    // Verifying writes nothing; the next write moves the head.
    expect(await verify(t)).toEqual(v)
    await created(t, "/v1/consents/events", eventBody(t, ouid))
    const next = await verify(t)
    expect(next).toMatchObject({ valid: true, first_invalid: null })
    expect(next.entries).toBeGreaterThan(v.entries)
    expect(next.head).not.toBe(v.head)
  })

  it("an organization without writes has a valid, empty log", async () => {
    const t = await tenant(FEATURES)
    expect(await verify(t)).toEqual({ valid: true, entries: 0, head: expect.stringMatching(HEX64), first_invalid: null })
  })

  it("a client verifies its own organization (implied when the query omits it), never another one's; consents_api is needed", async () => {
    const t = await tenant(FEATURES)
    await created(t, "/v1/consents/events", eventBody(t, unique("crm")))
    const named = await verify(t)
    expect(named.entries).toBeGreaterThan(0)
    expect(await verify(t, undefined)).toEqual(named)

    const other = await tenant(FEATURES)
    expect403(await other.call("GET", `/v1/consents/log/verify?organization_id=${t.org.id}`))
    // The operator verifies any organization.
    const byOperator = await op.call("GET", `/v1/consents/log/verify?organization_id=${t.org.id}`)
    expect(byOperator.status, byOperator.text).toBe(200)
    expect(byOperator.body).toEqual(named)

    const without = await tenant({ versions_and_proofs: true })
    expect403(await without.call("GET", `/v1/consents/log/verify?organization_id=${without.org.id}`))
    expect403(await without.call("GET", "/v1/consents/log/verify"))
  })
})

describe("consent log: verify is not a way to hold the server", () => {
  /**
   * An organization whose table holds many rows: copies of one event, made behind the API's back
   * in one statement (the verify reads every row, page by page, and finds them missing from the
   * log, which is beside the point here).
   */
  const largeLog = async (rows: number) => {
    const t = await tenant(FEATURES)
    const first = await created(t, "/v1/consents/events", eventBody(t, unique("crowd")))
    const columns = Object.keys((await db().query("SELECT * FROM consent_events WHERE id = ?", [first.id]))[0]!)
    const copied = columns.map((c) => (c === "id" ? "'bulk-' || n.i" : `e."${c}"`)).join(", ")
    await db().run(
      `INSERT INTO consent_events (${columns.map((c) => `"${c}"`).join(", ")}) ` +
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${rows}) ` +
        `SELECT ${copied} FROM n, consent_events e WHERE e.id = ?`,
      [first.id]
    )
    return t
  }
  const verifyOf = (t: TestTenant) => t.call("GET", `/v1/consents/log/verify?organization_id=${t.org.id}`)

  it("other requests are answered between the pages of a verify of a large log", async () => {
    const t = await largeLog(6000)
    const order: Array<string> = []
    const verifying = verifyOf(t).then((r) => (order.push("verify"), r))
    const probe = fetch(`${server.url}/healthz`).then((r) => (order.push("healthz"), r))
    const [verified, probed] = await Promise.all([verifying, probe])
    expect(verified.status, verified.text).toBe(200)
    expect(verified.body.valid).toBe(false)
    expect(probed.status).toBe(200)
    expect(order).toEqual(["healthz", "verify"])
  }, 60_000)

  it("one verify of an organization at a time: a second one meanwhile is 429 with Retry-After; another organization's is served", async () => {
    const t = await largeLog(6000)
    const other = await tenant(FEATURES)
    await created(other, "/v1/consents/events", eventBody(other, unique("alone")))
    const [a, b, elsewhere] = await Promise.all([verifyOf(t), verifyOf(t), verifyOf(other)])
    const statuses = [a.status, b.status].sort()
    expect(statuses, `${a.text} ${b.text}`).toEqual([200, 429])
    const refused = a.status === 429 ? a : b
    expectError(refused, 429, "TooManyRequests", "too-many-requests")
    expect(refused.headers.get("retry-after")).toMatch(/^[1-9]\d*$/)
    expect(elsewhere.status, elsewhere.text).toBe(200)
    expect(elsewhere.body.valid).toBe(true)
    // Once it has finished, the organization's log is verified again.
    expect((await verifyOf(t)).status).toBe(200)
  }, 60_000)
})

describe("consent log: edits behind the API's back", () => {
  it("a consent event's row changed in the database: invalid, naming the row and the latest entry covering it", async () => {
    const t = await tenant(FEATURES)
    const ouid = unique("crm")
    const e = await created(t, "/v1/consents/events", eventBody(t, ouid))
    await created(t, "/v1/consents/events", eventBody(t, ouid, { consents: { purposes: purposes(["ads", true]) } }))
    // The event's latest entry is then its update, not its creation.
    const patched = await t.call("PATCH", `/v1/consents/events/${e.id}`, { body: { metadata: { source: "checkout" } } })
    expect(patched.status, patched.text).toBe(200)
    expect((await verify(t)).valid).toBe(true)

    const changed = await db().run(`UPDATE consent_events SET consents = '{"purposes":[],"vendors":{}}' WHERE organization_id = ? AND id = ?`, [
      t.org.id,
      e.id
    ])
    expect(changed).toBe(1)
    const latest = latestCovering(await logRows(t.org.id), subjectOf("consent_events", t.org.id, e.id))
    const v = await verify(t)
    expect(v.valid).toBe(false)
    expect(v.first_invalid).toEqual({ reason: "row", table: "consent_events", id: e.id, shard: latest.shard, seq: latest.seq })
  })

  it("a log entry changed in the database: invalid, naming exactly that entry as a broken link", async () => {
    const t = await tenant(FEATURES)
    const ouid = unique("crm")
    const e = await created(t, "/v1/consents/events", eventBody(t, ouid))
    for (let i = 0; i < 4; i++) await created(t, "/v1/consents/events", eventBody(t, unique("crm")))
    expect((await t.call("PATCH", `/v1/consents/events/${e.id}`, { body: { metadata: { n: 1 } } })).status).toBe(200)
    expect((await verify(t)).valid).toBe(true)

    const rows = await logRows(t.org.id)
    const target = latestCovering(rows, subjectOf("consent_events", t.org.id, e.id))
    // Still canonical JSON of the same changes, with another time: only the chain can tell.
    const altered = canonicalize({ ...JSON.parse(target.changes), at: "2001-01-01T00:00:00.000Z" })!
    expect(altered).not.toBe(target.changes)
    const changed = await db().run("UPDATE consent_log SET changes = ? WHERE organization_id = ? AND shard = ? AND seq = ?", [
      altered,
      t.org.id,
      target.shard,
      target.seq
    ])
    expect(changed).toBe(1)
    const v = await verify(t)
    expect(v.valid).toBe(false)
    expect(v.first_invalid).toEqual({ reason: "link", shard: target.shard, seq: target.seq })
  })
})

describe("consent log: erasure", () => {
  it("removing a user with events and an inline proof keeps the log valid and erases the proof", async () => {
    const t = await tenant(FEATURES)
    const ouid = unique("crm")
    const e = await created(t, "/v1/consents/events", eventBody(t, ouid, { proofs: [{ file: dataUri("image/png", samplePng()) }] }))
    expect(e.proofs_id).toHaveLength(1)
    const proofId = e.proofs_id[0] as string
    expect((await t.call("GET", `/v1/consents/proofs/${proofId}`)).status).toBe(200)
    const ccpa = await created(t, "/v1/consents/events", eventBody(t, ouid, { regulation: "ccpa" }))
    const before = await verify(t)
    expect(before.valid).toBe(true)

    const removed = await t.call("DELETE", `/v1/consents/users/${e.user.id}`)
    expect(removed.status, removed.text).toBe(200)
    const after = await verify(t)
    expect(after).toEqual({ valid: true, entries: expect.any(Number), head: expect.stringMatching(HEX64), first_invalid: null })
    expect(after.entries).toBeGreaterThan(before.entries)
    expect404(await t.call("GET", `/v1/consents/proofs/${proofId}`))
    expect404(await t.call("GET", `/v1/consents/proofs/${proofId}/file`))
    expect404(await t.call("GET", `/v1/consents/events/${e.id}`))
    expect((await t.call("GET", `/v1/consents/events?user_id=${e.user.id}`)).body.total).toBe(0)

    // Each erased row has its removal logged, with no digest of a row that is gone.
    const all = (await logRows(t.org.id)).flatMap((r) => JSON.parse(r.changes).changes as Array<{ a: string; s: string; d: string | null }>)
    for (const [table, id] of [
      ["consent_users", e.user.id],
      ["consent_events", e.id],
      ["consent_events", ccpa.id],
      ["consent_proofs", proofId]
    ] as const) {
      const removals = all.filter((c) => c.s === subjectOf(table, t.org.id, id) && c.a === "remove")
      expect(removals.map((c) => c.d), `${table} ${id}`).toEqual([null])
    }
  })
})

describe("consent log: proof reports made before their PDF was kept", () => {
  const pdfOf = async (t: TestTenant, id: string) => {
    const res = await fetch(`${server.url}/v1/consents/proof-reports/${id}/pdf`, { headers: { authorization: `Bearer ${t.token}` } })
    expect(res.status).toBe(200)
    return new Uint8Array(await res.arrayBuffer())
  }
  const bytesHash = (bytes: Uint8Array) => crypto.createHash("sha256").update(bytes).digest("hex")

  it("a report without a kept PDF renders it on its first GET and keeps it: pdf_sha256 is set, later GETs answer the same bytes", async () => {
    const t = await tenant(FEATURES)
    const e = await created(t, "/v1/consents/events", eventBody(t, unique("crm")))
    const report = await created(t, "/v1/consents/proof-reports", { organization_id: t.org.id, user_id: e.user.id })
    // As a report made before PDFs were kept is stored: no PDF, no digest of one.
    expect(await db().run("DELETE FROM consent_proof_report_pdfs WHERE id = ?", [report.id])).toBe(1)
    expect(await db().run("UPDATE consent_proof_reports SET pdf_sha256 = NULL WHERE id = ?", [report.id])).toBe(1)
    expect((await t.call("GET", `/v1/consents/proof-reports/${report.id}`)).body.pdf_sha256).toBeNull()

    const first = await pdfOf(t, report.id)
    const after = (await t.call("GET", `/v1/consents/proof-reports/${report.id}`)).body
    expect(after.pdf_sha256).toBe(bytesHash(first))
    expect(after.report).toEqual(report.report)
    expect(after.sha256).toBe(report.sha256)
    expect(await db().query("SELECT id FROM consent_proof_report_pdfs WHERE id = ?", [report.id])).toHaveLength(1)
    expect(Buffer.from(await pdfOf(t, report.id)).equals(Buffer.from(first))).toBe(true)
  })
})
