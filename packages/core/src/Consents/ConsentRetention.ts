import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { nowIso } from "../Engine/Clock.js"
import { Storage } from "../Engine/Ports.js"
import { daysAgo, type PurgePace, removeMatching } from "../Engine/Purging.js"
import { eq, gte, lt } from "../Engine/Query.js"
import { ownedByOrganization } from "../Engine/Resource.js"
import { defineTable, field } from "../Engine/Tables.js"
import { OrganizationsResource } from "../Accounts/Organizations.js"
import { Events, type UserRow, Users } from "./ConsentTables.js"
import { ProofFiles } from "./ProofPorts.js"
import { ProofsResource } from "./Proofs.js"

/**
 * The retention of consent events (`consent_retention_days` of an organization): the events of
 * an inactive user are removed once that many days have passed. A user is inactive when nothing
 * was recorded of it for that many days: its `updated_at` (which every confirmed event, and every
 * change of the user, moves) is older, and it has no event (of any status) newer. Its events and
 * the proofs sent with them are removed as an erasure removes them: each removal goes through the
 * storage that keeps the consent log, so the log gains an entry saying the row was removed (a
 * null digest) and still verifies; a proof's bytes go with its row. The user stays, with the
 * consent status its events gave it: a user is only ever removed by a request. An erased user's
 * events went with its erasure already.
 */

/**
 * How far each organization's purge has looked, so an hourly run reads only the users that
 * became inactive since (by `updated_at`, then id): a user passed over moved its `updated_at`
 * past the mark with its next event, and is looked at again once inactive.
 */
export const RetentionMarksTable = defineTable("retention_marks", {
  organization_id: field.string,
  /** The purge the mark is of (`consent-events`). */
  id: field.string,
  mark_at: field.timestamp,
  mark_id: field.string,
  updated_at: field.timestamp,
  version: field.number
}, { key: ["organization_id", "id"], references: [ownedByOrganization] })

const MARK = "consent-events"

/** Users read per page of the walk. */
const USERS_PAGE = 100

/**
 * One inactive user's events and the proofs sent with them, older than `cutoff`. A user with an
 * event at or after `cutoff` is active: nothing of it goes.
 */
const purgeUser = (user: UserRow, cutoff: string, pace: PurgePace) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const of = [eq("organization_id", user.organization_id), eq("user_id", user.id)]
    const newer = yield* storage.repository(Events.tableDef).find({
      count: false,
      where: [...of, gte("created_at", cutoff)],
      sort: [],
      ordered: false,
      limit: 1,
      skip: 0
    })
    if (newer.data.length > 0) return 0
    const events = yield* removeMatching(Events.tableDef, [...of, lt("created_at", cutoff)], pace)
    const files = yield* ProofFiles
    const proofs = yield* removeMatching(ProofsResource.tableDef, [...of, lt("created_at", cutoff)], pace, {
      after: (row) => files.remove({ organization_id: String(row.organization_id), id: String(row.id) })
    })
    return events + proofs
  })

/** Moves the organization's mark forward (never back: a slower purger's older mark is dropped). */
const advanceMark = (organizationId: string, at: string, id: string) =>
  Effect.gen(function*() {
    const repo = (yield* Storage).repository(RetentionMarksTable)
    const now = yield* nowIso
    const current = yield* repo.get({ organization_id: organizationId, id: MARK })
    if (Option.isNone(current)) {
      yield* repo.create({ organization_id: organizationId, id: MARK, mark_at: at, mark_id: id, updated_at: now, version: 1 })
      return
    }
    const mark = current.value
    if (mark.mark_at > at || (mark.mark_at === at && mark.mark_id >= id)) return
    yield* repo.patch({ organization_id: organizationId, id: MARK }, { mark_at: at, mark_id: id, updated_at: now }, mark.version)
  }).pipe(
    // Another purger moved it meanwhile: its mark is as good, the next run reads on from it.
    Effect.catchTags({ Conflict: () => Effect.void, NotFound: () => Effect.void })
  )

/** One organization's purge: the users that became inactive since its mark. Answers how many rows went. */
export const purgeConsentEventsOf = (organizationId: string, days: number, pace: PurgePace) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const cutoff = yield* daysAgo(days)
    const mark = yield* storage.repository(RetentionMarksTable).get({ organization_id: organizationId, id: MARK })
    let after: ReadonlyArray<string> | undefined = Option.isSome(mark) ? [mark.value.mark_at, mark.value.mark_id] : undefined
    let removed = 0
    for (;;) {
      const page = yield* storage.repository(Users.tableDef).find({
        count: false,
        where: [eq("organization_id", organizationId), lt("updated_at", cutoff)],
        sort: [],
        limit: USERS_PAGE,
        skip: 0,
        keyset: { fields: ["updated_at", "id"], after }
      })
      for (const user of page.data) removed += yield* purgeUser(user, cutoff, pace)
      const last = page.data[page.data.length - 1]
      if (last === undefined) return removed
      after = [last.updated_at, last.id]
      yield* advanceMark(organizationId, last.updated_at, last.id)
      if (page.data.length < USERS_PAGE) return removed
      yield* pace.pause
    }
  })

/** Every organization's purge, for those that set `consent_retention_days`. Answers how many rows went. */
export const purgeConsentEvents = (pace: PurgePace) =>
  Effect.gen(function*() {
    const repo = (yield* Storage).repository(OrganizationsResource.tableDef)
    let removed = 0
    let after: ReadonlyArray<string> | undefined
    for (;;) {
      const page = yield* repo.find({
        count: false,
        where: [gte("consent_retention_days", 1)],
        sort: [],
        limit: 100,
        skip: 0,
        keyset: { fields: ["id"], after }
      })
      for (const org of page.data) {
        removed += yield* purgeConsentEventsOf(org.id, Number(org.consent_retention_days), pace)
      }
      if (page.data.length < 100) return removed
      after = [page.data[page.data.length - 1]!.id]
    }
  })
