import { boolean, createIndex, createTable, integer, json, migration, real, table, text, timestamp } from "../Ddl.js"

const audit = {
  created_at: timestamp().notNull(),
  updated_at: timestamp().notNull(),
  version: integer().notNull()
}

/**
 * The organization's resources: properties, domains, cookies, vendors, privacy centers, SSO
 * connections, source systems, platform integrations, the dashboard catalogue. Frozen.
 */
export default migration([
  createTable(table("properties", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    name: text().notNull(),
    website: text(),
    ...audit
  })),
  createIndex("properties", "properties_organization", ["organization_id", "created_at"]),
  createTable(table("domains", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    description: text(),
    enabled: boolean().notNull(),
    entity_id: text(),
    type: text().notNull(),
    status: text().notNull(),
    usage: text().notNull(),
    bots_crawl: text(),
    ...audit
  })),
  createIndex("domains", "domains_organization", ["organization_id", "created_at"]),
  createTable(table("cookies", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    name: text().notNull(),
    domain: text().notNull(),
    lifetime: integer(),
    status: text().notNull(),
    taxonomy_id: text().notNull(),
    property_id: text().notNull(),
    vendor_id: text(),
    ...audit
  })),
  createIndex("cookies", "cookies_organization", ["organization_id", "created_at"]),
  createIndex("cookies", "cookies_property", ["property_id", "created_at"]),
  createIndex("cookies", "cookies_vendor", ["vendor_id"]),
  createTable(table("vendors", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    status: text().notNull(),
    property_id: text().notNull(),
    metadata_id: text().notNull(),
    ...audit
  }, { unique: [["property_id", "metadata_id"]] })),
  createIndex("vendors", "vendors_organization", ["organization_id", "created_at"]),
  createTable(table("privacy_centers", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    name: text().notNull(),
    website: text(),
    custom_domains: json(),
    contact: json(),
    customization: json(),
    legal_name: text(),
    display_cookies: text(),
    privacy_policy: text(),
    content: json(),
    languages: json(),
    auth_required: boolean().notNull(),
    ...audit
  })),
  createIndex("privacy_centers", "privacy_centers_organization", ["organization_id", "created_at"]),
  createTable(table("sso_connections", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    idp_connection_id: text().notNull(),
    idp_connection_name: text().notNull().unique(),
    idp_certificate: text().notNull(),
    idp_domain_aliases: json().notNull(),
    idp_sign_in_endpoint: text().notNull(),
    idp_sign_out_endpoint: text(),
    idp_sign_saml_request: boolean().notNull(),
    organization_group_id: text(),
    ...audit
  })),
  createIndex("sso_connections", "sso_connections_organization", ["organization_id", "created_at"]),
  createTable(table("organization_source_systems", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    source_system: text().notNull(),
    source_system_id: text().notNull(),
    ...audit
  }, { unique: [["organization_id", "source_system", "source_system_id"]] })),
  createTable(table("platform_integrations", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    name: text().notNull(),
    description: text(),
    enabled: boolean().notNull(),
    token_hash: text().notNull(),
    ...audit
  })),
  createTable(table("dashboards", {
    id: text().primaryKey(),
    organization_id: text(),
    name: text(),
    order: real(),
    category: text(),
    type: text().notNull(),
    product: text().notNull(),
    aggregation_period: text().notNull(),
    description: text(),
    illustration_ref: text(),
    target_url: text().notNull(),
    ...audit
  })),
  createIndex("dashboards", "dashboards_organization", ["organization_id", "created_at"])
])
