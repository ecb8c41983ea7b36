import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Timestamp } from "../Domain/Common.js"

/**
 * A consent receipt (ISO/IEC TS 27560) as flat JSON, and the port that signs it. docs/receipts.md
 * maps each field to its ISO/IEC TS 27560 field and W3C DPV term; docs/receipt.schema.json is the
 * JSON Schema `schema_version` names.
 */

/** The URI of the receipt's documented schema (docs/receipt.schema.json, whose `$id` it is). */
export const RECEIPT_SCHEMA = "urn:cmp:consent-receipt:1"

const Sha256Hex = Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/))

export const ReceiptEvent = Schema.Struct({
  event_id: Schema.String,
  event_time: Timestamp,
  state: Schema.Literal("given", "refused", "withdrawn"),
  expression_method: Schema.Literal("public_key", "consent_token", "api"),
  expressed_by: Schema.Literal("data_subject", "delegate", "controller"),
  gpc: Schema.Boolean,
  notice_text_content_id: Schema.optional(Schema.String),
  notice_sha256: Schema.optional(Sha256Hex),
  proofs_sha256: Schema.Array(Sha256Hex)
})
export type ReceiptEvent = typeof ReceiptEvent.Type

const VendorList = Schema.Array(Schema.String)

export const ConsentReceipt = Schema.Struct({
  schema_version: Schema.String,
  receipt_id: Schema.String,
  record_id: Schema.String,
  created_at: Timestamp,
  pii_principal_id: Schema.String,
  organization_user_id: Schema.optional(Schema.String),
  controller: Schema.Struct({ id: Schema.String, name: Schema.String, url: Schema.optional(Schema.String) }),
  jurisdiction: Schema.String,
  consent_state: Schema.Literal("none", "given", "refused", "expired", "recollect"),
  expires_at: Schema.optional(Timestamp),
  processing: Schema.Array(Schema.Struct({
    purpose_id: Schema.String,
    legal_basis: Schema.Literal("consent", "legitimate_interest"),
    state: Schema.Literal("given", "refused")
  })),
  vendors: Schema.Struct({ enabled: VendorList, disabled: VendorList, enabled_li: VendorList, disabled_li: VendorList }),
  events: Schema.Array(ReceiptEvent),
  /** False when older events, which no longer explain the state, were left out (see `ReceiptEvents.ts`). */
  events_complete: Schema.Boolean,
  log_head: Sha256Hex
})
export type ConsentReceipt = typeof ConsentReceipt.Type

/** `GET /v1/consents/users/:id/receipt`: the receipt, and its compact JWS. */
export const ReceiptAnswer = Schema.Struct({ receipt: ConsentReceipt, jws: Schema.String })
export type ReceiptAnswer = typeof ReceiptAnswer.Type

/** A public key receipts are signed with, as a JWK (RFC 7517, OKP Ed25519: RFC 8037). */
export const ReceiptKey = Schema.Struct({
  kty: Schema.String,
  crv: Schema.String,
  x: Schema.String,
  /** Its RFC 7638 thumbprint: the `kid` of the receipts it signed. */
  kid: Schema.String,
  alg: Schema.String,
  use: Schema.String
})
export type ReceiptKey = typeof ReceiptKey.Type

/** `GET /v1/consents/receipts/jwks`: every key receipts were signed with, retired ones included. */
export const ReceiptJwks = Schema.Struct({ keys: Schema.Array(ReceiptKey) })
export type ReceiptJwks = typeof ReceiptJwks.Type

/**
 * The platform's receipt signing key: one Ed25519 key at a time signs, the ones it replaced
 * stay published so receipts they signed still verify. Every server of one store signs with the
 * same key.
 */
export class ReceiptSigner extends Context.Tag("@cmp/core/ReceiptSigner")<
  ReceiptSigner,
  {
    /** A compact JWS (EdDSA, `kid` the key's RFC 7638 thumbprint) whose payload is the receipt's RFC 8785 JSON. */
    readonly sign: (receipt: ConsentReceipt) => Effect.Effect<string>
    /** Every public key, the current one first. */
    readonly publicKeys: Effect.Effect<ReadonlyArray<ReceiptKey>>
  }
>() {}
