import * as Effect from "effect/Effect"
import { InvalidInput } from "../Domain/Errors.js"
import { nowMillis } from "../Engine/Clock.js"
import { Storage } from "../Engine/Ports.js"
import {
  allIn,
  anyOf,
  type Condition,
  eq,
  exists,
  type FindQuery,
  gt,
  gte,
  inList,
  lt,
  lte,
  notInList
} from "../Engine/Query.js"
import { NoticeTextContentsResource } from "../Notices/Notices.js"
import { thresholdOf } from "./Durations.js"
import { latestApprovedVersion, type PolicyRow, policyFor } from "./Policies.js"
import { type ConsentStateName, durationFor } from "./PolicyState.js"
import { UserStatesTable } from "./UserStateRows.js"

/**
 * `consent_state` as a filter of the users find: the conditions that hold for a user exactly
 * when `consentStateOf` answers one of the states asked, as a semi-join on the user's row of
 * `consent_user_states` for the regulation (`none`: no such row). The policy and the time are
 * read when the find runs and become values compared with the row's columns, so a policy's
 * change applies at once, and the store reads each user's state row through its key, in the
 * order of the users' own index (the page and the cursor walk stop once the page is full).
 *
 * How each part of `consentStateOf` reads as a condition on the state row:
 * - given (before a policy's say): some vendor enabled, or an enabled purpose outside
 *   `essential_purpose_ids`; refused: neither;
 * - expired: `last_event_at <= thresholdOf(now, d)`, `d` the duration of the row's given or
 *   refused choice (`Durations.ts`: the same as `now >= last + d`);
 * - recollect: not expired, and `last_event_at < recollect_before`, or (re-collection on new
 *   wording, an approved content of the policy's text existing) the last event names no content
 *   of that text at the newest approved version or later;
 * - a state row without `last_event_at` has no expiry: given or refused only.
 */

const links = [["organization_id", "organization_id"], ["id", "user_id"]] as const

/** The user's state row for the regulation meets `where` (`negate`: the user has no such row, whatever `where`). */
const stateRow = (regulation: string, where: ReadonlyArray<Condition>, negate = false) =>
  exists(UserStatesTable, links, [eq("regulation", regulation), ...where], negate)

/** The choices give consent, before a policy's durations apply (`givesConsent`). */
const given = (essential: ReadonlyArray<string>): Condition => anyOf([eq("vendors_enabled", true)], [allIn("enabled_purposes", essential, true)])
const refused = (essential: ReadonlyArray<string>): ReadonlyArray<Condition> => [eq("vendors_enabled", false), allIn("enabled_purposes", essential)]

/** What the conditions of a policy are computed from. */
interface Terms {
  readonly policy: PolicyRow
  readonly now: number
  /** The contents of the policy's notice text at its newest approved version or later, when wording counts. */
  readonly current: ReadonlyArray<string> | undefined
}

/** The conditions on the state row of each state under a policy. */
const underPolicy = ({ current, now, policy }: Terms) => {
  const essential = policy.essential_purpose_ids
  const iso = (ms: number) => new Date(ms).toISOString()
  const consentUntil = iso(thresholdOf(now, durationFor(policy, true)))
  const refusalUntil = iso(thresholdOf(now, durationFor(policy, false)))
  const sameDurations = consentUntil === refusalUntil
  /** The choice of the last merged event has lapsed (`op` "lte"), or has not ("gt": a time is needed). */
  const lapsed = (op: typeof lte): Condition =>
    sameDurations
      ? op("last_event_at", consentUntil)
      : anyOf([given(essential), op("last_event_at", consentUntil)], [...refused(essential), op("last_event_at", refusalUntil)])
  const cutoff = policy.recollect_before
  // Each a reason to ask again, as a branch; and the conditions that none holds.
  const reasons: Array<ReadonlyArray<Condition>> = []
  const noReason: Array<Condition> = []
  if (cutoff !== null) {
    reasons.push([lt("last_event_at", cutoff)])
    noReason.push(gte("last_event_at", cutoff))
  }
  if (current !== undefined) {
    // NULL (no content named) is among the reasons: an event naming none counts as older.
    reasons.push([notInList("notice_text_content_id", current)])
    noReason.push(inList("notice_text_content_id", current))
  }
  const settled = (choice: ReadonlyArray<Condition>, until: string) =>
    [...choice, anyOf([eq("last_event_at", null)], [gt("last_event_at", until), ...noReason])]
  return {
    none: [],
    expired: [lapsed(lte)],
    recollect: reasons.length === 0 ? undefined : [lapsed(gt), anyOf(...reasons)],
    given: settled([given(essential)], consentUntil),
    refused: settled(refused(essential), refusalUntil)
  } satisfies Record<ConsentStateName, ReadonlyArray<Condition> | undefined>
}

/** Without a policy: none, given or refused only. */
const withoutPolicy = (essential: ReadonlyArray<string>) => ({
  none: [],
  expired: undefined,
  recollect: undefined,
  given: [given(essential)],
  refused: refused(essential)
}) satisfies Record<ConsentStateName, ReadonlyArray<Condition> | undefined>

/** The contents of a notice text whose version is the newest approved one's or later (a handful). */
const contentsFrom = (textId: string, version: number) =>
  Effect.flatMap(Storage, (s) =>
    Effect.map(s.repository(NoticeTextContentsResource.tableDef).find({
      count: false,
      where: [eq("text_id", textId), gte("content_version", version)],
      sort: [],
      ordered: false,
      limit: 1000,
      skip: 0
    }), (page) => page.data.map((c) => c.id)))

/** The condition on a user of one organization that its state is among `states`. */
const forOrganization = (organizationId: string, regulation: string, states: ReadonlyArray<ConsentStateName>) =>
  Effect.gen(function*() {
    const policy = yield* policyFor(organizationId, regulation)
    let byState: Record<ConsentStateName, ReadonlyArray<Condition> | undefined>
    if (policy === undefined) byState = withoutPolicy([])
    else {
      const latest = policy.recollect_on_new_content && policy.notice_text_id !== null
        ? yield* latestApprovedVersion(policy.notice_text_id)
        : undefined
      const current = latest === undefined ? undefined : yield* contentsFrom(policy.notice_text_id!, latest)
      byState = underPolicy({ policy, now: yield* nowMillis, current })
    }
    const branches = [...new Set(states)].flatMap((state): ReadonlyArray<Condition> => {
      const where = byState[state]
      if (where === undefined) return []
      return [state === "none" ? stateRow(regulation, [], true) : stateRow(regulation, where)]
    })
    return branches.length === 1 ? branches[0]! : anyOf(...branches.map((b) => [b]))
  })

/**
 * The organizations a scoped query reads: those its conditions on `organization_id` allow
 * (every find but the operator's names them), or `undefined` when they do not bound it.
 */
const organizationsOf = (where: ReadonlyArray<Condition>): ReadonlyArray<string> | undefined => {
  let allowed: ReadonlyArray<string> | undefined
  for (const c of where) {
    const named = c._tag === "Compare" && c.field === "organization_id" && c.op === "eq" && typeof c.value === "string"
      ? [c.value]
      : c._tag === "In" && c.field === "organization_id" && !c.negate
      ? c.values.filter((v): v is string => typeof v === "string")
      : undefined
    if (named !== undefined) allowed = allowed === undefined ? named : allowed.filter((o) => named.includes(o))
  }
  return allowed
}

/**
 * The find narrowed to the users whose state for `regulation` is among `states`: one branch per
 * organization it reads, each under that organization's policy.
 */
export const filterByConsentState = (query: FindQuery, regulation: string, states: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const organizations = organizationsOf(query.where)
    if (organizations === undefined) {
      return yield* Effect.fail(new InvalidInput({
        message: "Invalid query: consent_state needs organization_id (each organization's policy decides the state)",
        errors: { organization_id: "is required with consent_state" }
      }))
    }
    const asked = states as ReadonlyArray<ConsentStateName>
    const byOrganization: Array<ReadonlyArray<Condition>> = []
    for (const org of [...new Set(organizations)]) {
      byOrganization.push([eq("organization_id", org), yield* forOrganization(org, regulation, asked)])
    }
    const condition = byOrganization.length === 1 ? byOrganization[0]![1]! : anyOf(...byOrganization)
    return { ...query, where: [...query.where, condition] } satisfies FindQuery
  })
