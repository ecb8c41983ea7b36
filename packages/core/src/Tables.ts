import * as Effect from "effect/Effect"
import { Storage, type Row, type TableDef } from "./Ports.js"
import { eq } from "./Query.js"
import { field } from "./Resource.js"
import { defineTable } from "./Resource.js"
import {
  ApiKeysResource,
  MembersResource,
  OrganizationsResource,
  PremiumFeaturesResource,
  QuotasResource,
  SecretsResource
} from "./Resources/Account.js"

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
})

export const Tables = {
  get organizations() {
    return OrganizationsResource.tableDef
  },
  get quotas() {
    return QuotasResource.tableDef
  },
  get premiumFeatures() {
    return PremiumFeaturesResource.tableDef
  },
  get keys() {
    return ApiKeysResource.tableDef
  },
  get secrets() {
    return SecretsResource.tableDef
  },
  get members() {
    return MembersResource.tableDef
  },
  persons: PersonsTable,
  invitations: InvitationsTable,
  settings: SettingsTable
}

/** An organization's one row of a per-organization table (its quotas, its premium features). */
export const organizationRow = (table: TableDef, organizationId: string): Effect.Effect<Row | undefined, never, Storage> =>
  Effect.flatMap(Storage, (storage) =>
    Effect.map(
      storage.repository(table).find({
        count: false,
        where: [eq("organization_id", organizationId)],
        sort: [],
        ordered: false,
        limit: 1,
        skip: 0
      }),
      (page) => page.data[0]
    ))
