import { createIndex, createTable, json, migration, table, text, timestamp } from "../Ddl.js"

/**
 * The audit trail: one entry per change of a configuration record, never changed nor removed
 * with what it describes (no reference to the organization, whose removal leaves its entries).
 * Read by organization in time order, and purged by age.
 */
export default migration([
  createTable(table("audit_logs", {
    id: text().primaryKey(),
    organization_id: text(),
    principal_kind: text().notNull(),
    principal_id: text().notNull(),
    action: text().notNull(),
    resource: text().notNull(),
    resource_id: text().notNull(),
    fields: json().notNull(),
    address: text(),
    created_at: timestamp().notNull()
  })),
  createIndex("audit_logs", "audit_logs_organization", ["organization_id", "created_at"]),
  createIndex("audit_logs", "audit_logs_created", ["created_at"])
])
