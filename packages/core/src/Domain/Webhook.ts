import * as Schema from "effect/Schema"
import { Audit, exampleIds, Id, JsonObject, NonNegativeInt, opt, Timestamp, Url } from "./Common.js"
import { Regulation } from "./Consent.js"

// ---------------------------------------------------------------- event types

/** Spec section 6: what a webhook (or subscriber) with an empty `event_types` receives. */
export const specEventTypes = [
  "event.created",
  "event.updated",
  "event.deleted",
  "user.created",
  "user.updated",
  "user.deleted"
] as const

/**
 * Every type a webhook may name: the spec's six, and `user.consent_expired` (a user's last
 * choice lapsed under the consent policy), sent only where a webhook names it, so a receiver
 * written for the spec never meets a type it does not know.
 */
export const webhookEventTypes = [...specEventTypes, "user.consent_expired"] as const

export const WebhookEventType = Schema.Literal(...webhookEventTypes)
export type WebhookEventType = typeof WebhookEventType.Type

/** Whether a webhook's (or subscriber's) `event_types` accepts a type: an empty list means the spec's six. */
export const acceptsType = (eventTypes: ReadonlyArray<WebhookEventType>, type: WebhookEventType): boolean =>
  eventTypes.length > 0 ? eventTypes.includes(type) : (specEventTypes as ReadonlyArray<WebhookEventType>).includes(type)

// ---------------------------------------------------------------- configuration

const ShortString = Schema.String.pipe(Schema.maxLength(1024, { message: () => "must be at most 1024 characters" }))
const NonEmptyShortString = ShortString.pipe(
  Schema.minLength(1, { message: () => "must not be empty" })
)

/** Client credentials of the customer's authorization server, as shown (the secret is write-only). */
export const WebhookAuth = Schema.Struct({
  token_url: Url,
  client_id: NonEmptyShortString,
  scope: Schema.optional(ShortString),
  audience: Schema.optional(ShortString)
})
export type WebhookAuth = typeof WebhookAuth.Type

/** Client credentials on input. `token_url` must be https; that rule is enforced elsewhere. */
export const WebhookAuthInput = Schema.Struct({
  token_url: Url,
  client_id: NonEmptyShortString,
  client_secret: NonEmptyShortString,
  scope: Schema.optional(ShortString),
  audience: Schema.optional(ShortString)
})
export type WebhookAuthInput = typeof WebhookAuthInput.Type

/**
 * `url` is an http(s) URL here; the rule "https, plain http only for hosts listed in
 * WEBHOOK_ALLOW_HOSTS" is enforced elsewhere.
 */
export const Webhook = Schema.Struct({
  id: Id,
  organization_id: Id,
  url: Url,
  enabled: Schema.Boolean,
  /** Empty = the six types of the spec (not `user.consent_expired`). */
  event_types: Schema.Array(WebhookEventType),
  flatten: Schema.Boolean,
  /** Default `["gdpr"]`. */
  regulations: Schema.Array(Regulation),
  auth: opt(WebhookAuth),
  /** `whsec_` + base64 of 32 random bytes; shown once, on creation and on each rotation. */
  signing_secret: Schema.optional(Schema.String),
  /**
   * Output only: while a rotation's overlap runs, when the replaced secret stops signing
   * messages beside the current one; null when no overlap runs.
   */
  previous_secret_expires_at: opt(Timestamp),
  ...Audit
})
export type Webhook = typeof Webhook.Type

const exampleWebhook = {
  url: "https://hooks.acme.example.com/consent",
  enabled: true,
  event_types: ["event.created", "user.updated"],
  flatten: false,
  regulations: ["gdpr"]
} as const

export const WebhookCreate = Schema.Struct({
  organization_id: Id,
  url: Url,
  enabled: Schema.optional(Schema.Boolean),
  event_types: Schema.optional(Schema.Array(WebhookEventType)),
  flatten: Schema.optional(Schema.Boolean),
  regulations: Schema.optional(Schema.Array(Regulation)),
  auth: opt(WebhookAuthInput)
}).annotations({ examples: [{ organization_id: exampleIds.organization, ...exampleWebhook }] })
export const WebhookUpdate = Schema.Struct({
  url: Url,
  enabled: Schema.Boolean,
  event_types: Schema.Array(WebhookEventType),
  flatten: Schema.Boolean,
  regulations: Schema.Array(Regulation),
  auth: opt(WebhookAuthInput)
}).annotations({ examples: [{ ...exampleWebhook, auth: null }] })

// ---------------------------------------------------------------- signing secret rotation

/** The longest overlap of a rotation: a week. */
export const MAX_SECRET_OVERLAP_S = 604_800
/** The overlap of a rotation that names none: a day. */
export const DEFAULT_SECRET_OVERLAP_S = 86_400

const overlapMessage = () => `must be an integer from 0 to ${MAX_SECRET_OVERLAP_S} (seconds)`

/**
 * The body of a rotation of a webhook's signing secret (optional): how many seconds the replaced
 * secret keeps signing beside the new one; 0 stops it at once.
 */
export const WebhookSecretRotation = Schema.Struct({
  overlap_s: Schema.optional(
    Schema.Number.pipe(
      Schema.int({ message: overlapMessage }),
      Schema.between(0, MAX_SECRET_OVERLAP_S, { message: overlapMessage })
    )
  )
}).annotations({ examples: [{ overlap_s: DEFAULT_SECRET_OVERLAP_S }] })
export type WebhookSecretRotation = typeof WebhookSecretRotation.Type

// ---------------------------------------------------------------- delivery log

export const WebhookDeliveryStatus = Schema.Literal("pending", "delivering", "delivered", "failed")
export type WebhookDeliveryStatus = typeof WebhookDeliveryStatus.Type

/** One HTTP attempt of a delivery. */
export const WebhookAttempt = Schema.Struct({
  id: Id,
  delivery_id: Id,
  attempted_at: Timestamp,
  /** null when no response was received (timeout, connection error). */
  status_code: Schema.NullOr(Schema.Int),
  duration_ms: NonNegativeInt,
  error: Schema.NullOr(Schema.String),
  response_excerpt: Schema.NullOr(Schema.String)
})
export type WebhookAttempt = typeof WebhookAttempt.Type

/** One message to one webhook; `id` is the `webhook-id` header value, the same across retries. */
export const WebhookDelivery = Schema.Struct({
  id: Id,
  organization_id: Id,
  webhook_id: Id,
  event_type: WebhookEventType,
  regulation: Regulation,
  status: WebhookDeliveryStatus,
  attempts_count: NonNegativeInt,
  next_attempt_at: Schema.NullOr(Timestamp),
  last_status_code: Schema.NullOr(Schema.Int),
  /** The payload as sent (flattened when the webhook flattens). */
  payload: JsonObject,
  created_at: Timestamp,
  updated_at: Timestamp,
  version: Schema.Int,
  /** Present on `get`. */
  attempts: Schema.optional(Schema.Array(WebhookAttempt))
})
export type WebhookDelivery = typeof WebhookDelivery.Type
