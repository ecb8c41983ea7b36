import * as Effect from "effect/Effect"
import { Storage, type Row, type TableDef } from "./Ports.js"
import { eq } from "./Query.js"
import { InvitationsTable, PersonsTable, SettingsTable } from "./InternalTables.js"
import {
  ApiKeysResource,
  MembersResource,
  OrganizationsResource,
  PremiumFeaturesResource,
  QuotasResource,
  SecretsResource
} from "./Resources/Account.js"

export { InvitationsTable, PersonsTable, SettingsTable } from "./InternalTables.js"

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
