import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Principal } from "./Principal.js"

/**
 * What the platform counts for its operators, one method per thing that happens. Labels stay
 * bounded: a route's template or a service's path, never an id, a user or a token.
 */

/** Where a webhook attempt left its message: sent, to be retried, or given up (`failed`). */
export type AttemptOutcome = "delivered" | "retry" | "failed"

/** Where an attempt left an invitation's mail: sent, to be retried, or given up (`failed`). */
export type MailOutcomeLabel = "sent" | "retry" | "failed"

/** How a public write or a consent-token request ended: by its status class. */
export type RequestOutcome = "ok" | "rejected" | "rate-limited" | "error"

export interface MetricsService {
  /** One answered request: the route's template (or service path), its method and status. */
  readonly request: (service: string, method: string, status: number, seconds: number) => Effect.Effect<void>
  /** Consent events written by one call (a batch counts each). */
  readonly consentEventsIngested: (count: number) => Effect.Effect<void>
  /** One delivery attempt (HTTP call or in-process handler) and how long it took. */
  readonly deliveryAttempt: (outcome: AttemptOutcome, seconds: number) => Effect.Effect<void>
  /** One attempt to send an invitation's mail, by where it left the mail. */
  readonly mailAttempt: (outcome: MailOutcomeLabel) => Effect.Effect<void>
  /** A request refused because its organization spent its `api_requests` quota. */
  readonly quotaRejected: Effect.Effect<void>
  /** An end user's write (a public key's, a consent token's) refused by the per-organization or per-address rate limit. */
  readonly publicRateLimited: Effect.Effect<void>
  /** A public consent write (with the organization's public key) and how it ended. */
  readonly publicWrite: (outcome: RequestOutcome) => Effect.Effect<void>
  /** A consent-token request and how it ended. */
  readonly consentTokenRequest: (outcome: RequestOutcome) => Effect.Effect<void>
  /** A verification of an organization's consent log, intact or not. */
  readonly logVerified: (intact: boolean) => Effect.Effect<void>
  /** The Prometheus text of every metric, gauges read at this moment. */
  readonly scrape: Effect.Effect<{ readonly contentType: string; readonly text: string }>
}

/** What an operation's metric is told of one answer: its status, and who asked once that was known. */
export interface AnsweredOperation {
  readonly status: number
  /** The principal's kind; unset for a request answered before it was authenticated (a redirect, a refused `Host`). */
  readonly principal?: Principal["_tag"] | undefined
}

/**
 * What answering an operation adds to the metrics beyond the request count every answer adds,
 * named by its declaration (`metrics` of a resource's method, `metric` of an action), so the
 * HTTP layer records it without knowing which operation means what.
 */
export type OperationMetric = (metrics: MetricsService, answered: AnsweredOperation) => Effect.Effect<void>

export class Metrics extends Context.Tag("@cmp/core/Metrics")<Metrics, MetricsService>() {
  /**
   * Counts nothing: for compositions that run use-cases without an operator watching (the engine
   * tests), given on purpose where the real registry would be.
   */
  static readonly none: Layer.Layer<Metrics> = Layer.succeed(Metrics, {
    request: () => Effect.void,
    consentEventsIngested: () => Effect.void,
    deliveryAttempt: () => Effect.void,
    mailAttempt: () => Effect.void,
    quotaRejected: Effect.void,
    publicRateLimited: Effect.void,
    publicWrite: () => Effect.void,
    consentTokenRequest: () => Effect.void,
    logVerified: () => Effect.void,
    scrape: Effect.succeed({ contentType: "text/plain; version=0.0.4; charset=utf-8", text: "" })
  })
}

/** The outcome of a request by its status. */
export const outcomeOf = (status: number): RequestOutcome =>
  status === 429 ? "rate-limited" : status < 400 ? "ok" : status < 500 ? "rejected" : "error"
