import { createIndex, createTable, integer, migration, table, text, timestamp } from "../Ddl.js"

/**
 * The mail outbox: an invitation's mail, written with the invite and sent after its commit (the
 * mail sealed, and dropped once sent or given up). Invitations get an index by organization and
 * time, for the invitations an organization made in the last hour (`INVITATIONS_PER_HOUR`).
 */
export default migration([
  createTable(table("mail_outbox", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    invitation_id: text().notNull(),
    status: text().notNull(),
    attempts_count: integer().notNull(),
    next_attempt_at: timestamp(),
    mail_sealed: text(),
    last_error: text(),
    lease_until: timestamp(),
    leased_by: text(),
    created_at: timestamp().notNull(),
    updated_at: timestamp().notNull(),
    version: integer().notNull()
  })),
  createIndex("mail_outbox", "mail_outbox_due", ["status", "next_attempt_at"]),
  createIndex("invitations", "invitations_organization", ["organization_id", "created_at"])
])
