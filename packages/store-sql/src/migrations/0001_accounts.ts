import { bigint, boolean, createIndex, createTable, integer, json, migration, only, table, text, timestamp } from "../Ddl.js"

const featureFlags = [
  "preference_center",
  "preference_management_platform",
  "propagate_consents_on_sync",
  "consent_management_platform",
  "cross_device",
  "batch_exports",
  "batch_exports_manual_run",
  "batch_exports_analytics",
  "data_residency_russia",
  "integrations",
  "integrations_v2",
  "smart_vendor_list",
  "compliance_report_v2",
  "versions_and_proofs",
  "mass_update",
  "consents_api",
  "store_cmp_consents",
  "store_guest_cmp_consents",
  "sso",
  "webhooks",
  "advanced_internal_monitoring",
  "server_side",
  "acm_static_ip",
  "acm_vendor_templates",
  "acm_data_exports",
  "acm_high_frequency",
  "acm_full_website_scan",
  "web_sdk_versioning",
  "web_sdk_fixed_versioning",
  "privacy_widgets_advanced",
  "cmp_consent_or_pay",
  "cmp_rules_underage",
  "privacy_widgets_versions",
  "dsar_experience",
  "brand_manager",
  "cmp_advanced_widgets",
  "pmp_data_exports",
  "cmp_data_exports",
  "cmp_ctv_widgets"
]

const quotaFields = [
  "exports_configs",
  "exports_destinations",
  "scraper_enabled_properties",
  "parallel_notices_deployments",
  "consent_proof_reports",
  "api_requests",
  "delivery_clouds",
  "services_per_delivery_cloud",
  "regions_per_delivery_cloud",
  "domains_per_delivery_cloud",
  "acm_scan_max_pages_per_property",
  "secrets",
  "metadata_purposes",
  "metadata_partners"
]

const audit = {
  created_at: timestamp().notNull(),
  updated_at: timestamp().notNull(),
  version: integer().notNull()
}

/** Accounts: organizations, their quotas and features, keys, secrets, persons and members. Frozen. */
export default migration([
  createTable(table("organizations", {
    id: text().primaryKey(),
    name: text().notNull().unique(),
    website: text(),
    industry_id: text(),
    analytics_url: text(),
    public_api_key: text().notNull(),
    validate_purpose_id: boolean().notNull(),
    disable_preferences_in_consents: boolean().notNull(),
    auth_enabled: boolean().notNull(),
    auth_allow_user_creation: boolean().notNull(),
    auth_message_priority: json().notNull(),
    allow_tcf_with_custom_text: boolean().notNull(),
    self_register: boolean().notNull(),
    organization_group_id: text(),
    organization_group_name: text(),
    iab_tcf_cmp_id: integer(),
    allow_chat_support: boolean().notNull(),
    crm_account_id: text(),
    ...audit
  })),
  createTable(table("quotas", {
    id: text().primaryKey(),
    organization_id: text().notNull().unique(),
    ...Object.fromEntries(quotaFields.map((f) => [f, integer().notNull()])),
    ...audit
  })),
  createTable(table("premium_features", {
    id: text().primaryKey(),
    organization_id: text().notNull().unique(),
    ...Object.fromEntries(featureFlags.map((f) => [f, boolean().notNull().default(false)])),
    ...audit
  })),
  createTable(table("api_keys", {
    id: text().primaryKey(),
    name: text().notNull(),
    description: text(),
    organization_id: text().notNull(),
    enabled: boolean().notNull(),
    is_internal: boolean().notNull(),
    secret_hash: text().notNull(),
    ...audit
  }, { unique: [["organization_id", "name"]] })),
  createTable(table("secrets", {
    id: text().primaryKey(),
    name: text().notNull(),
    description: text(),
    organization_id: text().notNull(),
    secret_hash: text().notNull(),
    ...audit
  })),
  createIndex("secrets", "secrets_organization", ["organization_id", "created_at"]),
  createTable(table("persons", {
    id: text().primaryKey(),
    email: text().notNull().unique(),
    name: text().notNull(),
    password_hash: text(),
    ...audit
  })),
  createTable(table("members", {
    id: text().primaryKey(),
    role_id: text(),
    organization_id: text().notNull(),
    user_id: text().notNull(),
    authentication_method: text().notNull(),
    saml_active: boolean().notNull(),
    ...audit
  }, { unique: [["organization_id", "user_id"]] })),
  createIndex("members", "members_user", ["user_id"]),
  // Once created on PostgreSQL only; 0006 creates them where missing.
  only("pg", [
    createIndex("members", "members_organization", ["organization_id", "created_at"]),
    createIndex("api_keys", "api_keys_organization", ["organization_id", "created_at"])
  ]),
  createTable(table("settings", {
    id: text().primaryKey(),
    value: text().notNull(),
    ...audit
  })),
  createTable(table("api_usage", {
    organization_id: text().notNull(),
    period: text().notNull(),
    count: bigint().notNull()
  }, { primaryKey: ["organization_id", "period"] }))
])
