import * as Schema from "effect/Schema"
import { Audit, exampleIds, Id, JsonObject, opt, Timestamp } from "./Common.js"

// ---------------------------------------------------------------- shared pieces

/**
 * A regulation code (`gdpr`, `ccpa`, `lgpd`, ...). The spec leaves the allowed values "not
 * shown", so any short lower-case code is accepted; the default (`gdpr`) is applied elsewhere.
 * A code may start with `_` (so `__proto__` is a code like any other: regulations are keys of
 * maps, which must never treat them as property names).
 */
export const Regulation = Schema.String.pipe(
  Schema.pattern(/^(?=_*[a-z])[a-z_][a-z0-9_-]{0,31}$/, {
    message: () => "must be a lower-case regulation code such as gdpr"
  })
)
export type Regulation = typeof Regulation.Type

/** Two-letter ISO 3166-1 alpha-2 code, upper-case. */
export const CountryCode = Schema.String.pipe(
  Schema.pattern(/^[A-Z]{2}$/, { message: () => "must be a two-letter upper-case country code" })
)

/** `confirmed` is final; a pending event does not count until confirmed. */
export const ConsentEventStatus = Schema.Literal("pending_approval", "confirmed")
export type ConsentEventStatus = typeof ConsentEventStatus.Type

export const ConsentPurpose = Schema.Struct({
  id: Id,
  enabled: Schema.Boolean,
  /** Legitimate interest. */
  enabled_li: Schema.optional(Schema.Boolean),
  metadata: Schema.optional(JsonObject)
})
export type ConsentPurpose = typeof ConsentPurpose.Type

const VendorIds = Schema.Array(Id)

export const ConsentVendors = Schema.Struct({
  enabled: Schema.optional(VendorIds),
  disabled: Schema.optional(VendorIds),
  enabled_li: Schema.optional(VendorIds),
  disabled_li: Schema.optional(VendorIds)
})
export type ConsentVendors = typeof ConsentVendors.Type

/** The JSON an event's `metadata` may hold, in UTF-8 bytes: it is copied into every proof report of its user. */
export const MAX_EVENT_METADATA_BYTES = 64 * 1024

const utf8 = new TextEncoder()

export const withinEventMetadata = (metadata: unknown) => utf8.encode(JSON.stringify(metadata)).byteLength <= MAX_EVENT_METADATA_BYTES
export const EVENT_METADATA_TOO_LARGE = `must be at most ${MAX_EVENT_METADATA_BYTES} bytes of JSON`

/** An event's own `metadata`: a JSON object of at most `MAX_EVENT_METADATA_BYTES`. */
const EventMetadata = JsonObject.pipe(Schema.filter(withinEventMetadata, { message: () => EVENT_METADATA_TOO_LARGE }))

const Tcfcs = Schema.String.pipe(Schema.maxLength(65_536, { message: () => "must be at most 65536 characters" }))

/** An IAB Global Privacy Platform string; that it decodes is checked on new writes (`ConsentStrings.ts`). */
const Gpp = Schema.String.pipe(
  Schema.maxLength(65_536, { message: () => "must be at most 65536 characters" }),
  Schema.annotations({ description: "An IAB Global Privacy Platform string; a new write's must decode (sections the decoder does not know are kept)" })
)

/** GPP section ids (2 for TCF EU v2, 7 for the US national section, …); a GPP header lists at most 4095. */
const GppSid = Schema.Array(
  Schema.Int.pipe(Schema.greaterThanOrEqualTo(1, { message: () => "must be a section id, an integer from 1" }))
).pipe(
  Schema.maxItems(4095, { message: () => "must list at most 4095 sections" }),
  Schema.annotations({ description: "The GPP sections that apply, each present in `gpp`; derived from `gpp` when not given" })
)

/** `consents` of an event: the choices this event records. */
export const EventConsents = Schema.Struct({
  purposes: Schema.optional(Schema.Array(ConsentPurpose)),
  vendors: Schema.optional(ConsentVendors),
  /** TCF consent string. */
  tcfcs: Schema.optional(Tcfcs),
  /** GPP string. */
  gpp: Schema.optional(Gpp),
  /** The GPP sections that apply; derived from `gpp` when not given. */
  gpp_sid: Schema.optional(GppSid)
})
export type EventConsents = typeof EventConsents.Type

/** `user` of an event: `id` and/or `organization_user_id` name the end user. */
export const EventUser = Schema.Struct({
  id: opt(Id),
  organization_user_id: opt(Id),
  metadata: opt(JsonObject),
  country: opt(CountryCode)
})
export type EventUser = typeof EventUser.Type

/**
 * The algorithms a signed user id may use. `hmac-sha256`, the reference SDK's, signs the three
 * values concatenated, which is ambiguous (a value moved from one to the next signs the same
 * text); `hmac-sha256-v2` joins them with a newline and always carries an expiration.
 */
export const USER_ID_AUTH_ALGORITHMS = ["hmac-sha256", "hmac-sha256-v2"] as const
export type UserIdAuthAlgorithm = typeof USER_ID_AUTH_ALGORITHMS[number]

/** The algorithm the docs, examples and the signing helper use. */
export const USER_ID_AUTH_ALGORITHM = "hmac-sha256-v2" as const satisfies UserIdAuthAlgorithm

/**
 * Proof that the organization vouches for `organization_user_id` on a write from a browser or
 * an app: the lowercase hex HMAC-SHA256, keyed with the value of the organization's Secret
 * `secret_id`, of the text `algorithm` builds from `organization_user_id`, `salt` and
 * `expiration` (unix seconds). Checked, never stored.
 */
export const OrganizationUserIdAuth = Schema.Struct({
  algorithm: Schema.String.pipe(
    Schema.filter((a): a is UserIdAuthAlgorithm => (USER_ID_AUTH_ALGORITHMS as ReadonlyArray<string>).includes(a), {
      message: () => `must be one of the supported algorithms: ${USER_ID_AUTH_ALGORITHMS.join(", ")}`
    })
  ),
  secret_id: Id,
  digest: Schema.String.pipe(Schema.maxLength(128, { message: () => "must be at most 128 characters" })),
  salt: Schema.optional(Schema.String.pipe(Schema.maxLength(1024, { message: () => "must be at most 1024 characters" }))),
  expiration: Schema.optional(Schema.Int.pipe(Schema.nonNegative()))
})
export type OrganizationUserIdAuth = typeof OrganizationUserIdAuth.Type

/** `user` of an event as a write names it: with the proof for its `organization_user_id`, when it needs one. */
export const EventUserInput = Schema.Struct({
  ...EventUser.fields,
  organization_user_id_auth: Schema.optional(OrganizationUserIdAuth)
})
export type EventUserInput = typeof EventUserInput.Type

/** Someone acting for the user (a support agent), recorded on the events made on its behalf. */
export const Delegate = Schema.Struct({
  id: Id,
  name: opt(Schema.String.pipe(Schema.maxLength(255, { message: () => "must be at most 255 characters" }))),
  metadata: opt(JsonObject)
})
export type Delegate = typeof Delegate.Type

// ---------------------------------------------------------------- events

/** A base64 data URI; its bytes are checked against its declared type where the file is kept. */
export const DataUri = Schema.String.pipe(
  Schema.filter((s) => s.startsWith("data:"), { message: () => "must be a base64 data URI (data:<type>;base64,…)" }),
  Schema.annotations({ description: "A base64 data URI: data:<media type>;base64,<bytes>" })
)

/** A proof sent with a consent event, kept in the event's transaction. */
export const InlineProof = Schema.Struct({ file: DataUri })

const ProofIds = Schema.Array(Id).pipe(Schema.maxItems(100, { message: () => "must name at most 100 proofs" }))
const InlineProofs = Schema.Array(InlineProof).pipe(Schema.maxItems(10, { message: () => "must hold at most 10 files" }))

export const ConsentEvent = Schema.Struct({
  id: Id,
  organization_id: Id,
  status: ConsentEventStatus,
  regulation: Regulation,
  metadata: opt(JsonObject),
  user: EventUser,
  consents: EventConsents,
  /** Who recorded it for the user, when not the user (a consent token's, or a backend's); null otherwise. */
  delegate: opt(Delegate),
  /** The proofs of consent it names (`consents/proofs`). */
  proofs_id: Schema.Array(Id),
  /** The wording the person was shown: an approved notice text content. */
  notice_text_content_id: opt(Id),
  /** The browser sent a Global Privacy Control signal (`Sec-GPC: 1`), or the body said so. */
  gpc: Schema.Boolean,
  /** The person opted in to purposes the signal refuses, after being shown it (`gpc_override`). */
  gpc_conflict: Schema.optional(Schema.Literal(true)),
  ...Audit
})
export type ConsentEvent = typeof ConsentEvent.Type

/** What a write through the public key answers: nothing the visitor did not send. */
export const PUBLIC_EVENT_ANSWER = ["id", "created_at", "status", "regulation"] as const

/**
 * The choices of the examples: purposes and vendors by the organization's own ids. No TC string:
 * one is the encoding of real choices, never an example's invention.
 */
const exampleChoices = {
  purposes: [{ id: "analytics", enabled: true }, { id: "advertising", enabled: false }],
  vendors: { enabled: ["google-analytics"], disabled: ["ad-network"] }
}

export const ConsentEventCreate = Schema.Struct({
  /** Client-chosen id; a duplicate is a conflict. */
  id: Schema.optional(Id),
  /** May be given, for imports. */
  created_at: Schema.optional(Timestamp),
  /** Default `confirmed`, applied elsewhere. */
  status: Schema.optional(ConsentEventStatus),
  /** Default `gdpr`, applied elsewhere. */
  regulation: Schema.optional(Regulation),
  metadata: opt(EventMetadata),
  user: EventUserInput,
  consents: EventConsents,
  delegate: opt(Delegate),
  proofs_id: Schema.optional(ProofIds),
  /** Files kept as proofs in the event's transaction, their ids added to `proofs_id`. */
  proofs: Schema.optional(InlineProofs),
  notice_text_content_id: opt(Id),
  /** A Global Privacy Control signal; `Sec-GPC: 1` on the request sets it, whatever the body says. */
  gpc: Schema.optional(Schema.Boolean),
  /**
   * The person chose after being shown the signal: the choices are recorded as sent, even where
   * the regulation's policy refuses purposes under GPC, and the signal no longer holds for the user.
   */
  gpc_override: Schema.optional(Schema.Boolean),
  organization_id: Id
}).annotations({
  // A guest's choice in the shop's banner, the device's id as the user's.
  examples: [{
    organization_id: exampleIds.organization,
    regulation: "gdpr",
    user: { id: "device-5f1c9e2a", country: "FR" },
    consents: exampleChoices,
    metadata: { banner: "checkout" }
  }]
})
export const ConsentEventUpdate = Schema.Struct({
  status: ConsentEventStatus,
  metadata: opt(EventMetadata),
  consents: EventConsents,
  /** Replaces the proofs it names. */
  proofs_id: Schema.optional(ProofIds),
  /** Files kept as proofs, their ids added to `proofs_id`. */
  proofs: Schema.optional(InlineProofs),
  notice_text_content_id: opt(Id)
}).annotations({ examples: [{ status: "confirmed", metadata: { banner: "checkout" }, consents: exampleChoices }] })

// ---------------------------------------------------------------- users

/**
 * The effective status of a user for one regulation: the merge of its confirmed events in
 * order of `created_at` (pending events do not count until confirmed).
 *
 *   {
 *     purposes: [{ id, enabled, enabled_li?, metadata? }, ...],   // one entry per purpose id
 *     vendors: { enabled?: [...], disabled?: [...], enabled_li?: [...], disabled_li?: [...] },
 *     tcfcs?: "...",                                            // latest TCF consent string
 *     gpp?: "...", gpp_sid?: [7],                               // latest GPP string and its sections
 *     gpc?: true,                                               // a GPC signal holds
 *     updated_at?: "2026-11-22T10:00:00.000Z"                   // created_at of the last event merged
 *   }
 */
export const ConsentState = Schema.Struct({
  purposes: Schema.Array(ConsentPurpose),
  vendors: ConsentVendors,
  tcfcs: Schema.optional(Tcfcs),
  gpp: Schema.optional(Gpp),
  gpp_sid: Schema.optional(GppSid),
  /** A Global Privacy Control signal holds: set by an event that had it, cleared by one with `gpc_override`. */
  gpc: Schema.optional(Schema.Boolean),
  updated_at: Schema.optional(Timestamp),
  /** The id of the event merged last (kept, never shown: what an expiry is announced for). */
  event_id: Schema.optional(Id),
  /** The notice text content the event merged last names, if any (for re-collection on new wording). */
  notice_text_content_id: Schema.optional(Id)
})
export type ConsentState = typeof ConsentState.Type

/** What a user keeps: regulation code → effective status, e.g. `{ "gdpr": ConsentState }`. */
export const UserConsentStates = Schema.Record({ key: Regulation, value: ConsentState })
export type UserConsentStates = typeof UserConsentStates.Type

const VendorList = Schema.Array(Id)

/**
 * A user's `consents` as clients see it: the fields of an event's `consents`, for one
 * regulation, every list present (empty when the user never chose).
 */
export const UserConsents = Schema.Struct({
  purposes: Schema.Array(ConsentPurpose),
  vendors: Schema.Struct({ enabled: VendorList, disabled: VendorList, enabled_li: VendorList, disabled_li: VendorList }),
  tcfcs: Schema.optional(Tcfcs),
  gpp: Schema.optional(Gpp),
  gpp_sid: Schema.optional(GppSid)
})
export type UserConsents = typeof UserConsents.Type

export const ConsentUser = Schema.Struct({
  id: Id,
  organization_id: Id,
  organization_user_id: opt(Id),
  metadata: opt(JsonObject),
  country: opt(CountryCode),
  /** The regulation `consents` shows: `?regulation=` on a read, else `gdpr` (output only). */
  regulation: Regulation,
  /** The effective status for `regulation` (output only). */
  consents: UserConsents,
  /** A Global Privacy Control signal holds for `regulation` (output only). */
  gpc: Schema.Boolean,
  /**
   * The state of the user's choice for `regulation` under the organization's consent policy
   * (output only): `none`, `given`, `refused`, and with a policy `expired` or `recollect`.
   */
  consent_state: Schema.Literal("none", "given", "refused", "expired", "recollect"),
  /** When the choice lapses, under a policy and after a confirmed event (output only). */
  expires_at: Schema.optional(Timestamp),
  ...Audit
})
export type ConsentUser = typeof ConsentUser.Type

/**
 * `consents`, when given, has the shape of an event's consents: creating or patching the user
 * then records one confirmed event of `regulation` (default `gdpr`), whose merge becomes the
 * user's effective status.
 */
export const ConsentUserCreate = Schema.Struct({
  organization_id: Id,
  organization_user_id: opt(Id),
  metadata: opt(JsonObject),
  country: opt(CountryCode),
  regulation: Schema.optional(Regulation),
  consents: Schema.optional(EventConsents)
}).annotations({
  examples: [{
    organization_id: exampleIds.organization,
    organization_user_id: "customer-1042",
    country: "FR",
    metadata: { plan: "premium" },
    regulation: "gdpr",
    consents: exampleChoices
  }]
})
export const ConsentUserUpdate = Schema.Struct({
  organization_user_id: opt(Id),
  metadata: opt(JsonObject),
  country: opt(CountryCode),
  regulation: Schema.optional(Regulation),
  consents: Schema.optional(EventConsents)
}).annotations({
  examples: [{ country: "DE", regulation: "gdpr", consents: { purposes: [{ id: "advertising", enabled: true }] } }]
})

// ---------------------------------------------------------------- consent tokens

/** The longest a consent token may live: 31 days. */
export const MAX_CONSENT_TOKEN_LIFETIME = 2_678_400

export const DEFAULT_CONSENT_TOKEN_LIFETIME = 900

const Lifetime = Schema.Int.pipe(
  Schema.greaterThanOrEqualTo(1, { message: () => "must be at least 1 second" }),
  Schema.lessThanOrEqualTo(MAX_CONSENT_TOKEN_LIFETIME, { message: () => `must be at most ${MAX_CONSENT_TOKEN_LIFETIME} seconds (31 days)` })
)

/** A short-lived credential with which one end user reads and records only its own consent. */
export const ConsentTokenInput = Schema.Struct({
  organization_id: Id,
  organization_user_id: Id,
  /** Seconds; 900 when not given. */
  lifetime: Schema.optional(Lifetime),
  /** Merged under the metadata of every event the token records. */
  metadata: opt(JsonObject),
  /** Recorded on every event the token records. */
  delegate: opt(Delegate)
}).annotations({
  examples: [{ organization_id: exampleIds.organization, organization_user_id: "customer-1042", lifetime: 900 }]
})
export type ConsentTokenInput = typeof ConsentTokenInput.Type

export const ConsentToken = Schema.Struct({
  ...ConsentTokenInput.fields,
  lifetime: Lifetime,
  expires_at: Timestamp,
  /** The token, shown once: `Authorization: Bearer <id_token>`. */
  id_token: Schema.String
})
export type ConsentToken = typeof ConsentToken.Type
