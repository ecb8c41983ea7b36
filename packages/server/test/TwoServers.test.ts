import { createTestDatabase, type TestDatabase } from "@cmp/test-support/database"
import { dataUri, samplePdf } from "@cmp/test-support/proof-samples"
import { type ChildProcess, spawn } from "node:child_process"
import * as crypto from "node:crypto"
import * as path from "node:path"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

/**
 * Two API processes on two ports against one PostgreSQL and nothing else: what one writes,
 * the other reads; a token from one works on the other (the signing key lives in the
 * database); optimistic versions hold across processes; the consent log of one organization
 * written by both at once stays one set of unbroken chains.
 */
const main = path.join(import.meta.dirname, "..", "src", "main.ts")
const tsx = path.join(import.meta.dirname, "..", "node_modules", ".bin", "tsx")
const children: Array<ChildProcess> = []
/** What each server printed, so that a failure can say what the servers logged about it. */
const printed: Array<() => string> = []
/** The servers' error lines (a 500's cause), for an assertion's message. */
const serverErrors = () => printed.flatMap((out) => out().split("\n").filter((line) => /level=(ERROR|FATAL)|"(logLevel|level)":"(ERROR|FATAL)"/.test(line))).join("\n")
let db: TestDatabase
let a: string
let b: string

const start = (url: string, poolSize: number) =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(tsx, [main], {
      env: {
        ...process.env,
        DATABASE_URL: url,
        DATABASE_POOL_SIZE: String(poolSize),
        PORT: "0",
        ALLOW_HTTP: "true",
        LOG_LEVEL: "Warning",
        ADMIN_API_KEY: "admin",
        ADMIN_API_SECRET: "admin-secret-0123456789"
      }
    })
    children.push(child)
    let out = ""
    printed.push(() => out)
    child.stdout.on("data", (d) => {
      out += String(d)
      const m = /"url":"([^"]+)"/.exec(out)
      if (m) resolve(m[1]!)
    })
    child.stderr.on("data", (d) => (out += String(d)))
    child.on("exit", (code) => reject(new Error(`server exited with ${code}: ${out}`)))
  })

beforeAll(async () => {
  db = await createTestDatabase({ clients: 2 })
  const pool = db.maxConnections ?? 4
  if (db.kind === "postgres") {
    // Both start at once on an empty database: migrations and bootstrap must not collide.
    ;[a, b] = await Promise.all([start(db.url, pool), start(db.url, pool)])
  } else {
    a = await start(db.url, pool)
    b = await start(db.url, pool)
  }
}, 90_000)

afterAll(async () => {
  for (const c of children) c.kill("SIGTERM")
  await Promise.all(children.map((c) => new Promise((resolve) => (c.exitCode !== null ? resolve(null) : c.once("exit", resolve)))))
  await db?.close()
})

const json = async (url: string, method: string, body?: unknown, token?: string) => {
  const res = await fetch(url, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token ? { authorization: `Bearer ${token}` } : {})
    },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  return { status: res.status, body: await res.json() as any }
}

/** Users written once each by the concurrent-writers test. */
const MANY = 400

const sha256 = (s: string) => crypto.createHash("sha256").update(s, "utf8").digest("hex")

/** Runs `tasks` with at most `width` of them in flight. */
const pooled = async <A>(tasks: ReadonlyArray<() => Promise<A>>, width: number): Promise<Array<A>> => {
  const out: Array<A> = []
  let next = 0
  const lane = async () => {
    while (next < tasks.length) {
      const i = next++
      out[i] = await tasks[i]!()
    }
  }
  await Promise.all(Array.from({ length: width }, lane))
  return out
}

describe(`two servers on one PostgreSQL (${process.env.DATABASE_URL ? "DATABASE_URL" : "PGlite"})`, () => {
  it("a write through one is visible through the other, with one shared signing key", async () => {
    expect(a).not.toBe(b)
    const session = await json(`${a}/v1/sessions`, "POST", { type: "api-key", key: "admin", secret: "admin-secret-0123456789" })
    expect(session.status).toBe(201)
    const token = session.body.access_token as string

    const created = await json(`${a}/v1/organizations`, "POST", { name: "Written through A" }, token)
    expect(created.status).toBe(201)
    const seen = await json(`${b}/v1/organizations/${created.body.id}`, "GET", undefined, token)
    expect(seen.status).toBe(200)
    expect(seen.body).toEqual(created.body)

    // One operator organization and one admin key, however many servers bootstrapped.
    const keys = await json(`${b}/v1/keys?is_internal=true`, "GET", undefined, token)
    expect(keys.body.total).toBe(1)

    const viaB = await json(`${b}/v1/organizations/${created.body.id}`, "PATCH", { website: "https://b.example", version: 1 }, token)
    expect(viaB.status).toBe(200)
    expect(viaB.body.version).toBe(2)
    const staleViaA = await json(`${a}/v1/organizations/${created.body.id}`, "PATCH", { website: "https://a.example", version: 1 }, token)
    expect(staleViaA.status).toBe(409)
    const final = await json(`${a}/v1/organizations/${created.body.id}`, "GET", undefined, token)
    expect(final.body.website).toBe("https://b.example")
  }, 30_000)

  // PGlite's socket cannot serve two processes' overlapping statements: concurrency needs a real server.
  it.skipIf(!process.env.DATABASE_URL)(
    "both writing one organization's consent events at once: every acknowledged event is in the log once, each chain numbered 1..n without a gap",
    async () => {
      const session = await json(`${a}/v1/sessions`, "POST", { type: "api-key", key: "admin", secret: "admin-secret-0123456789" })
      expect(session.status).toBe(201)
      const token = session.body.access_token as string
      const org = await json(`${a}/v1/organizations`, "POST", { name: "Written through both" }, token)
      expect(org.status).toBe(201)
      const orgId = org.body.id as string
      const flags = (await json(`${a}/v1/premium-features?organization_id=${orgId}`, "GET", undefined, token)).body.data[0]
      const on = await json(`${b}/v1/premium-features/${flags.id}`, "PATCH", { consents_api: true, versions_and_proofs: true }, token)
      expect(on.status).toBe(200)

      // 400 users with one event each, from either server; and 4 users with 12 events each, half
      // from each server, interleaved, the first of them racing to create the user. Every fifth
      // event carries an inline proof (a logged row of its own, on the user's chain). Two writes
      // of one user at once are optimistic writers of its row: the loser is a 409 that wrote
      // nothing, and is sent again as the answer says (the same id: a half-written first attempt
      // would make every retry a duplicate id).
      const writes: Array<{ id: string; server: string; user: string }> = []
      for (let u = 0; u < MANY; u++) writes.push({ id: `tw-many-${u}`, server: u % 2 === 0 ? a : b, user: `many-${u}` })
      for (let k = 0; k < 12; k++) {
        for (let u = 0; u < 4; u++) writes.push({ id: `tw-hot-${u}-${k}`, server: k % 2 === 0 ? a : b, user: `hot-${u}` })
      }
      const conflicts: Array<string> = []
      const send = async (w: (typeof writes)[number], n: number) => {
        for (let attempt = 0;; attempt++) {
          const r = await json(`${w.server}/v1/consents/events`, "POST", {
            id: w.id,
            organization_id: orgId,
            user: { organization_user_id: w.user },
            consents: { purposes: [{ id: "analytics", enabled: n % 2 === 0 }] },
            ...(n % 5 === 0 ? { proofs: [{ file: dataUri("application/pdf", samplePdf(`consent of ${w.id}`)) }] } : {})
          }, token)
          const lostRace = r.status === 409 && (r.body?.errors?.version !== undefined || r.body?.errors?.organization_user_id !== undefined)
          if (!lostRace || attempt === 10) return r
          conflicts.push(w.id)
        }
      }
      const replies = await pooled(writes.map((w, n) => () => send(w, n)), 16)
      const refused = replies.flatMap((r, n) => (r.status === 201 ? [] : [`${writes[n]!.id}: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`]))
      expect(refused, serverErrors()).toEqual([])
      // Only users written from both servers at once lose races.
      expect(conflicts.filter((id) => !id.startsWith("tw-hot-"))).toEqual([])
      const acknowledged = writes.map((w) => w.id)

      // Both servers verify the same log, and find it whole.
      const viaA = await json(`${a}/v1/consents/log/verify?organization_id=${orgId}`, "GET", undefined, token)
      const viaB = await json(`${b}/v1/consents/log/verify?organization_id=${orgId}`, "GET", undefined, token)
      expect(viaA.status).toBe(200)
      expect(viaA.body).toMatchObject({ valid: true, first_invalid: null })
      expect(viaB.body).toEqual(viaA.body)
      // Transactions that overlap commit together (group commit), so an entry may hold several
      // events: what each entry holds is checked below.
      expect(viaA.body.entries).toBeGreaterThan(0)

      const client = new pg.Client({ connectionString: db.url })
      await client.connect()
      try {
        const entries = (await client.query(
          "SELECT shard, seq, changes FROM consent_log WHERE organization_id = $1 ORDER BY shard, seq",
          [orgId]
        )).rows as Array<{ shard: number; seq: string | number; changes: string }>
        expect(entries.length).toBe(viaA.body.entries)
        // Each chain is 1..n in order, and its head is its last entry.
        const bySeq = new Map<number, Array<number>>()
        for (const e of entries) bySeq.set(Number(e.shard), [...(bySeq.get(Number(e.shard)) ?? []), Number(e.seq)])
        for (const [shard, seqs] of bySeq) expect(seqs, `shard ${shard}`).toEqual(seqs.map((_, i) => i + 1))
        const heads = (await client.query("SELECT shard, seq FROM consent_log_heads WHERE organization_id = $1", [orgId])).rows
        expect(Object.fromEntries(heads.map((h) => [Number(h.shard), Number(h.seq)])))
          .toEqual(Object.fromEntries([...bySeq].map(([shard, seqs]) => [shard, seqs.length])))
        // Every acknowledged event is created by exactly one entry; no other event is.
        const created = new Map<string, number>()
        for (const e of entries) {
          for (const c of JSON.parse(e.changes).changes as Array<{ a: string; k: string; s: string }>) {
            if (c.k === "event" && c.a === "create") created.set(c.s, (created.get(c.s) ?? 0) + 1)
          }
        }
        const subject = (id: string) => sha256(`consent_events\n${orgId}\n${id}`)
        expect(acknowledged.filter((id) => created.get(subject(id)) !== 1)).toEqual([])
        expect(created.size).toBe(acknowledged.length)
        // Users: one per user named, whichever server won each race.
        const users = new Set<string>()
        for (const e of entries) {
          for (const c of JSON.parse(e.changes).changes as Array<{ a: string; k: string; s: string }>) {
            if (c.k === "user" && c.a === "create") users.add(c.s)
          }
        }
        expect(users.size).toBe(MANY + 4)
      } finally {
        await client.end()
      }
    },
    120_000
  )

  it.skipIf(!process.env.DATABASE_URL)(
    "a proof removed through one while an event names it through the other: never both, and the log still verifies",
    async () => {
      const session = await json(`${a}/v1/sessions`, "POST", { type: "api-key", key: "admin", secret: "admin-secret-0123456789" })
      const token = session.body.access_token as string
      const org = await json(`${a}/v1/organizations`, "POST", { name: "Proofs raced" }, token)
      expect(org.status).toBe(201)
      const orgId = org.body.id as string
      const flags = (await json(`${a}/v1/premium-features?organization_id=${orgId}`, "GET", undefined, token)).body.data[0]
      expect((await json(`${a}/v1/premium-features/${flags.id}`, "PATCH", { consents_api: true, versions_and_proofs: true }, token)).status).toBe(200)
      const proofs: Array<string> = []
      for (let n = 0; n < 24; n++) {
        const p = await json(`${b}/v1/consents/proofs`, "POST", { organization_id: orgId, file: dataUri("application/pdf", samplePdf(`proof ${n}`)) }, token)
        expect(p.status).toBe(201)
        proofs.push(p.body.id)
      }
      // Each proof is removed through A while B names it: in a new event (even rounds, for a user
      // of its own), or by patching an event made before (odd rounds).
      const event = (n: number, proofsId: Array<string>) => ({
        id: `raced-${n}`,
        organization_id: orgId,
        user: { organization_user_id: `raced-${n}` },
        consents: { purposes: [{ id: "analytics", enabled: true }] },
        proofs_id: proofsId
      })
      for (let n = 1; n < proofs.length; n += 2) expect((await json(`${b}/v1/consents/events`, "POST", event(n, []), token)).status).toBe(201)
      const races = await pooled(
        proofs.map((id, n) => async () => {
          const [removed, named] = await Promise.all([
            json(`${a}/v1/consents/proofs/${id}`, "DELETE", undefined, token),
            n % 2 === 0
              ? json(`${b}/v1/consents/events`, "POST", event(n, [id]), token)
              : json(`${b}/v1/consents/events/raced-${n}`, "PATCH", { proofs_id: [id] }, token)
          ])
          // A patch that wins answers 200 rather than 201.
          return { id, n, removed: removed.status, named: named.status === 200 ? 201 : named.status, body: named.body }
        }),
        8
      )
      const problems: Array<string> = []
      for (const r of races) {
        // Exactly one wins: the removal (the event then names an unknown proof: 400), or the event (the removal: 409).
        const ok = (r.removed === 200 && r.named === 400) || (r.removed === 409 && r.named === 201)
        if (!ok) problems.push(`${r.id}: DELETE ${r.removed}, event ${r.n % 2 === 0 ? "create" : "patch"} ${r.named} ${JSON.stringify(r.body).slice(0, 200)}`)
        if (r.named === 201) {
          const proof = await json(`${a}/v1/consents/proofs/${r.id}`, "GET", undefined, token)
          if (proof.status !== 200) problems.push(`${r.id}: named by raced-${r.n} but GET answers ${proof.status}`)
        }
      }
      expect(problems).toEqual([])
      const log = await json(`${b}/v1/consents/log/verify?organization_id=${orgId}`, "GET", undefined, token)
      expect(log.body).toMatchObject({ valid: true, first_invalid: null })
    },
    60_000
  )

  it.skipIf(!process.env.DATABASE_URL)(
    "a user erased through one while an event with a proof is recorded for it through the other: no event or proof outlives its user",
    async () => {
      const session = await json(`${a}/v1/sessions`, "POST", { type: "api-key", key: "admin", secret: "admin-secret-0123456789" })
      const token = session.body.access_token as string
      const org = await json(`${a}/v1/organizations`, "POST", { name: "Erasure raced" }, token)
      const orgId = org.body.id as string
      const flags = (await json(`${a}/v1/premium-features?organization_id=${orgId}`, "GET", undefined, token)).body.data[0]
      expect((await json(`${a}/v1/premium-features/${flags.id}`, "PATCH", { consents_api: true, versions_and_proofs: true }, token)).status).toBe(200)
      const event = (n: number, k: number) => ({
        id: `erased-${n}-${k}`,
        organization_id: orgId,
        user: { id: `person-${n}` },
        consents: { purposes: [{ id: "analytics", enabled: k % 2 === 0 }] },
        proofs: [{ file: dataUri("application/pdf", samplePdf(`erased-${n}-${k}`)) }]
      })
      for (let n = 0; n < 16; n++) expect((await json(`${a}/v1/consents/events`, "POST", event(n, 0), token)).status).toBe(201)
      const races = await pooled(
        Array.from({ length: 16 }, (_, n) => async () => {
          const [erased, recorded] = await Promise.all([
            json(`${a}/v1/consents/users/person-${n}`, "DELETE", undefined, token),
            json(`${b}/v1/consents/events`, "POST", event(n, 1), token)
          ])
          return { n, erased: erased.status, recorded: recorded.status, body: recorded.body }
        }),
        8
      )
      const problems: Array<string> = []
      for (const r of races) {
        // Both may pass one after the other. A loser of the race for the user's row writes nothing:
        // the erasure as a stale version (409), the event as a stale version (409) or with its user
        // gone while it was being changed (404). At least one of them passes.
        const ok = [200, 409].includes(r.erased) && [201, 404, 409].includes(r.recorded) && (r.erased === 200 || r.recorded === 201)
        if (!ok) {
          problems.push(`person-${r.n}: DELETE ${r.erased}, event ${r.recorded} ${JSON.stringify(r.body).slice(0, 200)}`)
        }
        // Whatever won, every event left names a user that exists, and every proof left is named by an event.
        const events = (await json(`${a}/v1/consents/events?user_id=person-${r.n}`, "GET", undefined, token)).body
        const user = await json(`${a}/v1/consents/users/person-${r.n}`, "GET", undefined, token)
        if (events.total > 0 && user.status !== 200) problems.push(`person-${r.n}: ${events.total} events outlive their user (GET user ${user.status})`)
        for (const e of events.data) {
          for (const id of e.proofs_id) {
            const proof = await json(`${a}/v1/consents/proofs/${id}`, "GET", undefined, token)
            if (proof.status !== 200) problems.push(`person-${r.n}: ${e.id} names proof ${id}, GET ${proof.status}`)
          }
        }
      }
      const proofs = (await json(`${a}/v1/consents/proofs?organization_id=${orgId}&$limit=1000`, "GET", undefined, token)).body.data
      const named = new Set<string>()
      const all = (await json(`${a}/v1/consents/events?organization_id=${orgId}&$limit=1000`, "GET", undefined, token)).body.data
      for (const e of all) for (const id of e.proofs_id) named.add(id)
      for (const p of proofs) if (!named.has(p.id)) problems.push(`proof ${p.id} outlives its event`)
      expect(problems).toEqual([])
      const log = await json(`${b}/v1/consents/log/verify?organization_id=${orgId}`, "GET", undefined, token)
      expect(log.body).toMatchObject({ valid: true, first_invalid: null })
    },
    60_000
  )

  it.skipIf(!process.env.DATABASE_URL)("proof reports asked through both at once never pass the monthly quota", async () => {
    const session = await json(`${a}/v1/sessions`, "POST", { type: "api-key", key: "admin", secret: "admin-secret-0123456789" })
    const token = session.body.access_token as string
    const org = await json(`${a}/v1/organizations`, "POST", { name: "Reports raced" }, token)
    const orgId = org.body.id as string
    const flags = (await json(`${a}/v1/premium-features?organization_id=${orgId}`, "GET", undefined, token)).body.data[0]
    expect((await json(`${a}/v1/premium-features/${flags.id}`, "PATCH", { consents_api: true, versions_and_proofs: true }, token)).status).toBe(200)
    const user = await json(`${a}/v1/consents/events`, "POST", {
      organization_id: orgId,
      user: { organization_user_id: "reported" },
      consents: { purposes: [{ id: "analytics", enabled: true }] }
    }, token)
    expect(user.status).toBe(201)
    // The default quota: 10 a month.
    const replies = await Promise.all(Array.from({ length: 24 }, (_, n) =>
      json(`${n % 2 === 0 ? a : b}/v1/consents/proof-reports`, "POST", { organization_id: orgId, organization_user_id: "reported" }, token)))
    const statuses = replies.map((r) => r.status)
    expect(statuses.filter((s) => s === 201).length, JSON.stringify(statuses)).toBe(10)
    expect(statuses.filter((s) => s === 429).length, JSON.stringify(statuses)).toBe(14)
    const listed = await json(`${b}/v1/consents/proof-reports?organization_id=${orgId}&$limit=0`, "GET", undefined, token)
    expect(listed.body.total).toBe(10)
  }, 60_000)
})
