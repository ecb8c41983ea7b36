import { addColumn, boolean, createTable, migration, table, text, timestamp } from "../Ddl.js"

/**
 * Signed user ids and consent tokens that end: a secret may refuse user-id signatures without an
 * expiration (existing secrets do not); an organization may refuse the consent tokens issued
 * before a date; an erased user's consent tokens are refused, the user named by a digest of its
 * id, so the erasure keeps no personal data.
 */
export default migration([
  addColumn("secrets", "require_expiration", boolean().notNull().default(false)),
  addColumn("organizations", "consent_tokens_revoked_before", timestamp()),
  createTable(table("consent_user_erasures", {
    organization_id: text().notNull(),
    id: text().notNull(),
    erased_at: timestamp().notNull()
  }, { primaryKey: ["organization_id", "id"] }))
])
