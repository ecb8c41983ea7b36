import { boolean, createTable, integer, json, migration, table, text, timestamp } from "../Ddl.js"

/**
 * Registrations of in-process subscribers: a name and a webhook's filters. Their messages go to
 * `webhook_deliveries` with `webhook_id` `subscriber:<name>`, so that table is unchanged.
 */
export default migration([
  createTable(table("subscribers", {
    id: text().primaryKey(),
    event_types: json().notNull(),
    regulations: json().notNull(),
    flatten: boolean().notNull(),
    created_at: timestamp().notNull(),
    updated_at: timestamp().notNull(),
    version: integer().notNull()
  }))
])
