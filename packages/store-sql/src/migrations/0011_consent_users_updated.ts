import { createIndex, migration } from "../Ddl.js"

/**
 * Exports read an organization's users in `updated_at` order, page after page from the last
 * row's position: with this index each page is a seek, not a sort of every user of the range.
 */
export default migration([
  createIndex("consent_users", "consent_users_organization_updated", ["organization_id", "updated_at"])
])
