import { boolean, createIndex, createTable, integer, json, migration, table, text, timestamp } from "../Ddl.js"

/**
 * Consent over time: an organization's consent policy per regulation (how long a choice lasts,
 * when it is asked again, what a browser's privacy signal refuses).
 */
export default migration([
  createTable(table("consent_policies", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    regulation: text().notNull(),
    consent_duration: integer().notNull(),
    consent_duration_unit: text().notNull(),
    denied_consent_duration: integer(),
    denied_consent_duration_unit: text(),
    recollect_before: timestamp(),
    notice_text_id: text(),
    recollect_on_new_content: boolean().notNull().default(false),
    gpc_purpose_ids: json().notNull(),
    essential_purpose_ids: json().notNull(),
    created_at: timestamp().notNull(),
    updated_at: timestamp().notNull(),
    version: integer().notNull()
  }, { unique: [["organization_id", "regulation"]] })),
  createIndex("consent_policies", "consent_policies_organization", ["organization_id", "created_at"])
])
