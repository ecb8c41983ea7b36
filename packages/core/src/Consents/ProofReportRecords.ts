import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { nowIso } from "../Engine/Clock.js"
import { eachRow } from "./ConsentLog.js"
import { type ErasedProofReportDocument, ProofReport, ProofReportCreate, type ProofReportDocument } from "../Domain/Proofs.js"
import { Storage } from "../Engine/Ports.js"
import { serviceWith } from "../Engine/Services.js"
import { eq } from "../Engine/Query.js"
import { declareResource, type StoredRow } from "../Engine/Resource.js"
import { defineTable, field } from "../Engine/Tables.js"

/**
 * What proof reports are kept as: the report rows and, apart, the PDF each was rendered as, and
 * what erasing a user leaves of them. Apart from the reports' behaviour, so that a user's
 * erasure reaches them without the consent resources importing the reports that read them.
 */

export const Reports = declareResource({
  name: "proof report",
  path: "consents/proof-reports",
  // Consent records, in the consent log: no configuration.
  audited: false,
  table: "consent_proof_reports",
  indexes: [
    { name: "consent_proof_reports_organization", columns: ["organization_id", "created_at"] },
    { name: "consent_proof_reports_user", columns: ["organization_id", "user_id"] }
  ],
  output: ProofReport,
  createInput: ProofReportCreate,
  methods: ["find", "get", "create"],
  ownerField: "organization_id",
  premiumFeature: "versions_and_proofs",
  // The consents API (`/v1/consents/…`) is outside `api_requests`.
  countsApiRequests: false,
  privateFields: { version: field.number },
  defaults: { organization_user_id: null, regulation: null, pdf_sha256: null }
})

export type ReportRow = StoredRow<typeof Reports>

/** The PDF of a report, rendered once and kept: a table apart, so listing reports never reads one. */
export const ReportPdfsTable = defineTable("consent_proof_report_pdfs", {
  id: field.string,
  organization_id: field.string,
  bytes: { kind: "bytes", nullable: false }
}, { references: [{ field: "id", table: "consent_proof_reports", onDelete: "cascade" }] })

export const isErased = (report: ReportRow["report"]): report is ErasedProofReportDocument => "erased_at" in report

/** The report a row holds, unless its user was erased since. */
export const madeReport = (row: ReportRow): Option.Option<ProofReportDocument> =>
  isErased(row.report) ? Option.none() : Option.some(row.report)

const pdfs = () => serviceWith(Storage, (s) => s.repository(ReportPdfsTable))

export const keptPdf = (row: ReportRow) =>
  Effect.flatMap(pdfs(), (repo) => Effect.map(repo.get(row.id), Option.map((kept) => kept.bytes as Uint8Array)))

/** Keeps a report's PDF, in the caller's transaction. */
export const keepPdf = (row: ReportRow, bytes: Uint8Array) =>
  Effect.flatMap(pdfs(), (repo) => repo.create({ id: row.id, organization_id: row.organization_id, bytes }))

/**
 * Erasure of a user, in its transaction: each of its reports keeps ids, times and digests (its
 * `sha256` still names the report as made, `pdf_sha256` the PDF given out), no longer carries the
 * user's `organization_user_id`, and its PDF is removed.
 */
export const eraseReportsOf = (organizationId: string, userId: string) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const reports = storage.repository(Reports.tableDef)
    const files = storage.repository(ReportPdfsTable)
    const at = yield* nowIso
    yield* eachRow(Reports.tableDef, [eq("organization_id", organizationId), eq("user_id", userId)], (found) =>
      Effect.gen(function*() {
        const row = found as ReportRow
        yield* Effect.orDie(files.remove(row.id))
        if (isErased(row.report)) return
        const report: ErasedProofReportDocument = {
          generated_at: row.report.generated_at,
          erased_at: at,
          organization: { id: row.report.organization.id },
          user: { id: row.report.user.id, created_at: row.report.user.created_at },
          log_head: row.report.log_head
        }
        yield* Effect.orDie(reports.patch(row.id, { organization_user_id: null, report }, row.version))
      }))
  })
