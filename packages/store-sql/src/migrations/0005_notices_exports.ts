import { boolean, createIndex, createTable, integer, json, migration, table, text, timestamp } from "../Ddl.js"

const audit = {
  created_at: timestamp().notNull(),
  updated_at: timestamp().notNull(),
  version: integer().notNull()
}

/** Notice texts, their contents, notice and template configs, export configs and runs. Frozen. */
export default migration([
  createTable(table("notice_texts", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    name: text().notNull(),
    platforms: json().notNull(),
    default: boolean().notNull(),
    ...audit
  })),
  createIndex("notice_texts", "notice_texts_organization", ["organization_id", "created_at"]),
  createTable(table("notice_text_contents", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    text_id: text().notNull(),
    content: text().notNull(),
    status: text().notNull(),
    includes_purposes: boolean().notNull(),
    content_version: integer().notNull(),
    ...audit
  }, { unique: [["text_id", "content_version"]] })),
  createIndex("notice_text_contents", "notice_text_contents_organization", ["organization_id", "created_at"]),
  createIndex("notice_text_contents", "notice_text_contents_text", ["text_id", "status", "content_version"]),
  createTable(table("notice_configs", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    config: json().notNull(),
    ...audit
  })),
  createIndex("notice_configs", "notice_configs_organization", ["organization_id", "created_at"]),
  createTable(table("notice_template_configs", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    template_id: text(),
    config: json().notNull(),
    ...audit
  })),
  createIndex("notice_template_configs", "notice_template_configs_organization", ["organization_id", "created_at"]),
  createTable(table("export_configs", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    name: text().notNull(),
    enabled: boolean().notNull(),
    destinations: json().notNull(),
    ...audit
  })),
  createIndex("export_configs", "export_configs_organization", ["organization_id", "created_at"]),
  createTable(table("export_runs", {
    id: text().primaryKey(),
    organization_id: text().notNull(),
    export_config_id: text().notNull(),
    from: timestamp().notNull(),
    to: timestamp().notNull(),
    status: text().notNull(),
    events_count: integer().notNull(),
    users_count: integer().notNull(),
    destinations_count: integer().notNull(),
    error: text(),
    ...audit
  })),
  createIndex("export_runs", "export_runs_organization", ["organization_id", "created_at"])
])
