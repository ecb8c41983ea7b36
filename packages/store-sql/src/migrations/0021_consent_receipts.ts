import { addColumn, migration, text } from "../Ddl.js"

/**
 * Consent receipts name how each event was expressed: through the public key (`public_key`), a
 * consent token (`consent_token`), or an API credential (null, as every event written before).
 */
export default migration([
  addColumn("consent_events", "expression_method", text())
])
