import type { DeliveryOutcome } from "@cmp/core"
import type { SendResult } from "./Answer.js"

/**
 * What happens to a message after one attempt. Spec section 6 rule 2 and section 8: at least
 * five retries five minutes apart, then the message is kept as `failed` ("permanent storage"),
 * from where it can be replayed. Standard Webhooks adds: 3xx is a failure, 410 Gone switches
 * the endpoint off, and Retry-After is honoured.
 */

/** `WEBHOOK_RETRY_SCHEDULE` default: seconds to wait before each retry. */
export const DEFAULT_RETRY_SCHEDULE: ReadonlyArray<number> = [300, 300, 300, 300, 300]

/** A Retry-After never postpones a retry by more than a day. */
export const MAX_RETRY_DELAY_SECONDS = 86400

/**
 * Parses `WEBHOOK_RETRY_SCHEDULE` ("300,300,300"); unset or blank gives the default. Throws on
 * anything that is not a comma-separated list of non-negative numbers, so a typo in the
 * environment stops the start instead of silently changing the schedule.
 */
export const parseRetrySchedule = (value: string | undefined): ReadonlyArray<number> => {
  if (value === undefined || value.trim() === "") return DEFAULT_RETRY_SCHEDULE
  const parts = value.split(",").map((s) => s.trim())
  const seconds = parts.map(Number)
  if (parts.some((p) => p === "") || seconds.some((n) => !Number.isFinite(n) || n < 0)) {
    throw new Error(`WEBHOOK_RETRY_SCHEDULE must be comma-separated non-negative seconds, got ${JSON.stringify(value)}`)
  }
  return seconds
}

export const isSuccess = (status: number | null): boolean => status !== null && status >= 200 && status <= 299

export interface Decision {
  readonly outcome: DeliveryOutcome
  /** The receiver answered 410 Gone: its webhook is to be disabled. */
  readonly disable: boolean
}

/**
 * The outcome of an attempt. `previousAttempts` is the message's `attempts_count` before this
 * attempt. With a schedule of n delays a message gets 1 + n attempts; the attempt that finds
 * the schedule exhausted leaves it `failed`.
 */
export const decide = (options: {
  readonly result: Pick<SendResult, "status" | "retryAfterSeconds">
  readonly previousAttempts: number
  readonly retrySchedule: ReadonlyArray<number>
  readonly nowMs: number
}): Decision => {
  const { result, retrySchedule } = options
  const attempts = options.previousAttempts + 1
  const last_status_code = result.status
  if (isSuccess(result.status)) {
    return { outcome: { status: "delivered", attempts_count: attempts, next_attempt_at: null, last_status_code }, disable: false }
  }
  if (result.status === 410) {
    return { outcome: { status: "failed", attempts_count: attempts, next_attempt_at: null, last_status_code }, disable: true }
  }
  if (attempts > retrySchedule.length) {
    return { outcome: { status: "failed", attempts_count: attempts, next_attempt_at: null, last_status_code }, disable: false }
  }
  let delaySeconds = retrySchedule[attempts - 1]!
  if ((result.status === 429 || result.status === 503) && result.retryAfterSeconds !== undefined) {
    // The receiver asked for a pause; a configured schedule longer than a day still applies.
    delaySeconds = Math.max(delaySeconds, Math.min(result.retryAfterSeconds, MAX_RETRY_DELAY_SECONDS))
  }
  return {
    outcome: {
      status: "pending",
      attempts_count: attempts,
      next_attempt_at: new Date(options.nowMs + delaySeconds * 1000).toISOString(),
      last_status_code
    },
    disable: false
  }
}

/** Final `failed` without a call: the webhook was deleted or switched off meanwhile. */
export const unavailable = (previousAttempts: number): DeliveryOutcome => ({
  status: "failed",
  attempts_count: previousAttempts + 1,
  next_attempt_at: null,
  last_status_code: null
})
