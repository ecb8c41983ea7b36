import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { nowIso } from "../Clock.js"
import { SettingsTable } from "../InternalTables.js"
import { type Row, Storage, type TableDef, UnitOfWork } from "../Ports.js"
import { OrganizationsResource } from "../Resources/Account.js"
import { ConsentEventsResource, ConsentUsersResource } from "../Resources/Consents.js"
import { ProofsResource } from "../Resources/Proofs.js"
import { eq } from "../Query.js"
import { ConsentLogStore, type EntryText, LOGGED_TABLES, linkHash, type LoggedChange, shardOf, subjectOf } from "./ConsentLog.js"
import { Digests } from "./ProofPorts.js"

/**
 * The consent log begins with the rows that were there before it: a database made before the
 * log existed gets, once, an entry per chain holding every row it had (as a `create`), so a
 * verify covers them from then on. Done under a lock by the first server that starts, and
 * marked done in the settings table; a new database is marked at once.
 */

const DONE = "consent_log_backfilled"
const LOCK = "consent-log-backfill"
const PAGE = 500
/** Changes per entry: a large organization's rows are entered in many entries, not one huge text. */
const PER_ENTRY = 500

const logged: ReadonlyArray<TableDef> = [ConsentUsersResource.tableDef, ConsentEventsResource.tableDef, ProofsResource.tableDef]

const marked = Effect.map(
  Effect.flatMap(Storage, (s) => s.repository(SettingsTable).get(DONE)),
  Option.isSome
)

/** Every row of a table, page by page, in id order. */
const eachRow = <R>(table: TableDef, where: ReturnType<typeof eq> | undefined, f: (row: Row) => Effect.Effect<void, never, R>) =>
  Effect.gen(function*() {
    const repo = (yield* Storage).repository(table)
    let after: ReadonlyArray<string> | undefined
    for (;;) {
      const page = yield* repo.find({
        count: false,
        where: where ? [where] : [],
        sort: [],
        limit: PAGE,
        skip: 0,
        keyset: { fields: ["id"], after }
      })
      for (const row of page.data) yield* f(row)
      if (page.data.length < PAGE) return
      after = [String(page.data[page.data.length - 1]!.id)]
    }
  })

const backfillOrganization = (organizationId: string) =>
  Effect.gen(function*() {
    const store = yield* ConsentLogStore
    const digests = yield* Digests
    const sha256 = (s: string) => digests.sha256(s)
    const link = linkHash(sha256)
    const at = yield* nowIso
    const pending = new Map<number, Array<LoggedChange>>()
    const flush = (shard: number) =>
      Effect.suspend(() => {
        const changes = pending.get(shard) ?? []
        pending.delete(shard)
        if (changes.length === 0) return Effect.void
        const text = digests.canonicalJson({ at, changes } satisfies EntryText)
        return Effect.asVoid(store.append(organizationId, shard, text, at, (previous, seq) => link(previous, seq, text)))
      })
    for (const table of logged) {
      const spec = LOGGED_TABLES[table.table]!
      yield* eachRow(table, eq("organization_id", organizationId), (row) =>
        Effect.suspend(() => {
          const shard = shardOf(spec.chainOf(row))
          const list = pending.get(shard) ?? []
          list.push({
            a: "create",
            d: sha256(digests.canonicalJson(row)),
            k: spec.kind,
            s: subjectOf(sha256, table.table, organizationId, String(row.id))
          })
          pending.set(shard, list)
          return list.length >= PER_ENTRY ? flush(shard) : Effect.void
        }))
    }
    for (const shard of [...pending.keys()].sort((a, b) => a - b)) yield* flush(shard)
  })

export const backfillConsentLog = Effect.gen(function*() {
  if (yield* marked) return
  const uow = yield* UnitOfWork
  yield* uow.transaction(Effect.gen(function*() {
    yield* uow.lock(LOCK)
    if (yield* marked) return
    const store = yield* ConsentLogStore
    yield* eachRow(OrganizationsResource.tableDef, undefined, (org) =>
      Effect.gen(function*() {
        const id = String(org.id)
        // An organization written since the log began has its chains already.
        if ((yield* store.heads(id)).length > 0) return
        yield* backfillOrganization(id)
      }))
    const now = yield* nowIso
    yield* Effect.orDie((yield* Storage).repository(SettingsTable).create({ id: DONE, value: now, created_at: now, updated_at: now, version: 1 }))
  }))
})
