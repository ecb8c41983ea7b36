import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { ConsentState } from "../Domain/Consent.js"

/**
 * The store's side of the expiry sweep (`ExpirySweep`): the users' state rows
 * (`consent_user_states`) read through their due index, and the mark that an expiry was
 * announced. The mark is the decision: a sweep enqueues a user's message only when its own
 * guarded update changed the row, in the same transaction, so two sweeps never both send it.
 */

/** A user's state row whose last merged event may have lapsed. */
export interface DueUser {
  readonly user_id: string
  readonly last_event_id: string
  /** Canonical ISO 8601 (UTC, milliseconds). */
  readonly last_event_at: string
  readonly state: ConsentState
}

export class ExpiryAnnouncements extends Context.Tag("@cmp/core/ExpiryAnnouncements")<
  ExpiryAnnouncements,
  {
    /**
     * The rows of the organization and regulation whose last merged event is after `after`
     * (its time, then `user_id` when given) and at or before `upTo`, whose expiry is not
     * announced yet (`announced_event_id` is not `last_event_id`), in the order of
     * `(last_event_at, user_id)`, at most `limit`: a range of the due index, a page at a time.
     */
    readonly due: (options: {
      readonly organizationId: string
      readonly regulation: string
      readonly after: { readonly at: string; readonly userId?: string | undefined }
      readonly upTo: string
      readonly limit: number
    }) => Effect.Effect<ReadonlyArray<DueUser>>
    /**
     * Inside the caller's transaction: marks the expiry of `lastEventId` announced, if it is
     * still the row's last merged event and not announced yet. Answers whether this call changed
     * the row (only then may the caller send the message). A concurrent caller waits for this
     * one's transaction and then changes nothing.
     */
    readonly announce: (options: {
      readonly organizationId: string
      readonly userId: string
      readonly regulation: string
      readonly lastEventId: string
    }) => Effect.Effect<boolean>
  }
>() {}
