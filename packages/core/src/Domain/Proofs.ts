import * as Schema from "effect/Schema"
import { exampleIds, Id, JsonObject, NonNegativeInt, opt, Timestamp } from "./Common.js"
import { DataUri, Delegate, EventConsents, Regulation, UserConsents } from "./Consent.js"

// ---------------------------------------------------------------- proofs

export const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
export const DOC = "application/msword"

/** What a proof of consent may be: a document or a picture of what the person saw and did. */
export const PROOF_MEDIA_TYPES = ["application/pdf", "image/png", "image/jpeg", "image/gif", DOCX, DOC] as const
export type ProofMediaType = (typeof PROOF_MEDIA_TYPES)[number]
export const ProofMediaType = Schema.Literal(...PROOF_MEDIA_TYPES)

/** Decoded size limit of one proof. */
export const MAX_PROOF_BYTES = 5 * 1024 * 1024


export const Proof = Schema.Struct({
  id: Id,
  organization_id: Id,
  size: NonNegativeInt,
  media_type: ProofMediaType,
  /** SHA-256 of the bytes, lowercase hex. */
  sha256: Schema.String,
  /** The bytes as a data URI: shown by `get` only. */
  file: Schema.optional(DataUri),
  created_at: Timestamp
})
export type Proof = typeof Proof.Type

export const ProofCreate = Schema.Struct({
  organization_id: Id,
  file: DataUri
}).annotations({
  // A real file, since the server reads its type from its bytes: a PNG of one transparent pixel.
  examples: [{
    organization_id: exampleIds.organization,
    file: "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
  }]
})


// ---------------------------------------------------------------- proof reports

/** A proof an event names, as a report shows it: its digest, or that it was erased since. */
export const ReportProof = Schema.Struct({
  id: Id,
  media_type: Schema.NullOr(Schema.String),
  size: Schema.NullOr(Schema.Number),
  sha256: Schema.NullOr(Schema.String),
  erased: Schema.Boolean
})

/** An entry of the consent log that covers an event (or its user): where it is and its hash. */
export const ReportLogEntry = Schema.Struct({
  shard: Schema.Number,
  seq: Schema.Number,
  hash: Schema.String,
  created_at: Timestamp
})

/** The notice wording an event names, as text. */
export const ReportNotice = Schema.Struct({
  id: Id,
  text_id: Id,
  content_version: Schema.Number,
  content: Schema.String
})

export const ReportEvent = Schema.Struct({
  id: Id,
  created_at: Timestamp,
  updated_at: Timestamp,
  status: Schema.String,
  consents: EventConsents,
  metadata: Schema.NullOr(JsonObject),
  delegate: Schema.NullOr(Delegate),
  notice: Schema.NullOr(ReportNotice),
  proofs: Schema.Array(ReportProof),
  log: Schema.Array(ReportLogEntry)
})

export const ReportRegulation = Schema.Struct({
  regulation: Regulation,
  /** The user's effective status for this regulation when the report was made. */
  consents: UserConsents,
  /** Every event of the user for this regulation, oldest first (pending ones included). */
  events: Schema.Array(ReportEvent)
})

/** What a proof report says: hashed (RFC 8785 canonical JSON, SHA-256) into the report's `sha256`. */
export const ProofReportDocument = Schema.Struct({
  generated_at: Timestamp,
  organization: Schema.Struct({ id: Id, name: Schema.String }),
  user: Schema.Struct({ id: Id, organization_user_id: Schema.NullOr(Schema.String), created_at: Timestamp }),
  regulations: Schema.Array(ReportRegulation),
  /** The head of the organization's consent log when the report was made. */
  log_head: Schema.String,
  /** The log entries covering the user itself (its creation, changes of its status). */
  user_log: Schema.Array(ReportLogEntry)
})
export type ProofReportDocument = typeof ProofReportDocument.Type

/**
 * What is left of a report once its user is erased: ids, times and digests. Its `sha256` still
 * names the report as it was made, so whoever holds a copy can check it.
 */
export const ErasedProofReportDocument = Schema.Struct({
  generated_at: Timestamp,
  erased_at: Timestamp,
  organization: Schema.Struct({ id: Id }),
  user: Schema.Struct({ id: Id, created_at: Timestamp }),
  log_head: Schema.String
})
export type ErasedProofReportDocument = typeof ErasedProofReportDocument.Type

export const ProofReport = Schema.Struct({
  id: Id,
  organization_id: Id,
  user_id: Id,
  organization_user_id: opt(Schema.String),
  /** The one regulation reported on; null: every regulation of the user. */
  regulation: opt(Regulation),
  /** SHA-256 (hex) of the canonical JSON of `report` as it was made. */
  sha256: Schema.String,
  /** SHA-256 (hex) of the report's PDF, rendered once and kept; null until a report made before PDFs were kept is first read as one. */
  pdf_sha256: opt(Schema.String),
  report: Schema.Union(ProofReportDocument, ErasedProofReportDocument),
  created_at: Timestamp
})
export type ProofReport = typeof ProofReport.Type

export const ProofReportCreate = Schema.Struct({
  organization_id: Id,
  user_id: Schema.optional(Id),
  organization_user_id: Schema.optional(Id),
  regulation: Schema.optional(Regulation)
}).annotations({
  // The user of the consent users' example.
  examples: [{ organization_id: exampleIds.organization, organization_user_id: "customer-1042", regulation: "gdpr" }]
})

// ---------------------------------------------------------------- the consent log

/** Where a verification found the log or a row not to match, and why. */
export const LogFault = Schema.Struct({
  shard: Schema.Number,
  seq: Schema.Number,
  /** `link`: the entry's hash does not follow from its chain; `row`: a current row differs from it; `missing`: a row has no entry. */
  reason: Schema.Literal("link", "row", "missing", "head"),
  /** The row concerned, for `row` and `missing`. */
  table: Schema.optional(Schema.String),
  id: Schema.optional(Schema.String)
})

export const LogVerification = Schema.Struct({
  entries: Schema.Number,
  valid: Schema.Boolean,
  head: Schema.String,
  first_invalid: Schema.NullOr(LogFault)
})
export type LogVerification = typeof LogVerification.Type
