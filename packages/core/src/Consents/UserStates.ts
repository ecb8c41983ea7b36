import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { nowIso } from "../Engine/Clock.js"
import { both } from "../Engine/Sequence.js"
import { type ConsentState, type EventConsents, type UserConsents, type UserConsentStates } from "../Domain/Consent.js"
import { emptyState, lastMerged, mergeAll, mergeEvent, sameConsents, withLast } from "./Merge.js"
export { withLast }
import { keyOf } from "../Engine/Ports.js"
import { eq } from "../Engine/Query.js"
import { toOutput } from "../Engine/Views.js"
import { type OutgoingEvent } from "../Webhooks/Outbox.js"
import { stateContext, stateIn, type StateContext } from "./UserConsentState.js"
import { DEFAULT_REGULATION, UserConsentsValue, Users, EventRow, UserRow, users, events } from "./ConsentTables.js"

/** An effective status with the shape of an event's `consents`, every list present. */
export const consentsView = (state: ConsentState | undefined): UserConsents => {
  const v = state?.vendors ?? {}
  return {
    purposes: state?.purposes ?? [],
    vendors: { enabled: v.enabled ?? [], disabled: v.disabled ?? [], enabled_li: v.enabled_li ?? [], disabled_li: v.disabled_li ?? [] },
    ...(state?.tcfcs !== undefined ? { tcfcs: state.tcfcs } : {}),
    ...(state?.gpp !== undefined ? { gpp: state.gpp } : {}),
    ...(state?.gpp_sid !== undefined ? { gpp_sid: state.gpp_sid } : {})
  }
}

/**
 * A regulation is a client's code, so it may be the name of a property every object inherits
 * (`constructor`, `__proto__`): read and write the states by own keys only.
 */
const stateOf = (states: UserConsentStates, regulation: string): ConsentState | undefined =>
  Object.hasOwn(states, regulation) ? states[regulation] : undefined

/** A Global Privacy Control signal holds for the user and regulation. */
export const gpcHolds = (row: UserRow, regulation: string): boolean => stateOf(row.consent_states, regulation)?.gpc === true

/**
 * A user as clients see it: its effective status for one regulation, and its state under the
 * organization's policy for it in `ctx` (read for that organization and regulation).
 */
export const userOut = (row: UserRow, regulation: string, ctx: StateContext) => {
  const state = stateOf(row.consent_states, regulation)
  return toOutput(Users, row, { regulation, consents: consentsView(state), gpc: state?.gpc === true, ...stateIn(ctx, state) })
}

/** One user as clients see it, its context read (kept values). */
export const presentUser = (row: UserRow, regulation: string = DEFAULT_REGULATION) =>
  Effect.map(stateContext(row.organization_id, regulation, [stateOf(row.consent_states, regulation)]), (ctx) => userOut(row, regulation, ctx))

/** Users as clients see them, one context per organization of the page. */
export const presentUsers = (rows: ReadonlyArray<UserRow>, regulation: string = DEFAULT_REGULATION) =>
  Effect.gen(function*() {
    const byOrganization = new Map<string, Array<UserRow>>()
    for (const r of rows) {
      const list = byOrganization.get(r.organization_id)
      if (list === undefined) byOrganization.set(r.organization_id, [r])
      else list.push(r)
    }
    const contexts = new Map<string, StateContext>()
    for (const [org, list] of byOrganization) {
      contexts.set(org, yield* stateContext(org, regulation, list.map((r) => stateOf(r.consent_states, regulation))))
    }
    return rows.map((r) => userOut(r, regulation, contexts.get(r.organization_id)!))
  })

/** The regulations a user has a status for (`gdpr` when none): what a change of the user concerns. */
export const regulationsOf = (row: UserRow): ReadonlyArray<string> => {
  const known = Object.keys(row.consent_states)
  return known.length > 0 ? known : [DEFAULT_REGULATION]
}

/** An event as merging needs it, with what the state keeps of the event merged last. */
export interface MergedEvent {
  readonly regulation: string
  readonly consents: EventConsents
  readonly created_at: string
  readonly id: string
  readonly notice_text_content_id?: string | null | undefined
  readonly gpc?: boolean | null | undefined
  readonly gpc_override?: boolean | null | undefined
}

/** Every confirmed event of a user for a regulation, merged from scratch. */
export const recompute = (user: UserRow, regulation: string) =>
  Effect.gen(function*() {
    const repo = yield* events()
    const all: Array<MergedEvent> = []
    for (let skip = 0;; skip += 1000) {
      const page = yield* repo.find({
        count: false,
        where: [
          eq("organization_id", user.organization_id),
          eq("user_id", user.id),
          eq("regulation", regulation),
          eq("status", "confirmed")
        ],
        sort: [{ field: "created_at", direction: 1 }],
        limit: 1000,
        skip
      })
      for (const e of page.data) {
        all.push({
          regulation,
          consents: e.consents,
          created_at: e.created_at,
          id: e.id,
          notice_text_content_id: e.notice_text_content_id ?? null,
          gpc: e.gpc,
          gpc_override: e.gpc_override
        })
      }
      if (page.data.length < 1000) break
    }
    const last = lastMerged(all)
    return last === undefined ? undefined : withLast(mergeAll(all), last)
  })

export const withState = (states: UserConsentStates, regulation: string, next: ConsentState | undefined): UserConsentsValue => {
  const out: UserConsentsValue = { ...states }
  if (next === undefined) delete out[regulation]
  // Not `out[regulation] = next`: under `__proto__` that would replace the prototype instead.
  else Object.defineProperty(out, regulation, { value: next, enumerable: true, writable: true, configurable: true })
  return out
}

/**
 * A user's status once a newly confirmed event counts: merged on top when it is the newest,
 * else from scratch (the event must be stored by then).
 */
export const stateWith = (user: UserRow, event: MergedEvent) => {
  const current = stateOf(user.consent_states, event.regulation)
  return current === undefined || (current.updated_at ?? "") <= event.created_at
    ? Effect.succeed<ConsentState | undefined>(withLast(mergeEvent(current ?? emptyState, event), event))
    : recompute(user, event.regulation)
}

/**
 * Writes a user's new state for one regulation when it differs; answers the user before and
 * after, and whether the choices (not just the time) changed.
 */
export const setState = (user: UserRow, regulation: string, next: ConsentState | undefined) => {
  const current = stateOf(user.consent_states, regulation)
  const choicesChanged = !sameConsents(current, next)
  if (!choicesChanged && current?.updated_at === next?.updated_at && current?.event_id === next?.event_id) {
    return Effect.succeed({ before: user, after: user, choicesChanged })
  }
  return Effect.flatMap(both(users(), nowIso), ([repo, now]) =>
    Effect.map(
      // The user as this transaction read it: PostgreSQL's store sends the update with the COMMIT.
      repo.patch(keyOf(Users.tableDef, user), { consent_states: withState(user.consent_states, regulation, next), updated_at: now }, user.version, user),
      (after) => ({ before: user, after, choicesChanged })
    ))
}

/** Applies a newly confirmed event: incrementally when it is the newest, else from scratch. */
export const applyEvent = (user: UserRow, event: EventRow) =>
  Effect.flatMap(stateWith(user, event), (next) => setState(user, event.regulation, next))

export const loadUser = (organizationId: string, id: string) =>
  Effect.flatMap(users(), (repo) =>
    Effect.flatMap(repo.get({ organization_id: organizationId, id }), Option.match({
      onNone: () => Effect.dieMessage(`consent user ${id} vanished inside its transaction`),
      onSome: Effect.succeed
    })))

export const userUpdated = (regulation: string, source: unknown, before: UserRow, after: UserRow) =>
  Effect.map(presentUsers([before, after], regulation), ([old_entity, new_entity]): OutgoingEvent => ({
    type: "user.updated",
    regulation,
    parameters: { source, old_entity, new_entity }
  }))
