import { boolean, createIndex, createTable, integer, json, migration, table, text, timestamp } from "../Ddl.js"

const audit = {
  created_at: timestamp().notNull(),
  updated_at: timestamp().notNull(),
  version: integer().notNull()
}

/** As created here; 0006 rebuilds it on SQLite from this description. */
export const consentUsers = table("consent_users", {
  id: text().primaryKey(),
  organization_id: text().notNull(),
  organization_user_id: text(),
  metadata: json(),
  country: text(),
  consents: json().notNull(),
  ...audit
}, { unique: [["organization_id", "organization_user_id"]] })

/** As created here; 0006 rebuilds it on SQLite from this description. */
export const consentEvents = table("consent_events", {
  id: text().primaryKey(),
  organization_id: text().notNull(),
  status: text().notNull(),
  regulation: text().notNull(),
  metadata: json(),
  user: json().notNull(),
  consents: json().notNull(),
  user_id: text().notNull(),
  organization_user_id: text(),
  ...audit
})

/** Consent events and users, webhook configurations, the delivery outbox and its attempt log. Frozen. */
export default migration([
  createTable(consentUsers),
  createIndex("consent_users", "consent_users_organization", ["organization_id", "created_at"]),
  createTable(consentEvents),
  createIndex("consent_events", "consent_events_organization", ["organization_id", "created_at"]),
  createIndex("consent_events", "consent_events_user", ["user_id", "regulation", "created_at"]),
  createIndex("consent_events", "consent_events_organization_user", ["organization_id", "organization_user_id"]),
  createTable(table("webhooks", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    url: text().notNull(),
    enabled: boolean().notNull(),
    event_types: json().notNull(),
    flatten: boolean().notNull(),
    regulations: json().notNull(),
    auth: json(),
    signing_secret_sealed: text().notNull(),
    auth_client_secret_sealed: text(),
    ...audit
  })),
  createIndex("webhooks", "webhooks_organization", ["organization_id", "created_at"]),
  createTable(table("webhook_deliveries", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    webhook_id: text().notNull(),
    event_type: text().notNull(),
    regulation: text().notNull(),
    status: text().notNull(),
    attempts_count: integer().notNull(),
    next_attempt_at: timestamp(),
    last_status_code: integer(),
    payload: json().notNull(),
    lease_until: timestamp(),
    leased_by: text(),
    ...audit
  })),
  createIndex("webhook_deliveries", "webhook_deliveries_due", ["status", "next_attempt_at"]),
  createIndex("webhook_deliveries", "webhook_deliveries_organization", ["organization_id", "created_at"]),
  createIndex("webhook_deliveries", "webhook_deliveries_webhook", ["webhook_id", "status", "created_at"]),
  createTable(table("webhook_attempts", {
    id: text().primaryKey(),
    delivery_id: text().notNull(),
    organization_id: text().notNull(),
    attempted_at: timestamp().notNull(),
    status_code: integer(),
    duration_ms: integer().notNull(),
    error: text(),
    response_excerpt: text()
  })),
  createIndex("webhook_attempts", "webhook_attempts_delivery", ["delivery_id", "attempted_at"])
])
