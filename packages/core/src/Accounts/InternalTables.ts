import { defineTable, field } from "../Engine/Tables.js"
import { ownedByOrganization } from "../Engine/Resource.js"

/** The tables that are not REST resources: persons, invitations and server settings. */

/** A person who can sign in with email and password; members point at it. */
export const PersonsTable = defineTable("persons", {
  id: field.string,
  email: field.string,
  name: field.string,
  password_hash: field.optionalString,
  created_at: field.timestamp,
  updated_at: field.timestamp,
  version: field.number
}, { unique: [["email"]] })

/** Server-wide values kept in the database (the generated JWT signing key). */
export const SettingsTable = defineTable("settings", {
  id: field.string,
  value: field.string,
  created_at: field.timestamp,
  updated_at: field.timestamp,
  version: field.number
})

/** An invitation of a person into an organization; its token is kept hashed. */
export const InvitationsTable = defineTable("invitations", {
  id: field.string,
  person_id: field.string,
  organization_id: field.string,
  member_id: field.string,
  token_hash: field.string,
  expires_at: field.timestamp,
  accepted_at: field.optionalTimestamp,
  created_at: field.timestamp,
  updated_at: field.timestamp,
  version: field.number
}, { references: [ownedByOrganization], indexes: [
  { name: "invitations_member", columns: ["member_id"] },
  // `INVITATIONS_PER_HOUR` counts an organization's recent invitations.
  { name: "invitations_organization", columns: ["organization_id", "created_at"] }
] })

/**
 * Request counters per organization and period, written by `UsageStore` with its own SQL (an
 * upsert) rather than through a `Storage` repository: declared so the schema contract checks it.
 */
export const ApiUsageTable = defineTable("api_usage", {
  organization_id: field.string,
  period: field.string,
  count: field.bigint
}, { key: ["organization_id", "period"] })
