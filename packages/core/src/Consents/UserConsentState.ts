import * as Effect from "effect/Effect"
import type { ConsentState } from "../Domain/Consent.js"
import { nowMillis } from "../Engine/Clock.js"
import { contentVersionOf, latestApprovedVersion, type PolicyRow, policyFor } from "./Policies.js"
import { consentStateOf, type ConsentStateAnswer } from "./PolicyState.js"

/**
 * What a user's `consent_state` and `expires_at` are computed from at read time, for one
 * organization and regulation: its policy, the newest approved version of the policy's notice
 * text, the versions of the contents the users' last events name, and the time. Everything
 * is a kept value (`ConsentPolicies`), so a page of users costs no query once they are warm,
 * and a policy's change applies at once with nothing rewritten.
 */
export interface StateContext {
  readonly policy: PolicyRow | undefined
  readonly latest: number | undefined
  /** Content id → its version, when it is a content of the policy's notice text. */
  readonly versions: ReadonlyMap<string, number>
  readonly now: number
}

/** Whether re-collection on new wording applies, so content versions are worth reading. */
const wordingMatters = (policy: PolicyRow | undefined): policy is PolicyRow & { notice_text_id: string } =>
  policy !== undefined && policy.recollect_on_new_content === true && policy.notice_text_id !== null

/** The context of users' states of one organization and regulation, for the given states. */
export const stateContext = (organizationId: string, regulation: string, states: ReadonlyArray<ConsentState | undefined>) =>
  Effect.flatMap(policyFor(organizationId, regulation), (policy) =>
    Effect.flatMap(nowMillis, (now) => {
      const versions = new Map<string, number>()
      if (!wordingMatters(policy)) return Effect.succeed<StateContext>({ policy, latest: undefined, versions, now })
      // Only a policy that re-collects on new wording reads the versions of the contents.
      return Effect.gen(function*() {
        const latest = yield* latestApprovedVersion(policy.notice_text_id)
        const ids = new Set(states.flatMap((s) => s?.notice_text_content_id !== undefined ? [s.notice_text_content_id] : []))
        for (const id of ids) {
          const found = yield* contentVersionOf(id)
          if (found !== undefined && found.text_id === policy.notice_text_id) versions.set(id, found.content_version)
        }
        return { policy, latest, versions, now } satisfies StateContext
      })
    }))

/** A user's state for a regulation in a context: the one definition (`consentStateOf`). */
export const stateIn = (ctx: StateContext, state: ConsentState | undefined): ConsentStateAnswer =>
  consentStateOf(
    ctx.policy,
    {
      state,
      lastContentVersion: state?.notice_text_content_id === undefined ? undefined : ctx.versions.get(state.notice_text_content_id)
    },
    ctx.now,
    ctx.latest
  )
