import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type { CommitWork } from "../Engine/Ports.js"
import type { WebhookDeliveryStatus, WebhookEventType } from "../Domain/Webhook.js"

/**
 * The delivery side of webhooks. Messages are written to the outbox in the same transaction
 * as the change they describe (see `Outbox`); a dispatcher claims due ones with a lease,
 * sends them and records every attempt.
 */

/** One message to one webhook; its `id` is the `webhook-id` header, constant across retries. */
export interface DeliveryRecord {
  readonly id: string
  readonly organization_id: string
  readonly webhook_id: string
  readonly event_type: WebhookEventType
  readonly regulation: string
  readonly status: WebhookDeliveryStatus
  readonly attempts_count: number
  readonly next_attempt_at: string | null
  readonly last_status_code: number | null
  /** The body as it is sent (already flattened when the webhook flattens). */
  readonly payload: Record<string, unknown>
  readonly created_at: string
  readonly updated_at: string
  readonly version: number
  /** The W3C `traceparent` of the write that caused the message, when traces are exported. */
  readonly trace_context?: string | null | undefined
}

export interface AttemptRecord {
  readonly id: string
  readonly delivery_id: string
  readonly organization_id: string
  /** The delivery's webhook (or subscriber): a webhook's last attempts are read by it. */
  readonly webhook_id: string
  readonly attempted_at: string
  /** null when no response arrived (timeout, refused connection, refused address). */
  readonly status_code: number | null
  /** Whether the receiver took the message (a 2xx answer, a handler that settled). */
  readonly succeeded: boolean
  readonly duration_ms: number
  readonly error: string | null
  readonly response_excerpt: string | null
}

/** Where a message goes after an attempt. */
export interface DeliveryOutcome {
  readonly status: "delivered" | "pending" | "failed"
  readonly attempts_count: number
  readonly next_attempt_at: string | null
  readonly last_status_code: number | null
}

export class DeliveryQueue extends Context.Tag("@cmp/core/DeliveryQueue")<
  DeliveryQueue,
  {
    /**
     * Claims up to `limit` due messages: pending ones whose `next_attempt_at` has come, and
     * delivering ones whose lease expired (their worker died). They become `delivering`,
     * leased to `workerId` until `leaseUntil`. Concurrent claimers never get the same message.
     * Messages of in-process subscribers (`webhook_id` `subscriber:<name>`) are claimed only
     * when their name is in `subscribers`: the names whose handler this process has.
     */
    readonly claim: (options: {
      readonly now: string
      readonly leaseUntil: string
      readonly workerId: string
      readonly limit: number
      readonly subscribers?: ReadonlyArray<string> | undefined
    }) => Effect.Effect<ReadonlyArray<DeliveryRecord>>
    /**
     * Records the attempt and, if the message is still leased to `workerId`, moves it to the
     * outcome; answers whether it did (a worker whose lease expired changes nothing but the log).
     */
    readonly complete: (options: {
      readonly id: string
      readonly workerId: string
      readonly attempt: AttemptRecord
      readonly outcome: DeliveryOutcome
      readonly now: string
    }) => Effect.Effect<boolean>
    /**
     * Gives the messages of `ids` that are still leased to `workerId` back as `pending`, due at
     * `now`, and answers how many: a dispatcher that stops with messages it holds and will not
     * send lets another claim them at once rather than when their lease ends. A message no
     * longer leased to it (completed, or claimed by another after its lease) is left alone.
     */
    readonly release: (options: {
      readonly ids: ReadonlyArray<string>
      readonly workerId: string
      readonly now: string
    }) => Effect.Effect<number>
    /**
     * When the earliest message `claim` would take with the same `subscribers` is due, so an
     * idle dispatcher knows how long to sleep.
     */
    readonly nextDueAt: (options?: {
      readonly subscribers?: ReadonlyArray<string> | undefined
    }) => Effect.Effect<Option.Option<string>>
    /**
     * Deletes, in one transaction, up to `limit` `delivered` messages delivered (their last move,
     * `updated_at`) before `before`, with their attempts; answers how many messages went. Other
     * statuses are never touched. Concurrent purgers take different rows or find them gone.
     */
    readonly purgeDelivered: (options: { readonly before: string; readonly limit: number }) => Effect.Effect<number>
  }
>() {}

/** The lease a message is written under when this process's dispatcher takes it from memory. */
export interface HandOffLease {
  readonly workerId: string
  readonly leaseUntil: string
}

/** Messages written in one transaction under one lease. */
export interface HandedMessages {
  readonly lease: HandOffLease
  readonly messages: ReadonlyArray<DeliveryRecord>
}

/**
 * Delivery without a claim: where this process runs a dispatcher, a change's messages to
 * webhooks are written already leased to it (`delivering`), in the change's transaction, and
 * handed to it in memory once that transaction committed (`UnitOfWork.afterCommit`), instead
 * of being claimed back from the outbox by a statement of their own. A message handed over is
 * an outbox row like any other: if this process stops or dies before sending it, its lease
 * runs out and any dispatcher claims it, as after a crash mid-send.
 */
export class DeliveryHandOff extends Context.Tag("@cmp/core/DeliveryHandOff")<
  DeliveryHandOff,
  {
    /**
     * The lease to write new messages under at `nowMs`, or undefined when the dispatcher takes
     * none from memory now (it is not running, it is stopping, or it is behind): they are then
     * written `pending`, for any dispatcher to claim.
     */
    readonly lease: (nowMs: number) => HandOffLease | undefined
    /** Run after the COMMIT with the messages written under each lease. */
    readonly take: CommitWork<HandedMessages>
  }
>() {
  /** No dispatcher in this process: every message is written `pending`. */
  static readonly None = Layer.succeed(DeliveryHandOff, { lease: () => undefined, take: { run: () => Effect.void } })
}

/** What a dispatcher needs to send to one webhook (secrets in clear, in memory only). */
export interface Endpoint {
  readonly id: string
  readonly organization_id: string
  readonly url: string
  readonly enabled: boolean
  /** `whsec_…`, for the Standard Webhooks signature. */
  readonly signingSecret: string
  /**
   * The secret a rotation replaced, while its overlap runs: messages sent before `expiresAtMs`
   * carry its signature after the current one's.
   */
  readonly previousSigningSecret?: { readonly secret: string; readonly expiresAtMs: number } | null | undefined
  readonly auth: {
    readonly token_url: string
    readonly client_id: string
    readonly client_secret: string
    readonly scope?: string | undefined
    readonly audience?: string | undefined
  } | null
}

export class Endpoints extends Context.Tag("@cmp/core/Endpoints")<
  Endpoints,
  {
    readonly get: (webhookId: string) => Effect.Effect<Option.Option<Endpoint>>
    /** A receiver answered 410 Gone: the webhook is switched off. */
    readonly disable: (webhookId: string, reason: string) => Effect.Effect<void>
    /** The webhook changed: drop any copy kept for quick reads. */
    readonly forget: (webhookId: string) => Effect.Effect<void>
  }
>() {}

/** Called after a webhook's change commits, so this process's dispatcher sees it at once. */
export const forgetEndpoint = (webhookId: unknown): Effect.Effect<void, never, Endpoints> =>
  typeof webhookId !== "string" ? Effect.void : Effect.flatMap(Endpoints, (e) => e.forget(webhookId))

// ---------------------------------------------------------------- in-process subscribers

/**
 * The outbox rows of an in-process subscriber carry `subscriber:<name>` as their `webhook_id`:
 * they are listed, leased, retried and replayed like a webhook's, and delivered by calling the
 * handler a process registered under that name instead of by an HTTP call.
 */
export const SUBSCRIBER_PREFIX = "subscriber:"

/** The `webhook_id` of a subscriber's messages. */
export const subscriberTarget = (name: string): string => `${SUBSCRIBER_PREFIX}${name}`

/** The subscriber's name when the `webhook_id` names one. */
export const subscriberOf = (webhookId: string): string | undefined =>
  webhookId.startsWith(SUBSCRIBER_PREFIX) ? webhookId.slice(SUBSCRIBER_PREFIX.length) : undefined

/** A subscriber's stored registration: its name (`id`) and its filters, as a webhook's. */
export type SubscriberRegistration = {
  readonly id: string
  /** The six types of the spec when empty (`user.consent_expired` only when named). */
  readonly event_types: ReadonlyArray<WebhookEventType>
  readonly regulations: ReadonlyArray<string>
  readonly flatten: boolean
  readonly created_at: string
  readonly updated_at: string
  readonly version: number
}

/**
 * Where the registrations of in-process subscribers are kept (the store's side of the outbox).
 * Names and filters reach it validated, with their defaults applied (`saveSubscriber`).
 */
export class SubscriberRegistrations extends Context.Tag("@cmp/core/SubscriberRegistrations")<
  SubscriberRegistrations,
  {
    /** Every registration, in the order of their names. */
    readonly list: Effect.Effect<ReadonlyArray<SubscriberRegistration>>
    /**
     * Creates the registration of `name`, or replaces its filters (keeping `created_at`, bumping
     * `version`); answers it as stored. Concurrent saves of one name do not fail: the last wins.
     */
    readonly save: (registration: {
      readonly name: string
      readonly event_types: ReadonlyArray<WebhookEventType>
      readonly regulations: ReadonlyArray<string>
      readonly flatten: boolean
      readonly now: string
    }) => Effect.Effect<SubscriberRegistration>
    /** Deletes the registration of `name`; answers whether there was one. */
    readonly remove: (name: string) => Effect.Effect<boolean>
  }
>() {}
