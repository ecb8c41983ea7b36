import * as Effect from "effect/Effect"
import {
  ConsentEvent,
  ConsentEventCreate,
  ConsentEventUpdate,
  type ConsentState,
  ConsentUser,
  ConsentUserCreate,
  ConsentUserUpdate,
  PUBLIC_EVENT_ANSWER,
  Regulation,
  type UserConsentStates
} from "../Domain/Consent.js"
import { type OperationMetric, outcomeOf } from "../Engine/Metrics.js"
import { Storage } from "../Engine/Ports.js"
import { type Principal } from "../Engine/Principal.js"
import { declareResource, type StoredRow } from "../Engine/Resource.js"
import { field, jsonField } from "../Engine/Tables.js"
import { toOutput } from "../Engine/Views.js"
import { FILE_BODY_LIMIT } from "./Proofs.js"
import { CONSENT_STATES } from "./PolicyState.js"
import { serviceWith } from "../Engine/Services.js"

/**
 * Consent events and end users. A user's effective status, per regulation, is the merge of
 * its confirmed events in `created_at` order; every change is told to the organization's
 * webhooks through the outbox, in the same transaction (spec section 6).
 */

export const DEFAULT_REGULATION = "gdpr"

export type UserConsentsValue = Record<string, ConsentState>

/** Where `regulation` and `consents` of a user come from: the view, not a column. */
const userView = ["regulation", "consents", "gpc", "consent_state", "expires_at"] as const

/** A written event counts as ingested; one through the public key is a public write, by how it ended. */
const eventWritten: OperationMetric = (metrics, { principal, status }) =>
  Effect.zipRight(
    principal === "PublicKey" ? metrics.publicWrite(outcomeOf(status)) : Effect.void,
    status === 201 ? metrics.consentEventsIngested(1) : Effect.void
  )

/** What an event holds where its write says nothing (its regulation apart, which the write may name). */
export const EVENT_DEFAULTS = {
  status: "confirmed",
  metadata: null,
  delegate: null,
  proofs_id: [],
  notice_text_content_id: null,
  gpc: false,
  gpc_conflict: null,
  gpc_override: null,
  expression_method: null
} as const

/** The data of the two declarations; their behaviour is added in `Events.ts` and `Users.ts`. */
export const Events = declareResource({

  name: "consent event",
  path: "consents/events",
  // The consent log records every consent write: the audit trail is for configuration, and the
  // consent path's speed is not spent on it.
  audited: false,
  table: "consent_events",
  indexes: [
    { name: "consent_events_organization", columns: ["organization_id", "created_at"] },
    { name: "consent_events_user", columns: ["organization_id", "user_id", "regulation", "created_at"] },
    { name: "consent_events_organization_user", columns: ["organization_id", "organization_user_id"] }
  ],
  keyedByOrganization: true,
  output: ConsentEvent,
  createInput: ConsentEventCreate,
  updateInput: ConsentEventUpdate,
  methods: ["find", "get", "create", "patch", "remove"],
  ownerField: "organization_id",
  premiumFeature: "consents_api",
  // A visitor's page records events with the public key; a consent token records and reads its user's.
  endUsers: {
    methods: { create: ["public-key", "consent-token"], find: ["consent-token"] },
    publicAnswer: PUBLIC_EVENT_ANSWER,
    elsewhere: {
      "public-key": "A public key only records consent events (POST /v1/consents/events): other requests need an access token",
      "consent-token": "A consent token reads and records its own user's consent only"
    }
  },
  // The consents API (`/v1/consents/…`) is outside `api_requests`.
  countsApiRequests: false,
  metrics: { create: eventWritten },
  cursorPaging: true,
  // `gpc_override` is input only, kept so that a merge from scratch knows where a signal ended.
  // `expression_method`: `public_key` or `consent_token` for an end user's write, null for an API
  // credential's (and every event written before it was recorded), what a receipt says of it.
  privateFields: {
    user_id: field.string,
    organization_user_id: field.optionalString,
    gpc_override: field.optionalBoolean,
    expression_method: field.optionalString
  },
  queryable: ["user_id", "organization_user_id"],
  references: [{ field: "user_id", table: "consent_users", onDelete: "cascade" }],
  defaults: { regulation: DEFAULT_REGULATION, ...EVENT_DEFAULTS },
  headerFields: [{
    header: "Sec-GPC",
    when: "1",
    field: "gpc",
    value: true,
    description: "`1`: the browser's Global Privacy Control signal, which sets the event's `gpc` whatever the body says"
  }],
  // Proofs may travel inline, as data URIs.
  bodyLimit: FILE_BODY_LIMIT
})

export const Users = declareResource({

  name: "consent user",
  path: "consents/users",
  // Recorded by the consent log, as the events are.
  audited: false,
  table: "consent_users",
  indexes: [
    { name: "consent_users_organization", columns: ["organization_id", "created_at"] },
    // Exports page through a range of users by `updated_at`.
    { name: "consent_users_organization_updated", columns: ["organization_id", "updated_at"] }
  ],
  keyedByOrganization: true,
  transient: userView,
  // Every regulation's effective status; the output shows one of them.
  privateFields: { consent_states: jsonField<UserConsentStates>() },
  viewParams: { regulation: Regulation },
  output: ConsentUser,
  createInput: ConsentUserCreate,
  updateInput: ConsentUserUpdate,
  methods: ["find", "get", "create", "patch", "remove"],
  ownerField: "organization_id",
  premiumFeature: "consents_api",
  // A consent token reads its own user (by id or by `$by_organization_user_id`).
  endUsers: { methods: { get: ["consent-token"] } },
  // The consents API (`/v1/consents/…`) is outside `api_requests`.
  countsApiRequests: false,
  cursorPaging: true,
  unique: [["organization_id", "organization_user_id"]],
  passthrough: ["$by_organization_user_id"],
  // Computed under the organization's policy when the find runs (`ConsentStateFilter.ts`).
  filters: {
    consent_state: {
      values: CONSENT_STATES,
      description: "The users whose `consent_state` for the `regulation` shown (default `gdpr`) is this one, " +
        "or one of several with `consent_state[$in]=expired&consent_state[$in]=recollect`: computed under the " +
        "organization's consent policy when the request is answered, read through an index"
    }
  },
  defaults: { consent_states: {}, metadata: null, country: null, organization_user_id: null },
})

export type EventRow = StoredRow<typeof Events>
export type UserRow = StoredRow<typeof Users>

/**
 * Who made a change (the `source` of `event.created` and `event.updated`): a public key is
 * named by its organization, never by its value; a consent token by its id.
 */
export const sourceOf = (p: Principal) => {
  switch (p._tag) {
    case "Member":
      return { type: "member", id: p.personId }
    case "Operator":
      return { type: "operator", id: p.keyId }
    case "Client":
      return { type: "api-key", id: p.keyId }
    case "PublicKey":
      return { type: "public-key", organization_id: p.organizationId }
    case "ConsentToken":
      return { type: "consent-token", id: p.tokenId }
  }
}

export const users = () => serviceWith(Storage, (s) => s.repository(Users.tableDef))

export const events = () => serviceWith(Storage, (s) => s.repository(Events.tableDef))

export const eventOut = (row: EventRow) => toOutput(Events, row)
