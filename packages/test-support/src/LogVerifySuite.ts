import {
  ConsentLog,
  ConsentLogStore,
  ConsentUsersResource,
  Digests,
  type LogScratch,
  type Repository,
  type ScratchMismatch,
  Storage,
  type StorePorts,
  UnitOfWork,
  VERIFY_PAGE,
  verifyLog
} from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { digestsLayer } from "./EngineServices.js"

/**
 * The consent log's verify on a real store, through its ports: a log several pages long is
 * written by the log's own layer (rows of `consent_users`, each transaction one entry per chain
 * it touched), then verified while the store's ports are watched, or after the rows or the log
 * were edited behind the ports' back. Each store package registers it on itself.
 */

const ORG = "org-verify"
const USERS = "consent_users"
const at = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * 1000).toISOString()

/** A user's row as the store keeps it. */
const userRow = (id: string, n: number) => ({
  id,
  organization_id: ORG,
  organization_user_id: null,
  metadata: null,
  country: null,
  consent_states: {},
  created_at: at(n),
  updated_at: at(n),
  version: 1
})

/** `perChain` ids of users for each chain, in id order within a chain. */
const idsByChain = (perChain: number) => {
  const chains: Array<Array<string>> = Array.from({ length: 16 }, () => [])
  for (let i = 0; chains.some((c) => c.length < perChain); i++) {
    const id = `u-${String(i).padStart(6, "0")}`
    const chain = chains[ConsentLog.shardOf(id)]!
    if (chain.length < perChain) chain.push(id)
  }
  return chains
}

/** The log's own storage over the store's: every write of a logged table is logged. */
const world = (store: Layer.Layer<StorePorts | SqlClient.SqlClient, unknown>) => {
  const base = Layer.merge(store, digestsLayer)
  return Layer.merge(base, ConsentLog.layer.pipe(Layer.provide(base)))
}

const users = Effect.map(Storage, (s) => s.repository(ConsentUsersResource.tableDef) as unknown as Repository)

/**
 * Writes `rounds` transactions, each creating one user on every chain (one entry per chain),
 * and answers the ids by chain: `chains[c][r]` was created in round `r`, entry `r + 1` of chain `c`.
 */
const fill = (rounds: number) =>
  Effect.gen(function*() {
    const uow = yield* UnitOfWork
    const repo = yield* users
    const chains = idsByChain(rounds)
    for (let r = 0; r < rounds; r++) {
      yield* uow.transaction(Effect.forEach(chains, (ids) => repo.create(userRow(ids[r]!, r)), { discard: true }))
    }
    return chains
  }).pipe(Effect.orDie)

/** What the verify asked of the store's ports: the largest page or batch, and how much went through the scratch. */
interface Watched {
  largest: number
  changes: number
  rows: number
  rowBatches: number
  pages: number
  mismatches: number
}

/** Runs the verify with the store's ports watched. */
const watchedVerify = Effect.gen(function*() {
  const seen: Watched = { largest: 0, changes: 0, rows: 0, rowBatches: 0, pages: 0, mismatches: 0 }
  const size = (n: number) => {
    seen.largest = Math.max(seen.largest, n)
  }
  const log = yield* ConsentLogStore
  const storage = yield* Storage
  const watch = (s: LogScratch): LogScratch => ({
    noteChanges: (batch) => (size(batch.length), (seen.changes += batch.length), s.noteChanges(batch)),
    noteRows: (batch) => (size(batch.length), (seen.rows += batch.length), seen.rowBatches++, s.noteRows(batch)),
    mismatches: (after, limit) =>
      Effect.tap(s.mismatches(after, limit), (page) => {
        size(limit)
        size(page.found.length)
        seen.pages++
        seen.mismatches += page.found.length
      })
  })
  const answer = yield* verifyLog(ORG).pipe(
    Effect.provideService(ConsentLogStore, {
      ...log,
      entries: (organizationId, options) => (size(options.limit), log.entries(organizationId, options)),
      scratch: Effect.map(log.scratch, watch)
    }),
    Effect.provideService(Storage, {
      repository: (table) => {
        const repo = storage.repository(table)
        return { ...repo, find: (query) => (size(query.limit), repo.find(query)) }
      }
    })
  )
  return { answer, seen }
})

/** Every entry of the organization's log, and their changes. */
const logOf = Effect.gen(function*() {
  const log = yield* ConsentLogStore
  const entries = yield* log.entries(ORG, { limit: 1_000_000 })
  return entries.map((e) => ({ ...e, named: (JSON.parse(e.changes) as ConsentLog.EntryText).changes }))
})

/** The (shard, seq) of the latest entry naming a user. */
const latestNaming = (id: string) =>
  Effect.gen(function*() {
    const digests = yield* Digests
    const subject = ConsentLog.subjectOf(digests.sha256, USERS, ORG, id)
    const naming = (yield* logOf).filter((e) => e.named.some((c) => c.s === subject))
    const last = naming[naming.length - 1]!
    return { shard: last.shard, seq: last.seq }
  })

const sqlOf = Effect.map(SqlClient.SqlClient, (sql) => sql.withoutTransforms())

/** The tables a verify's scratch left behind: none once it has ended. */
const scratchTables = Effect.flatMap(sqlOf, (sql) =>
  Effect.map(
    sql.onDialectOrElse({
      pg: () => sql<{ name: string }>`SELECT tablename AS name FROM pg_tables WHERE tablename LIKE 'consent_log_verify_%' AND tablename <> 'consent_log_verify_runs'`,
      orElse: () => sql<{ name: string }>`SELECT name FROM sqlite_temp_master WHERE type = 'table'`
    }),
    (rows) => rows.map((r) => r.name)
  ))

export const logVerifySuite = (name: string, makeLayer: () => Layer.Layer<StorePorts | SqlClient.SqlClient, unknown>) =>
  describe(`consent log verify: ${name}`, () => {
    const run = <A, E>(effect: Effect.Effect<A, E, StorePorts | SqlClient.SqlClient | Digests>) =>
      Effect.provide(effect, world(makeLayer()))
    const timeout = { timeout: 120_000 }

    it.effect("a log several pages long: every change and row goes through the scratch, none of it held beyond a page", () =>
      run(Effect.gen(function*() {
        const rounds = Math.ceil((VERIFY_PAGE * 2.5) / 16)
        const chains = yield* fill(rounds)
        // Later entries: a user changed twice, one removed (its latest change says so).
        const repo = yield* users
        const uow = yield* UnitOfWork
        const [a, b] = [chains[3]![0]!, chains[5]![1]!]
        yield* uow.transaction(repo.patch({ organization_id: ORG, id: a }, { country: "FR" }, 1))
        yield* uow.transaction(repo.patch({ organization_id: ORG, id: a }, { country: "DE" }, 2))
        yield* uow.transaction(repo.remove({ organization_id: ORG, id: b }))

        const { answer, seen } = yield* watchedVerify
        const log = yield* logOf
        assert.deepStrictEqual(answer.first_invalid, null)
        assert.isTrue(answer.valid)
        assert.strictEqual(answer.entries, log.length)
        assert.isAbove(log.length, VERIFY_PAGE * 2)
        // Every change of the log and every row went to the scratch, in batches of a page at
        // most; it compared them a page of subjects at a time, and found nothing amiss.
        assert.strictEqual(seen.changes, log.reduce((n, e) => n + e.named.length, 0))
        assert.strictEqual(seen.rows, rounds * 16 - 1)
        assert.isAtMost(seen.largest, VERIFY_PAGE)
        assert.isAtLeast(seen.rowBatches, 3)
        assert.isAtLeast(seen.pages, 3)
        assert.strictEqual(seen.mismatches, 0)
        // The same answer again: the scratch of the first verify is gone, nothing of it counts twice.
        assert.deepStrictEqual(yield* scratchTables, [])
        assert.deepStrictEqual((yield* watchedVerify).answer, answer)
        assert.deepStrictEqual(yield* scratchTables, [])
      })), timeout)

    it.effect("the scratch compares a page of subjects at a time: a row unlike its latest change, a row gone, a row never named", () =>
      run(Effect.gen(function*() {
        const log = yield* ConsentLogStore
        const subject = (i: number) => `consent_users:user-${String(i).padStart(5, "0")}`
        // 3,000 subjects noted in an order unlike theirs, the 7th changed again later (its first
        // mention kept, its latest digest new), the 20th removed by its latest change.
        const order = Array.from({ length: 3000 }, (_, i) => (i * 7919) % 3000)
        const changes = [
          ...order.map((n, i) => ({ subject: subject(n), shard: n % 4, seq: i + 1, digest: `digest-${n}`, kind: "consent_users", order: i })),
          { subject: subject(7), shard: 3, seq: 3001, digest: "digest-7b", kind: "consent_users", order: 3000 },
          { subject: subject(20), shard: 0, seq: 3002, digest: null, kind: "consent_users", order: 3001 }
        ]
        // Every subject's row (two of the 30th's) but the 11th's and the 20th's, the 12th's with
        // another digest, the 7th's as its first change left it, and a row the log never named.
        const rows = [
          ...order.filter((n) => n !== 11 && n !== 20).map((n, i) => ({
            subject: subject(n),
            digest: n === 7 ? "digest-7" : n === 12 ? "edited" : `digest-${n}`,
            table: "consent_users",
            id: `user-${n}`,
            shard: n % 4,
            order: i
          })),
          { subject: subject(30), digest: "digest-30", table: "consent_users", id: "user-30", shard: 2, order: 2998 },
          { subject: subject(5000), digest: "digest-x", table: "consent_users", id: "user-5000", shard: 0, order: 2999 }
        ]
        const pages = yield* Effect.scoped(Effect.gen(function*() {
          const scratch = yield* log.scratch
          for (let i = 0; i < changes.length; i += 1000) yield* scratch.noteChanges(changes.slice(i, i + 1000))
          for (let i = 0; i < rows.length; i += 1000) yield* scratch.noteRows(rows.slice(i, i + 1000))
          const pages: Array<ReadonlyArray<ScratchMismatch>> = []
          let at: string | undefined
          do {
            const page = yield* scratch.mismatches(at, 1000)
            pages.push(page.found)
            at = page.next
          } while (at !== undefined && pages.length < 100)
          return pages
        }))
        // Three pages of the log's subjects and three of the rows at least, none larger than asked.
        assert.isAtLeast(pages.length, 6)
        assert.isBelow(pages.length, 100)
        const found = pages.flat().map((m) => [m.latest?.subject ?? null, m.latest?.seq ?? null, m.latest?.digest ?? null, m.latest?.first ?? null, m.row?.id ?? null])
        assert.sameDeepMembers(found, [
          [subject(7), 3001, "digest-7b", order.indexOf(7), "user-7"],
          [subject(11), order.indexOf(11) + 1, "digest-11", order.indexOf(11), null],
          [subject(12), order.indexOf(12) + 1, "digest-12", order.indexOf(12), "user-12"],
          [null, null, null, null, "user-5000"]
        ])
        assert.strictEqual(found.length, 4)
        assert.deepStrictEqual(yield* scratchTables, [])
      })), timeout)

    it.effect("a row changed behind the log's back: named, at its latest entry", () =>
      run(Effect.gen(function*() {
        const chains = yield* fill(80)
        const id = chains[9]![40]!
        const repo = yield* users
        const uow = yield* UnitOfWork
        yield* uow.transaction(repo.patch({ organization_id: ORG, id }, { country: "FR" }, 1))
        const latest = yield* latestNaming(id)
        assert.deepStrictEqual(latest.shard, 9)
        const sql = yield* sqlOf
        yield* sql`UPDATE consent_users SET country = 'IT' WHERE organization_id = ${ORG} AND id = ${id}`
        const { answer } = yield* watchedVerify
        assert.isFalse(answer.valid)
        assert.deepStrictEqual(answer.first_invalid, { shard: 9, seq: latest.seq, reason: "row", table: USERS, id })
      })), timeout)

    it.effect("a row removed behind the log's back: its latest entry, without an id", () =>
      run(Effect.gen(function*() {
        const chains = yield* fill(80)
        const id = chains[2]![70]!
        const sql = yield* sqlOf
        yield* sql`DELETE FROM consent_users WHERE organization_id = ${ORG} AND id = ${id}`
        const { answer, seen } = yield* watchedVerify
        assert.deepStrictEqual(answer.first_invalid, { shard: 2, seq: 71, reason: "row", table: USERS })
        // Every row went to the scratch, and it answered the one gone.
        assert.strictEqual(seen.rows, 80 * 16 - 1)
        assert.strictEqual(seen.mismatches, 1)
        assert.isAtMost(seen.largest, VERIFY_PAGE)
      })), timeout)

    it.effect("a row no entry covers: missing, at seq 0 of the chain its rows go to", () =>
      run(Effect.gen(function*() {
        yield* fill(80)
        const id = "u-added-behind"
        // The store's own storage, under the log's.
        const sql = yield* sqlOf
        yield* sql`INSERT INTO consent_users ${sql.insert({ ...userRow(id, 1), consent_states: "{}" })}`
        const { answer } = yield* watchedVerify
        assert.deepStrictEqual(answer.first_invalid, { shard: ConsentLog.shardOf(id), seq: 0, reason: "missing", table: USERS, id })
      })), timeout)

    it.effect("an entry rewritten: a broken link at that entry; the earliest of several faults by chain, then entry", () =>
      run(Effect.gen(function*() {
        const chains = yield* fill(80)
        const sql = yield* sqlOf
        const log = yield* logOf
        const target = log.find((e) => e.shard === 6 && e.seq === 50)!
        yield* sql`UPDATE consent_log SET changes = ${target.changes.replace(/"at":"[^"]*"/, `"at":"2001-01-01T00:00:00.000Z"`)}
          WHERE organization_id = ${ORG} AND shard = 6 AND seq = 50`
        assert.deepStrictEqual((yield* watchedVerify).answer.first_invalid, { shard: 6, seq: 50, reason: "link" })
        // A row of a later chain changed too: the link still comes first.
        yield* sql`UPDATE consent_users SET country = 'IT' WHERE organization_id = ${ORG} AND id = ${chains[11]![3]!}`
        assert.deepStrictEqual((yield* watchedVerify).answer.first_invalid, { shard: 6, seq: 50, reason: "link" })
        // One of an earlier entry of that chain: it comes first.
        yield* sql`UPDATE consent_users SET country = 'IT' WHERE organization_id = ${ORG} AND id = ${chains[6]![10]!}`
        assert.deepStrictEqual((yield* watchedVerify).answer.first_invalid, { shard: 6, seq: 11, reason: "row", table: USERS, id: chains[6]![10]! })
      })), timeout)

    it.effect("a chain's last entry removed: the head no longer names the chain's end", () =>
      run(Effect.gen(function*() {
        yield* fill(80)
        const uow = yield* UnitOfWork
        const log = yield* ConsentLogStore
        const digests = yield* Digests
        // An entry whose removal leaves every row as the log says: it names a row that never was, removed.
        const nobody = ConsentLog.subjectOf(digests.sha256, USERS, ORG, "nobody")
        yield* uow.transaction(log.append([ConsentLog.entryOf(digests, ORG, 13, at(200), [{ a: "remove", d: null, k: "user", s: nobody }])]))
        assert.isTrue((yield* watchedVerify).answer.valid)
        const sql = yield* sqlOf
        yield* sql`DELETE FROM consent_log WHERE organization_id = ${ORG} AND shard = 13 AND seq = 81`
        assert.deepStrictEqual((yield* watchedVerify).answer.first_invalid, { shard: 13, seq: 81, reason: "head" })
      })), timeout)

    it.effect("faults in one entry: a changed row before a removed one, and rows in the order they are read", () =>
      run(Effect.gen(function*() {
        yield* fill(80)
        const repo = yield* users
        const uow = yield* UnitOfWork
        const [x, y, z] = ["u-tie-x", "u-tie-y", "u-tie-z"].map((prefix) => {
          for (let i = 0;; i++) if (ConsentLog.shardOf(`${prefix}-${i}`) === 4) return `${prefix}-${i}`
        }) as [string, string, string]
        // All three in one entry of chain 4, its 81st, named in another order than their ids'.
        yield* uow.transaction(Effect.forEach([z, y, x], (id) => repo.create(userRow(id, 100)), { discard: true }))
        assert.deepStrictEqual(yield* latestNaming(x), { shard: 4, seq: 81 })
        const sql = yield* sqlOf
        yield* sql`DELETE FROM consent_users WHERE organization_id = ${ORG} AND id = ${z}`
        assert.deepStrictEqual((yield* watchedVerify).answer.first_invalid, { shard: 4, seq: 81, reason: "row", table: USERS })
        yield* sql`UPDATE consent_users SET country = 'IT' WHERE organization_id = ${ORG} AND id = ${y}`
        assert.deepStrictEqual((yield* watchedVerify).answer.first_invalid, { shard: 4, seq: 81, reason: "row", table: USERS, id: y })
        yield* sql`UPDATE consent_users SET country = 'IT' WHERE organization_id = ${ORG} AND id = ${x}`
        assert.deepStrictEqual((yield* watchedVerify).answer.first_invalid, { shard: 4, seq: 81, reason: "row", table: USERS, id: x })
      })), timeout)
  })
