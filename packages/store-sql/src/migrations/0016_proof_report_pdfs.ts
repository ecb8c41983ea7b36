import { addColumn, bytes, createIndex, createTable, integer, migration, table, text } from "../Ddl.js"

/**
 * Proof reports keep the PDF they were rendered as, in a table of its own (listing reports never
 * reads a PDF), and its digest on the report. Reports made before have no PDF: it is rendered and
 * kept when first asked for. Erasing a user cuts its reports down, found by their user; the
 * `version` lets those writes go through the usual optimistic update.
 */
export default migration([
  addColumn("consent_proof_reports", "pdf_sha256", text()),
  addColumn("consent_proof_reports", "version", integer().notNull().default(1)),
  createIndex("consent_proof_reports", "consent_proof_reports_user", ["organization_id", "user_id"]),
  createTable(table("consent_proof_report_pdfs", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    bytes: bytes().notNull()
  }))
])
