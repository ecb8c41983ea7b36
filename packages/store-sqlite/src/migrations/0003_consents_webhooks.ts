import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/** Consent events and users, webhook configurations, the delivery outbox and its attempt log, on SQLite (JSON as TEXT, booleans 0/1, ISO timestamps). Frozen. */
const statements = [
  `CREATE TABLE consent_users (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  organization_user_id TEXT,
  metadata TEXT,
  country TEXT,
  consents TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  version INTEGER NOT NULL,
  UNIQUE (organization_id, organization_user_id)
)`,
  `CREATE INDEX consent_users_organization ON consent_users (organization_id, created_at)`,
  `CREATE TABLE consent_events (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  status TEXT NOT NULL,
  regulation TEXT NOT NULL,
  metadata TEXT,
  "user" TEXT NOT NULL,
  consents TEXT NOT NULL,
  user_id TEXT NOT NULL,
  organization_user_id TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  version INTEGER NOT NULL
)`,
  `CREATE INDEX consent_events_organization ON consent_events (organization_id, created_at)`,
  `CREATE INDEX consent_events_user ON consent_events (user_id, regulation, created_at)`,
  `CREATE INDEX consent_events_organization_user ON consent_events (organization_id, organization_user_id)`,
  `CREATE TABLE webhooks (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  url TEXT NOT NULL,
  enabled INTEGER NOT NULL,
  event_types TEXT NOT NULL,
  flatten INTEGER NOT NULL,
  regulations TEXT NOT NULL,
  auth TEXT,
  signing_secret_sealed TEXT NOT NULL,
  auth_client_secret_sealed TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  version INTEGER NOT NULL
)`,
  `CREATE INDEX webhooks_organization ON webhooks (organization_id, created_at)`,
  `CREATE TABLE webhook_deliveries (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  webhook_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  regulation TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts_count INTEGER NOT NULL,
  next_attempt_at TEXT,
  last_status_code INTEGER,
  payload TEXT NOT NULL,
  lease_until TEXT,
  leased_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  version INTEGER NOT NULL
)`,
  `CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at)`,
  `CREATE INDEX webhook_deliveries_organization ON webhook_deliveries (organization_id, created_at)`,
  `CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, status, created_at)`,
  `CREATE TABLE webhook_attempts (
  id TEXT PRIMARY KEY,
  delivery_id TEXT NOT NULL,
  organization_id TEXT NOT NULL,
  attempted_at TEXT NOT NULL,
  status_code INTEGER,
  duration_ms INTEGER NOT NULL,
  error TEXT,
  response_excerpt TEXT
)`,
  `CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, attempted_at)`
]

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.forEach(statements, (s) => sql.unsafe(s), { discard: true }))
