import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { nowIso } from "../Engine/Clock.js"
import { SettingsTable } from "../Accounts/InternalTables.js"
import { Storage, UnitOfWork } from "../Engine/Ports.js"
import { OrganizationsResource } from "../Accounts/Organizations.js"
import { eq } from "../Engine/Query.js"
import { changeOf, ConsentLogStore, eachRow, entryOf, type LoggedChange } from "./ConsentLog.js"
import { loggedTables } from "./LogVerify.js"
import { Digests } from "./ProofPorts.js"

/**
 * The consent log begins with the rows that were there before it: a database made before the
 * log existed gets, once, an entry per chain holding every row it had (as a `create`), so a
 * verify covers them from then on. Done under a lock by the first server that starts, and
 * marked done in the settings table; a new database is marked at once.
 */

const DONE = "consent_log_backfilled"
const LOCK = "consent-log-backfill"
/** Changes per entry: a large organization's rows are entered in many entries, not one huge text. */
const PER_ENTRY = 500

const marked = Effect.map(
  Effect.flatMap(Storage, (s) => s.repository(SettingsTable).get(DONE)),
  Option.isSome
)

const backfillOrganization = (organizationId: string) =>
  Effect.gen(function*() {
    const store = yield* ConsentLogStore
    const digests = yield* Digests
    const at = yield* nowIso
    const pending = new Map<number, Array<LoggedChange>>()
    const flush = (shard: number) =>
      Effect.suspend(() => {
        const changes = pending.get(shard) ?? []
        pending.delete(shard)
        return changes.length === 0 ? Effect.void : Effect.asVoid(store.append([entryOf(digests, organizationId, shard, at, changes)]))
      })
    for (const table of loggedTables) {
      yield* eachRow(table, [eq("organization_id", organizationId)], (row) =>
        Effect.suspend(() => {
          const { change, shard } = changeOf(digests, table.table, "create", row)
          const list = pending.get(shard) ?? []
          list.push(change)
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
    yield* eachRow(OrganizationsResource.tableDef, [], (org) =>
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
