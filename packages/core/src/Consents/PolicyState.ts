import type { ConsentState } from "../Domain/Consent.js"
import { addDuration, type Duration, type DurationUnit } from "./Durations.js"

/**
 * A user's consent state for one regulation under the organization's policy for it: the one
 * definition that users' output, the `consent_state` filter, the expiry sweep and receipts
 * share. Pure: the caller hands in the policy, the user's merged state, the time, and the
 * versions of notice text contents it needs.
 *
 * Precedence: `none` (no confirmed event), then `expired`, then `recollect`, then `given` or
 * `refused`. Only `expired` and `recollect` need a policy.
 */

export const CONSENT_STATES = ["none", "given", "refused", "expired", "recollect"] as const
export type ConsentStateName = typeof CONSENT_STATES[number]

/** What the state needs of a policy. */
export interface PolicyTerms {
  readonly consent_duration: number
  readonly consent_duration_unit: DurationUnit
  readonly denied_consent_duration?: number | null | undefined
  readonly denied_consent_duration_unit?: DurationUnit | null | undefined
  readonly recollect_before?: string | null | undefined
  readonly notice_text_id?: string | null | undefined
  readonly recollect_on_new_content?: boolean | null | undefined
  readonly essential_purpose_ids?: ReadonlyArray<string> | null | undefined
}

/** What the state needs of a user for the regulation: its merged choices and last merged event. */
export interface UserStateFacts {
  /** The merged choices; `updated_at` is the `created_at` of the last merged event. */
  readonly state: ConsentState | undefined
  /**
   * The `content_version` of the notice text content the last merged event names, when that
   * content is one of the policy's notice text; `undefined` when it names none of that text.
   */
  readonly lastContentVersion?: number | undefined
}

export interface ConsentStateAnswer {
  readonly consent_state: ConsentStateName
  /** When the choice lapses: with a policy and a confirmed event only. */
  readonly expires_at?: string
}

/**
 * Whether the choices give consent to something beyond the essential purposes: a purpose not
 * listed there with `enabled: true`, or an enabled vendor. Legitimate interest, the TC string
 * and GPP do not count.
 */
export const givesConsent = (state: ConsentState, essential: ReadonlyArray<string> | null | undefined): boolean => {
  if ((state.vendors.enabled ?? []).length > 0) return true
  const skip = new Set(essential ?? [])
  return state.purposes.some((p) => p.enabled && !skip.has(p.id))
}

/** The duration that applies to a state: the denied one for a refusal when the policy sets it. */
export const durationFor = (policy: PolicyTerms, given: boolean): Duration =>
  !given && policy.denied_consent_duration != null && policy.denied_consent_duration_unit != null
    ? { amount: policy.denied_consent_duration, unit: policy.denied_consent_duration_unit }
    : { amount: policy.consent_duration, unit: policy.consent_duration_unit }

/** When the last merged event's choice lapses under the policy (epoch ms), or none without one. */
export const expiryOf = (policy: PolicyTerms, state: ConsentState): number | undefined => {
  const last = state.updated_at === undefined ? Number.NaN : Date.parse(state.updated_at)
  if (Number.isNaN(last)) return undefined
  return addDuration(last, durationFor(policy, givesConsent(state, policy.essential_purpose_ids)))
}

/**
 * The state and, under a policy, when it lapses. `latestContentVersion`: the highest
 * `content_version` of an approved content of the policy's notice text (none: `undefined`).
 */
export const consentStateOf = (
  policy: PolicyTerms | undefined,
  facts: UserStateFacts,
  now: number,
  latestContentVersion?: number | undefined
): ConsentStateAnswer => {
  const state = facts.state
  if (state === undefined) return { consent_state: "none" }
  const given = givesConsent(state, policy?.essential_purpose_ids)
  const settled: ConsentStateName = given ? "given" : "refused"
  if (policy === undefined) return { consent_state: settled }
  const expires = expiryOf(policy, state)
  if (expires === undefined) return { consent_state: settled }
  const expires_at = new Date(expires).toISOString()
  if (now >= expires) return { consent_state: "expired", expires_at }
  const before = policy.recollect_before == null ? Number.NaN : Date.parse(policy.recollect_before)
  const olderThanCutoff = !Number.isNaN(before) && Date.parse(state.updated_at ?? "") < before
  const newerWording = policy.recollect_on_new_content === true && policy.notice_text_id != null &&
    latestContentVersion !== undefined &&
    (facts.lastContentVersion === undefined || latestContentVersion > facts.lastContentVersion)
  return { consent_state: olderThanCutoff || newerWording ? "recollect" : settled, expires_at }
}
