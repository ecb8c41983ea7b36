import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/** The organization's resources: properties, domains, cookies, vendors, privacy centers, SSO connections, source systems, platform integrations, the dashboard catalogue, on SQLite (JSON as TEXT, booleans 0/1, ISO timestamps). Frozen. */
const statements = [
  `CREATE TABLE properties (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  name TEXT NOT NULL,
  website TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  version INTEGER NOT NULL
)`,
  `CREATE INDEX properties_organization ON properties (organization_id, created_at)`,
  `CREATE TABLE domains (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  description TEXT,
  enabled INTEGER NOT NULL,
  entity_id TEXT,
  type TEXT NOT NULL,
  status TEXT NOT NULL,
  usage TEXT NOT NULL,
  bots_crawl TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  version INTEGER NOT NULL
)`,
  `CREATE INDEX domains_organization ON domains (organization_id, created_at)`,
  `CREATE TABLE cookies (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  name TEXT NOT NULL,
  domain TEXT NOT NULL,
  lifetime INTEGER,
  status TEXT NOT NULL,
  taxonomy_id TEXT NOT NULL,
  property_id TEXT NOT NULL,
  vendor_id TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  version INTEGER NOT NULL
)`,
  `CREATE INDEX cookies_organization ON cookies (organization_id, created_at)`,
  `CREATE INDEX cookies_property ON cookies (property_id, created_at)`,
  `CREATE INDEX cookies_vendor ON cookies (vendor_id)`,
  `CREATE TABLE vendors (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  status TEXT NOT NULL,
  property_id TEXT NOT NULL,
  metadata_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  version INTEGER NOT NULL,
  UNIQUE (property_id, metadata_id)
)`,
  `CREATE INDEX vendors_organization ON vendors (organization_id, created_at)`,
  `CREATE TABLE privacy_centers (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  name TEXT NOT NULL,
  website TEXT,
  custom_domains TEXT,
  contact TEXT,
  customization TEXT,
  legal_name TEXT,
  display_cookies TEXT,
  privacy_policy TEXT,
  content TEXT,
  languages TEXT,
  auth_required INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  version INTEGER NOT NULL
)`,
  `CREATE INDEX privacy_centers_organization ON privacy_centers (organization_id, created_at)`,
  `CREATE TABLE sso_connections (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  idp_connection_id TEXT NOT NULL,
  idp_connection_name TEXT NOT NULL UNIQUE,
  idp_certificate TEXT NOT NULL,
  idp_domain_aliases TEXT NOT NULL,
  idp_sign_in_endpoint TEXT NOT NULL,
  idp_sign_out_endpoint TEXT,
  idp_sign_saml_request INTEGER NOT NULL,
  organization_group_id TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  version INTEGER NOT NULL
)`,
  `CREATE INDEX sso_connections_organization ON sso_connections (organization_id, created_at)`,
  `CREATE TABLE organization_source_systems (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  source_system TEXT NOT NULL,
  source_system_id TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  version INTEGER NOT NULL,
  UNIQUE (organization_id, source_system, source_system_id)
)`,
  `CREATE TABLE platform_integrations (
  id TEXT PRIMARY KEY,
  organization_id TEXT NOT NULL,
  name TEXT NOT NULL,
  description TEXT,
  enabled INTEGER NOT NULL,
  token_hash TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  version INTEGER NOT NULL
)`,
  `CREATE TABLE dashboards (
  id TEXT PRIMARY KEY,
  organization_id TEXT,
  name TEXT,
  "order" REAL,
  category TEXT,
  type TEXT NOT NULL,
  product TEXT NOT NULL,
  aggregation_period TEXT NOT NULL,
  description TEXT,
  illustration_ref TEXT,
  target_url TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  version INTEGER NOT NULL
)`,
  `CREATE INDEX dashboards_organization ON dashboards (organization_id, created_at)`
]

export default Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.forEach(statements, (s) => sql.unsafe(s), { discard: true }))
