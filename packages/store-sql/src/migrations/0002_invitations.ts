import { createIndex, createTable, integer, migration, table, text, timestamp } from "../Ddl.js"

/** Member invitations, accepted by setting (or proving) a password. Frozen. */
export default migration([
  createTable(table("invitations", {
    id: text().primaryKey(),
    person_id: text().notNull(),
    organization_id: text().notNull(),
    member_id: text().notNull(),
    token_hash: text().notNull(),
    expires_at: timestamp().notNull(),
    accepted_at: timestamp(),
    created_at: timestamp().notNull(),
    updated_at: timestamp().notNull(),
    version: integer().notNull()
  })),
  createIndex("invitations", "invitations_member", ["member_id"])
])
