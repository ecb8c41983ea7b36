import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Id, Timestamp } from "../Domain/Common.js"

/**
 * The health of an organization's webhooks at a glance (`GET /v1/webhooks/deliveries/stats`):
 * per webhook, how many of its messages are in each state, how long the oldest pending one has
 * waited, and when its receiver last took or refused a message.
 */

/** A number of messages: not bounded by a column type, it is counted, not stored. */
const Count = Schema.NonNegativeInt

/** One webhook's figures, as the API answers them. */
export const WebhookDeliveryStats = Schema.Struct({
  webhook_id: Id,
  counts: Schema.Struct({
    pending: Count,
    delivering: Count,
    delivered: Count,
    failed: Count
  }),
  /** Whole seconds since the oldest pending message was queued; null when none is pending. */
  oldest_pending_age_s: Schema.NullOr(Schema.NonNegativeInt),
  /** The last attempt answered 2xx. */
  last_success_at: Schema.NullOr(Timestamp),
  /** The last attempt that was not: another status, or no answer at all. */
  last_failure_at: Schema.NullOr(Timestamp),
  /** Why that last failed attempt failed. */
  last_error: Schema.NullOr(Schema.String)
})
export type WebhookDeliveryStats = typeof WebhookDeliveryStats.Type

/** Every webhook of an organization, in the order of their ids. */
export const DeliveryStatsList = Schema.Array(WebhookDeliveryStats)

/** The last attempt of one kind (successful, failed) of a webhook's messages. */
export interface LastAttempt {
  readonly attempted_at: string
  /** null when no response arrived. */
  readonly status_code: number | null
  readonly error: string | null
}

/** One webhook's figures as the store reads them: the age and the error are the use-case's. */
export interface DeliveryStatsRecord {
  readonly webhook_id: string
  readonly counts: {
    readonly pending: number
    readonly delivering: number
    readonly delivered: number
    readonly failed: number
  }
  /** When the oldest `pending` message was created; null when none is pending. */
  readonly oldest_pending_at: string | null
  readonly last_success: LastAttempt | null
  readonly last_failure: LastAttempt | null
}

/**
 * Reads the figures of every webhook of an organization at a cost that does not grow with the
 * outbox and its attempt log (a store keeps its counts per webhook and status, and finds the
 * oldest pending message and the last attempts by index): a webhook without messages is there
 * with zero counts. The messages of in-process subscribers are no webhook's and not counted.
 */
export class DeliveryStats extends Context.Tag("@cmp/core/DeliveryStats")<
  DeliveryStats,
  {
    /** Every webhook of the organization, enabled or not, in the order of their ids. */
    readonly ofOrganization: (organizationId: string) => Effect.Effect<ReadonlyArray<DeliveryStatsRecord>>
  }
>() {}
