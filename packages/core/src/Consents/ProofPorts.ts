import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { ProofMediaType, ProofReportDocument } from "../Domain/Proofs.js"

/**
 * The ports of proofs of consent and of the consent log: where the bytes of proofs live, what
 * a file's bytes are, how a report becomes a PDF, and the digests the log is made of.
 */

/** The key of a proof's bytes: its organization and id. */
export interface ProofKey {
  readonly organization_id: string
  readonly id: string
}

/**
 * Where the bytes of proofs live. The stores keep them in the database (a BLOB, a `bytea`), in
 * the write's transaction; a host may hand in another (an object store) instead.
 */
export class ProofFiles extends Context.Tag("@cmp/core/ProofFiles")<
  ProofFiles,
  {
    readonly put: (key: ProofKey, bytes: Uint8Array) => Effect.Effect<void>
    readonly get: (key: ProofKey) => Effect.Effect<Option.Option<Uint8Array>>
    readonly remove: (key: ProofKey) => Effect.Effect<void>
    /** Every proof of an organization (the organization is removed). */
    readonly forget: (organizationId: string) => Effect.Effect<void>
  }
>() {}

/**
 * What a file is, read from its bytes (never from what its sender says): one of the proof
 * types, or `undefined` for anything else. A DOC is an OLE compound file holding a Word
 * document, a DOCX a ZIP package holding one: other OLE or ZIP files are neither.
 */
export class MediaTypes extends Context.Tag("@cmp/core/MediaTypes")<
  MediaTypes,
  { readonly detect: (bytes: Uint8Array) => Effect.Effect<ProofMediaType | undefined> }
>() {}

/** A proof report as a PDF an auditor reads. */
export class ReportPdf extends Context.Tag("@cmp/core/ReportPdf")<
  ReportPdf,
  {
    readonly render: (
      report: { readonly id: string; readonly sha256: string; readonly created_at: string; readonly report: ProofReportDocument }
    ) => Effect.Effect<Uint8Array>
  }
>() {}

/** SHA-256 and the canonical JSON it is taken over: synchronous, they run inside every logged write. */
export class Digests extends Context.Tag("@cmp/core/Digests")<
  Digests,
  {
    /** SHA-256 of bytes, or of a string's UTF-8, as lowercase hex. */
    readonly sha256: (data: Uint8Array | string) => string
    /** The canonical JSON of a value (RFC 8785: sorted keys, no spaces, ECMAScript numbers). */
    readonly canonicalJson: (value: unknown) => string
  }
>() {}
