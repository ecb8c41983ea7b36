import {
  ConsentLog,
  ConsentLogStore,
  ConsentUsersResource,
  Digests,
  type LogScratch,
  type Repository,
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
  present: number
  latestPages: number
  rowBatches: number
}

/** Runs the verify with the store's ports watched. */
const watchedVerify = Effect.gen(function*() {
  const seen: Watched = { largest: 0, changes: 0, rows: 0, present: 0, latestPages: 0, rowBatches: 0 }
  const size = (n: number) => {
    seen.largest = Math.max(seen.largest, n)
  }
  const log = yield* ConsentLogStore
  const storage = yield* Storage
  const watch = (s: LogScratch): LogScratch => ({
    noteChanges: (batch) => (size(batch.length), (seen.changes += batch.length), s.noteChanges(batch)),
    latestOf: (subjects) => (size(subjects.length), (seen.rows += subjects.length), seen.rowBatches++, s.latestOf(subjects)),
    notePresent: (subjects) => (size(subjects.length), (seen.present += subjects.length), s.notePresent(subjects)),
    latest: (after, limit) => (size(limit), seen.latestPages++, s.latest(after, limit))
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
        // Every change of the log went to the scratch, and every row was looked up in it, in
        // batches of a page at most; the log's subjects came back a page at a time.
        assert.strictEqual(seen.changes, log.reduce((n, e) => n + e.named.length, 0))
        assert.strictEqual(seen.rows, rounds * 16 - 1)
        assert.isAtMost(seen.largest, VERIFY_PAGE)
        assert.isAtLeast(seen.rowBatches, 3)
        assert.isAtLeast(seen.latestPages, 3)
        // No row is gone: the counts say so, and no row's subject is written to the scratch.
        assert.strictEqual(seen.present, 0)
        // The same answer again: the scratch of the first verify is gone, nothing of it counts twice.
        assert.deepStrictEqual(yield* scratchTables, [])
        assert.deepStrictEqual((yield* watchedVerify).answer, answer)
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
        // Finding which row is gone took every row's subject, a page at a time.
        assert.strictEqual(seen.present, 80 * 16 - 1)
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
