import { addColumn, createIndex, createTable, integer, migration, table, text, timestamp } from "../Ddl.js"

/**
 * Retention: delivered webhook messages and finished invitation mails are purged some days after
 * they finished, read by an index of status and time (the purge never scans the outbox); an
 * organization may have the consent events of its inactive users purged after a number of days
 * (`consent_retention_days`, null: never); the purge of consent events remembers, per
 * organization, up to which user (by `updated_at`, then id) it has looked.
 */
export default migration([
  createIndex("webhook_deliveries", "webhook_deliveries_finished", ["status", "updated_at"]),
  createIndex("mail_outbox", "mail_outbox_finished", ["status", "updated_at"]),
  addColumn("organizations", "consent_retention_days", integer()),
  createTable(table("retention_marks", {
    organization_id: text().notNull(),
    id: text().notNull(),
    mark_at: timestamp().notNull(),
    mark_id: text().notNull(),
    updated_at: timestamp().notNull(),
    version: integer().notNull()
  }, { primaryKey: ["organization_id", "id"] }))
])
