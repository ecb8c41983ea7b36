import { createTestDatabase, type TestDatabase } from "@cmp/test-support/database"
import { dataUri, samplePng } from "@cmp/test-support/proof-samples"
import { migrations } from "@cmp/store-sql"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import pg from "pg"
import { afterAll, describe, expect, it } from "vitest"
import { childEnv, killLeftovers, packageDir, repositoryRoot, startServer } from "../built.js"
import { ADMIN, call, type CallOptions, type Reply, storeKind, unique } from "./helpers.js"

/**
 * Backups and restores, as docs/operating.md ("Backups and restores") tells an operator to take
 * them, on the real server (`pnpm start`'s bundle) in child processes:
 *
 * - SQLite: `pnpm backup <file>` while consent events keep arriving, the file copied into a new
 *   directory, a server started on it;
 * - PostgreSQL: `pg_dump -Fc` while consent events keep arriving, `pg_restore` into a new
 *   database, a server started on it; and a database an older release made (the
 *   forward-migration fixture), dumped and restored the same way, upgraded by the current server
 *   on its start.
 *
 * The restored server answers every record acknowledged before the backup began exactly as the
 * first server did, its consent logs verify (`pnpm verify-log` on the restored database too), and
 * a webhook message caught mid-attempt by the backup (claimed, its call still open) is delivered
 * again by the restored server once the claim's lease runs out, even though the first server
 * delivered it since: delivery is at least once across a restore.
 */

const run = promisify(execFile)
const main = path.join(packageDir, "dist", "main.mjs")
/** Retries every second, long enough to outlast a backup: the message stays undelivered until the receiver accepts it. */
const RETRY_SCHEDULE = Array.from({ length: 60 }, () => "1").join(",")
/**
 * A call may stay open long enough for a backup to be taken while it is (the receiver holds it),
 * and a claim a backup caught ends soon after: the restored server takes the message again once
 * the lease has run out, which the default (timeout + 30 s) would make the test wait for.
 */
const WEBHOOK_TIMEOUT_MS = 15_000
const WEBHOOK_LEASE_MS = 16_000
const ENCRYPTION_KEY = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
const dirs: Array<string> = []
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-backup-"))
  dirs.push(dir)
  return dir
}
const databases: Array<TestDatabase> = []

afterAll(async () => {
  killLeftovers()
  for (const db of databases) await db.close()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
  // Dropping the test's databases waits on PostgreSQL, slow on a busy machine.
}, 60_000)

/** The settings every server of this file runs with, on the database `store` names. */
const serverEnv = (store: Record<string, string>) =>
  childEnv({
    ...store,
    ALLOW_HTTP: "true",
    LOG_LEVEL: "Warning",
    ADMIN_API_KEY: ADMIN.key,
    ADMIN_API_SECRET: ADMIN.secret,
    ENCRYPTION_KEY,
    WEBHOOK_ALLOW_HOSTS: "127.0.0.1",
    WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE,
    WEBHOOK_TIMEOUT_MS: String(WEBHOOK_TIMEOUT_MS),
    WEBHOOK_LEASE_MS: String(WEBHOOK_LEASE_MS)
  })

type Server = Awaited<ReturnType<typeof startServer>>

const stop = async (server: Server) => {
  server.child.kill("SIGTERM")
  await server.exited
}

/** A caller of one server; a 5xx fails the test. */
const callerOf = (base: string, token?: string) => async (method: string, route: string, options: CallOptions = {}): Promise<Reply> => {
  const r = await call(base, method, route, { token, ...options })
  expect(r.status, `${method} ${route}: ${r.text.slice(0, 300)}`).toBeLessThan(500)
  return r
}

const must = async (status: number, reply: Promise<Reply>) => {
  const r = await reply
  expect(r.status, r.text.slice(0, 500)).toBe(status)
  return r.body
}

const login = async (base: string, key: string, secret: string) =>
  (await must(201, call(base, "POST", "/v1/sessions", { body: { type: "api-key", key, secret } }))).access_token as string

// ---------------------------------------------------------------- a webhook receiver

/**
 * Answers 503 (`refuse`), holds each call open without an answer (`hold`), or answers 200
 * (`accept`); records every message id it was sent. `accept()` also answers the held calls.
 */
const receiver = async () => {
  const ids: Array<string> = []
  const held: Array<http.ServerResponse> = []
  const state = { mode: "refuse" as "refuse" | "hold" | "accept" }
  const server = http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      ids.push(String(req.headers["webhook-id"]))
      if (state.mode === "hold") held.push(res)
      else res.writeHead(state.mode === "accept" ? 200 : 503).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
  const accept = () => {
    state.mode = "accept"
    for (const res of held.splice(0)) res.writeHead(200).end()
  }
  const close = () => {
    for (const res of held.splice(0)) res.destroy()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  }
  return { url, ids, held, state, accept, close }
}

const eventually = async <T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 20_000): Promise<T> => {
  const until = Date.now() + timeoutMs
  for (;;) {
    const got = await probe()
    if (got !== undefined) return got
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

// ---------------------------------------------------------------- the records

interface Spread {
  /** The organization that keeps receiving consent events. */
  readonly org: string
  readonly key: { readonly id: string; readonly secret: string }
  /** The organization whose webhook message is mid-attempt when the backup is taken. */
  readonly quiet: { readonly org: string; readonly key: string; readonly secret: string; readonly webhook: string }
  /** What to read back: `as` a principal (the operator, or an organization's key), a path. */
  readonly reads: ReadonlyArray<{ readonly as: "operator" | "org" | "quiet"; readonly path: string }>
}

/**
 * An organization with a record of each kind: API keys, a secret, webhooks, properties with a
 * cookie and a vendor, a notice text with its content and a notice config, consent users and
 * events, a proof; and a second organization with one consent event whose webhook message the
 * receiver refuses, so it is pending.
 */
const makeSpread = async (base: string, hookUrl: string): Promise<Spread> => {
  const op = callerOf(base, await login(base, ADMIN.key, ADMIN.secret))
  const organization = async (name: string) => {
    const org = await must(201, op("POST", "/v1/organizations", { body: { name, website: "https://www.example.com" } }))
    const flags = (await must(200, op("GET", `/v1/premium-features?organization_id=${org.id}`))).data[0]
    await must(200, op("PATCH", `/v1/premium-features/${flags.id}`, { body: { consents_api: true, webhooks: true, versions_and_proofs: true } }))
    const key = await must(201, op("POST", "/v1/keys", { body: { organization_id: org.id, name: `${name} backend` } }))
    return { id: org.id as string, key: key.id as string, secret: key.secret as string }
  }
  const A = await organization(unique("backed-up"))
  const t = callerOf(base, await login(base, A.key, A.secret))
  const o = A.id
  const reads: Array<{ as: "operator" | "org" | "quiet"; path: string }> = [
    { as: "operator", path: `/v1/organizations/${o}` },
    { as: "operator", path: `/v1/premium-features?organization_id=${o}` },
    { as: "operator", path: `/v1/quotas?organization_id=${o}` }
  ]
  const made = async (route: string, body: Record<string, unknown>, list = route) => {
    const r = await must(201, t("POST", route, { body }))
    reads.push({ as: "org", path: `${list}/${r.id}` })
    return r
  }
  await made("/v1/keys", { organization_id: o, name: "spare" })
  await made("/v1/secrets", { organization_id: o, name: "signs user ids" })
  await made("/v1/webhooks", { organization_id: o, url: `${hookUrl}/off`, enabled: false })
  const property = await made("/v1/properties", { organization_id: o, name: "Shop", website: "https://shop.example.com" })
  await made("/v1/properties", { organization_id: o, name: "Blog" })
  await made("/v1/cookies", { property_id: property.id, name: "_ga", domain: "shop.example.com", taxonomy_id: "analytics" })
  await made("/v1/vendors", { property_id: property.id, metadata_id: "google-analytics" })
  const text = await made("/v1/widgets/notices/texts", { organization_id: o, name: "banner", platforms: ["web"] })
  await made("/v1/widgets/notices/texts-contents", { organization_id: o, text_id: text.id, content: "# Cookies\n\nWe use them.", includes_purposes: true })
  await made("/v1/widgets/notices/configs", { organization_id: o, config: { platform: "web", text_mode: "custom", consent_duration: 6, consent_duration_unit: "months" } })
  const user = await made("/v1/consents/users", {
    organization_id: o,
    organization_user_id: "crm-0001",
    metadata: { tier: "gold" },
    consents: { purposes: [{ id: "analytics", enabled: true }] }
  })
  const proof = await made("/v1/consents/proofs", { organization_id: o, file: dataUri("image/png", samplePng()) })
  await made("/v1/consents/events", {
    organization_id: o,
    user: { organization_user_id: "crm-0001" },
    consents: { purposes: [{ id: "analytics", enabled: false }, { id: "ads", enabled: true }] },
    proofs_id: [proof.id]
  })
  await made("/v1/consents/events", { id: "order-1001", organization_id: o, user: { organization_user_id: "crm-0002" }, consents: { purposes: [{ id: "ads", enabled: true }] } })
  reads.push(
    { as: "org", path: `/v1/consents/users/${user.id}?regulation=gdpr` },
    { as: "org", path: "/v1/consents/users/crm-0002?$by_organization_user_id=true" },
    { as: "org", path: `/v1/consents/proofs/${proof.id}/file` },
    { as: "org", path: `/v1/keys?organization_id=${o}&$sort[id]=1` },
    { as: "org", path: "/v1/properties?$sort[id]=1" },
    { as: "org", path: "/v1/webhooks?$sort[id]=1" }
  )

  const B = await organization(unique("quiet"))
  const q = callerOf(base, await login(base, B.key, B.secret))
  const hook = await must(201, q("POST", "/v1/webhooks", { body: { organization_id: B.id, url: hookUrl, event_types: ["event.created"] } }))
  await must(201, q("POST", "/v1/consents/events", { body: { organization_id: B.id, user: { organization_user_id: "quiet-1" }, consents: {} } }))
  reads.push({ as: "quiet", path: `/v1/webhooks/${hook.id}` }, { as: "quiet", path: "/v1/consents/events?$sort[id]=1" })
  return { org: o, key: { id: A.key, secret: A.secret }, quiet: { org: B.id, key: B.key, secret: B.secret, webhook: hook.id }, reads }
}

/** What one server answers for every read of the spread, by principal and path. */
const readAll = async (base: string, spread: Spread) => {
  const callers = {
    operator: callerOf(base, await login(base, ADMIN.key, ADMIN.secret)),
    org: callerOf(base, await login(base, spread.key.id, spread.key.secret)),
    quiet: callerOf(base, await login(base, spread.quiet.key, spread.quiet.secret))
  }
  const out: Record<string, unknown> = {}
  for (const r of spread.reads) {
    const reply = await callers[r.as]("GET", r.path)
    expect(reply.status, `${r.as} GET ${r.path}: ${reply.text.slice(0, 300)}`).toBe(200)
    out[`${r.as} ${r.path}`] = reply.body
  }
  return out
}

/** The pending message of the quiet organization's webhook. */
const pendingDelivery = async (base: string, spread: Spread) => {
  const q = callerOf(base, await login(base, spread.quiet.key, spread.quiet.secret))
  const page = await must(200, q("GET", `/v1/webhooks/deliveries?webhook_id=${spread.quiet.webhook}`))
  expect(page.data).toHaveLength(1)
  return page.data[0] as { id: string; status: string }
}

// ---------------------------------------------------------------- writes while the backup runs

/**
 * Consent events for new users, one after the other, until stopped; `acknowledged` lists the ids
 * the server answered 201 for, in order.
 */
const ingest = (base: string, spread: Spread) => {
  const acknowledged: Array<string> = []
  const state = { stopping: false }
  const done = (async () => {
    const t = callerOf(base, await login(base, spread.key.id, spread.key.secret))
    for (let i = 0; !state.stopping; i++) {
      const r = await t("POST", "/v1/consents/events", {
        body: { organization_id: spread.org, user: { organization_user_id: `live-${i}` }, consents: { purposes: [{ id: "analytics", enabled: i % 2 === 0 }] } }
      })
      expect(r.status, r.text).toBe(201)
      acknowledged.push(r.body.id)
    }
  })()
  const until = async (n: number) => {
    while (acknowledged.length < n) await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return { acknowledged, until, stop: async () => {
    state.stopping = true
    await done
  } }
}

/**
 * Runs `backup` while consent events keep arriving, and keeps them arriving until at least one
 * more was acknowledged after the backup began. Answers the events acknowledged before it began,
 * and every event acknowledged.
 */
const backupWhileWriting = async (base: string, spread: Spread, backup: () => Promise<void>) => {
  const writer = ingest(base, spread)
  await writer.until(20)
  const before = writer.acknowledged.slice()
  await backup()
  await writer.until(before.length + 1)
  await writer.stop()
  return { before, all: writer.acknowledged.slice() }
}

/** The ids of every consent event of the spread's organization. */
const eventIds = async (base: string, spread: Spread) => {
  const t = callerOf(base, await login(base, spread.key.id, spread.key.secret))
  const ids: Array<string> = []
  for (;;) {
    const page = await must(200, t("GET", `/v1/consents/events?$sort[id]=1&$limit=1000&$skip=${ids.length}`))
    ids.push(...page.data.map((e: { id: string }) => e.id))
    if (ids.length >= page.total) return ids
  }
}

/**
 * The checks on a restored server: the records read as before; each event acknowledged before
 * the backup began reads as the first server answered it; the events are those of the spread,
 * those acknowledged before the backup began and maybe some acknowledged since, no other; and
 * the consent log verifies.
 */
const checkRestored = async (restored: string, spread: Spread, expected: {
  readonly reads: Record<string, unknown>
  readonly spreadEvents: ReadonlyArray<string>
  readonly events: Record<string, unknown>
  readonly all: ReadonlyArray<string>
}) => {
  expect(await readAll(restored, spread)).toStrictEqual(expected.reads)
  const t = callerOf(restored, await login(restored, spread.key.id, spread.key.secret))
  for (const [id, answer] of Object.entries(expected.events)) {
    expect(await must(200, t("GET", `/v1/consents/events/${id}`)), id).toStrictEqual(answer)
  }
  const ids = new Set(await eventIds(restored, spread))
  const acknowledged = new Set([...expected.spreadEvents, ...expected.all])
  for (const id of [...expected.spreadEvents, ...Object.keys(expected.events)]) expect(ids.has(id), `${id} restored`).toBe(true)
  expect([...ids].filter((id) => !acknowledged.has(id))).toEqual([])
  const log = await must(200, t("GET", "/v1/consents/log/verify"))
  expect(log).toMatchObject({ valid: true, first_invalid: null })
  expect(log.entries).toBeGreaterThanOrEqual(ids.size)
}

/** What the first server answers for the events acknowledged before the backup began. */
const eventsOf = async (base: string, spread: Spread, ids: ReadonlyArray<string>) => {
  const t = callerOf(base, await login(base, spread.key.id, spread.key.secret))
  const out: Record<string, unknown> = {}
  for (const id of ids) out[id] = await must(200, t("GET", `/v1/consents/events/${id}`))
  return out
}

/** `pnpm verify-log` on the database `store` names: exit 0 and a valid log. */
const verifyLog = async (store: Record<string, string>, organization: string) => {
  const { stdout } = await run(process.execPath, [main, "verify-log", "--organization", organization], { env: serverEnv(store), cwd: repositoryRoot })
  expect(JSON.parse(stdout)).toMatchObject({ valid: true, first_invalid: null })
}

/**
 * The whole procedure on one store: a server on `first`, the spread, a backup while writing,
 * the pending message delivered by the first server since, the first server stopped, the backup
 * restored to `second`, a server on it.
 */
const backupAndRestore = async (options: {
  readonly first: Record<string, string>
  readonly backup: () => Promise<void>
  readonly restore: () => Promise<Record<string, string>>
}) => {
  const hook = await receiver()
  try {
    const first = await startServer(serverEnv(options.first))
    const spread = await makeSpread(first.url, hook.url)
    const reads = await readAll(first.url, spread)
    const spreadEvents = await eventIds(first.url, spread)
    // Tried and refused: pending, with retries to come.
    const pending = await eventually(async () => {
      const d = await pendingDelivery(first.url, spread)
      return d.status === "pending" && hook.ids.includes(d.id) ? d : undefined
    }, "the quiet webhook's message to be tried and refused")
    // The next try is held open from before the backup begins until after it ends, so the backup
    // holds the message claimed by the first server, as any backup may catch a message.
    hook.state.mode = "hold"
    await eventually(async () => (hook.held.length > 0 ? true : undefined), "a try held open")
    const { all, before } = await backupWhileWriting(first.url, spread, options.backup)
    expect(hook.held.length, "the try was still open when the backup ended").toBe(1)
    const events = await eventsOf(first.url, spread, before)
    // The first server delivers the message after the backup was taken.
    hook.accept()
    await eventually(async () => ((await pendingDelivery(first.url, spread)).status === "delivered" ? true : undefined), "the first delivery")
    const deliveredBefore = hook.ids.filter((id) => id === pending.id).length
    await stop(first)

    const store = await options.restore()
    await verifyLog(store, spread.org)
    await verifyLog(store, spread.quiet.org)
    const restored = await startServer(serverEnv(store))
    try {
      await checkRestored(restored.url, spread, { reads, spreadEvents, events, all })
      // The backup holds the message as claimed: the restored server takes it again when the
      // claim's lease has run out, and sends it under the same id.
      await eventually(
        async () => ((await pendingDelivery(restored.url, spread)).status === "delivered" ? true : undefined),
        "the second delivery",
        WEBHOOK_LEASE_MS + 20_000
      )
      expect(hook.ids.filter((id) => id === pending.id).length).toBe(deliveredBefore + 1)
    } finally {
      await stop(restored)
    }
  } finally {
    await hook.close()
  }
}

// ---------------------------------------------------------------- SQLite

describe.skipIf(storeKind !== "sqlite")("SQLite: pnpm backup while the server writes, restored into a new directory", () => {
  it("the restored server answers every record acknowledged before the backup began, its logs verify, and a webhook message caught mid-attempt is delivered again", async () => {
    const dir = tempDir()
    const file = path.join(dir, "consent.db")
    const backupFile = path.join(tempDir(), "consent-backup.db")
    let printed: any
    await backupAndRestore({
      first: { SQLITE_PATH: file },
      backup: async () => {
        const { stdout } = await run(process.execPath, [main, "backup", backupFile], { env: serverEnv({ SQLITE_PATH: file }), cwd: repositoryRoot })
        printed = JSON.parse(stdout)
      },
      restore: async () => {
        // Restoring is copying the backup to where SQLITE_PATH points, in a directory of its own.
        const restored = path.join(tempDir(), "consent.db")
        fs.copyFileSync(backupFile, restored)
        return { SQLITE_PATH: restored }
      }
    })
    expect(printed).toStrictEqual({ path: backupFile, bytes: fs.statSync(backupFile).size, pages: expect.any(Number), duration_ms: expect.any(Number) })
    expect(printed.pages * 4096).toBe(printed.bytes)
    // Readable by its owner only, as the database it copies: it holds the same keys.
    expect(fs.statSync(backupFile).mode & 0o077).toBe(0)
  }, 120_000)

  it("a backup never replaces a file, names what is wrong, and refuses PostgreSQL", async () => {
    const dir = tempDir()
    const file = path.join(dir, "consent.db")
    const backupFile = path.join(dir, "backup.db")
    const attempt = (args: Array<string>, store: Record<string, string> = { SQLITE_PATH: file }) =>
      run(process.execPath, [main, "backup", ...args], { env: serverEnv(store), cwd: repositoryRoot }).then(
        () => ({ code: 0, stderr: "" }),
        (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr.trim() })
      )
    expect(await attempt([backupFile])).toStrictEqual({ code: 1, stderr: `There is no database at ${file}` })
    await run(process.execPath, [main, "bootstrap"], { env: serverEnv({ SQLITE_PATH: file }), cwd: repositoryRoot })
    expect((await attempt([backupFile])).code).toBe(0)
    expect(await attempt([backupFile])).toStrictEqual({ code: 1, stderr: `${backupFile} exists: a backup never replaces a file` })
    expect(await attempt([file])).toStrictEqual({ code: 1, stderr: `${file} exists: a backup never replaces a file` })
    expect((await attempt([])).code).toBe(2)
    expect(await attempt([path.join(dir, "b2.db")], { DATABASE_URL: "postgres://postgres@127.0.0.1:1/none" })).toMatchObject({ code: 2, stderr: expect.stringMatching(/pg_dump -Fc/) })
    // Nothing but the database (with its WAL files) and the one backup: no partial copy left.
    expect(fs.readdirSync(dir).filter((f) => !f.startsWith("consent.db")).sort()).toStrictEqual(["backup.db"])
  }, 60_000)
})

// ---------------------------------------------------------------- PostgreSQL

const hasPgTools = ["pg_dump", "pg_restore"].every((tool) =>
  (process.env.PATH ?? "").split(path.delimiter).some((d) => d !== "" && fs.existsSync(path.join(d, tool))))

/**
 * pg_dump dumps servers of its own major version or older only, and the in-memory PGlite the
 * suite uses without DATABASE_URL is PostgreSQL 18 behind a socket of one connection: these
 * tests need a PostgreSQL server and its client tools.
 */
const pgReason = !hasPgTools ? "pg_dump or pg_restore is not installed" : !process.env.DATABASE_URL ? "DATABASE_URL is unset (PGlite cannot be dumped by pg_dump)" : undefined

const newDatabase = async () => {
  const db = await createTestDatabase()
  databases.push(db)
  return db
}
const pgDump = (url: string, file: string) => run("pg_dump", ["--format=custom", "--file", file, url])
const pgRestore = (file: string, url: string) => run("pg_restore", ["--no-owner", "--no-privileges", "--exit-on-error", "--dbname", url, file])

describe.skipIf(storeKind !== "postgres" || pgReason !== undefined)(`PostgreSQL: pg_dump -Fc and pg_restore into a new database${pgReason ? ` (skipped: ${pgReason})` : ""}`, () => {
  it("a dump taken while the server writes, restored into a new database: every record acknowledged before it, logs that verify, a message caught mid-attempt delivered again", async () => {
    const source = await newDatabase()
    const dumpFile = path.join(tempDir(), "consent.dump")
    await backupAndRestore({
      first: { DATABASE_URL: source.url },
      backup: async () => {
        await pgDump(source.url, dumpFile)
      },
      restore: async () => {
        const target = await newDatabase()
        await pgRestore(dumpFile, target.url)
        return { DATABASE_URL: target.url }
      }
    })
  }, 120_000)

  it("a database an older release made, dumped and restored into a new database, is upgraded by the current server on start and answers as the same database upgraded in place", async () => {
    const FIXTURE = path.resolve(packageDir, "..", "test-support", "fixtures", "c26579d")
    const expected = JSON.parse(fs.readFileSync(path.join(FIXTURE, "expected.postgres.json"), "utf8"))
    const old = await newDatabase()
    await old.exec(fs.readFileSync(path.join(FIXTURE, "postgres.sql"), "utf8"))
    const dumpFile = path.join(tempDir(), "old.dump")
    await pgDump(old.url, dumpFile)
    const restoredDb = await newDatabase()
    await pgRestore(dumpFile, restoredDb.url)
    const latest = Math.max(...Object.keys(migrations).map((name) => Number.parseInt(name, 10)))
    expect(await lastMigration(restoredDb.url)).toBeLessThan(latest)

    // The fixture's settings: its operator key, and the key that sealed its webhook secrets.
    const fixtureEnv = (url: string) => ({ ...serverEnv({ DATABASE_URL: url }), ADMIN_API_KEY: expected.admin.key, ADMIN_API_SECRET: expected.admin.secret, WEBHOOK_DISPATCHER: "false" })
    const answers = async (url: string) => {
      const server = await startServer(fixtureEnv(url))
      try {
        const tokens: Record<string, string> = {
          operator: await login(server.url, expected.admin.key, expected.admin.secret),
          A: await login(server.url, expected.ids.A.key_id, expected.ids.A.key_secret),
          B: await login(server.url, expected.ids.B.key_id, expected.ids.B.key_secret)
        }
        const out: Record<string, unknown> = {}
        for (const r of expected.records) {
          const reply = await call(server.url, "GET", r.path, { token: tokens[r.as] })
          const status = releasedOnStart(r) ? 404 : 200
          expect(reply.status, `${r.as} GET ${r.path}: ${reply.text.slice(0, 300)}`).toBe(status)
          out[`${r.as} ${r.path}`] = withoutDrawnValues(reply.body)
        }
        for (const o of [expected.ids.A, expected.ids.B]) {
          const log = await must(200, call(server.url, "GET", `/v1/consents/log/verify?organization_id=${o.organization_id}`, { token: tokens.operator }))
          expect(log).toMatchObject({ valid: true, first_invalid: null })
          out[`log ${o.organization_id}`] = log.entries
        }
        return out
      } finally {
        await stop(server)
      }
    }
    const restored = await answers(restoredDb.url)
    const inPlace = await answers(old.url)
    expect(Object.keys(restored).length).toBeGreaterThan(100)
    expect(restored).toStrictEqual(inPlace)
    expect(await lastMigration(restoredDb.url)).toBe(latest)
    await verifyLog({ DATABASE_URL: restoredDb.url }, expected.ids.A.organization_id)
  }, 120_000)
})

/**
 * A page host the fixture holds unproven (`draft` or `failed`) is released by the first start
 * after the upgrade once it is seven days old (docs/decisions.md, "Existing databases"): the
 * fixture was made on a fixed day, so from a week after it on, both servers remove it on start.
 */
const releasedOnStart = (record: { path: string; body: any }) =>
  record.path.startsWith("/v1/domains/") && ["privacy-center", "preference-center"].includes(record.body.usage) &&
  ["draft", "failed"].includes(record.body.status) && Date.parse(record.body.created_at) + 7 * 24 * 3_600_000 <= Date.now()

/** The last migration the database at `url` records. */
const lastMigration = async (url: string) => {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return Number((await client.query("SELECT max(migration_id) AS id FROM effect_sql_migrations")).rows[0].id)
  } finally {
    await client.end()
  }
}

/** A page host's TXT value is drawn at random by the migration that made it: it differs between two upgrades of one database. */
const withoutDrawnValues = (body: any): any => {
  const strip = (x: any) => (x?.verification?.value === undefined ? x : { ...x, verification: { ...x.verification, value: "(drawn)" } })
  return Array.isArray(body?.data) ? { ...body, data: body.data.map(strip) } : strip(body)
}
