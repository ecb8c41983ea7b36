import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/** Notice texts, their contents, notice and template configs, export configs and runs, on PostgreSQL (jsonb, boolean, timestamptz). Frozen. */
const statements = [
  `CREATE TABLE notice_texts (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  name TEXT NOT NULL,
  platforms JSONB NOT NULL,
  "default" BOOLEAN NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL,
  version INTEGER NOT NULL
)`,
  `CREATE INDEX notice_texts_organization ON notice_texts (organization_id, created_at)`,
  `CREATE TABLE notice_text_contents (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  text_id TEXT NOT NULL,
  content TEXT NOT NULL,
  status TEXT NOT NULL,
  includes_purposes BOOLEAN NOT NULL,
  content_version INTEGER NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL,
  version INTEGER NOT NULL,
  UNIQUE (text_id, content_version)
)`,
  `CREATE INDEX notice_text_contents_organization ON notice_text_contents (organization_id, created_at)`,
  `CREATE INDEX notice_text_contents_text ON notice_text_contents (text_id, status, content_version)`,
  `CREATE TABLE notice_configs (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  config JSONB NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL,
  version INTEGER NOT NULL
)`,
  `CREATE INDEX notice_configs_organization ON notice_configs (organization_id, created_at)`,
  `CREATE TABLE notice_template_configs (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  template_id TEXT,
  config JSONB NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL,
  version INTEGER NOT NULL
)`,
  `CREATE INDEX notice_template_configs_organization ON notice_template_configs (organization_id, created_at)`,
  `CREATE TABLE export_configs (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  name TEXT NOT NULL,
  enabled BOOLEAN NOT NULL,
  destinations JSONB NOT NULL,
  created_at TIMESTAMPTZ NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL,
  version INTEGER NOT NULL
)`,
  `CREATE INDEX export_configs_organization ON export_configs (organization_id, created_at)`,
  `CREATE TABLE export_runs (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  export_config_id TEXT NOT NULL,
  "from" TIMESTAMPTZ NOT NULL,
  "to" TIMESTAMPTZ NOT NULL,
  status TEXT NOT NULL,
  events_count INTEGER NOT NULL,
  users_count INTEGER NOT NULL,
  destinations_count INTEGER NOT NULL,
  error TEXT,
  created_at TIMESTAMPTZ NOT NULL,
  updated_at TIMESTAMPTZ NOT NULL,
  version INTEGER NOT NULL
)`,
  `CREATE INDEX export_runs_organization ON export_runs (organization_id, created_at)`
]

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.forEach(statements, (s) => sql.unsafe(s), { discard: true }))
