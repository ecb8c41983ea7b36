import { InvitationsTable, PersonsTable, SettingsTable } from "./InternalTables.js"
import { OrganizationsResource } from "./Organizations.js"
import { QuotasResource, PremiumFeaturesResource } from "./Plans.js"
import { ApiKeysResource } from "./ApiKeys.js"
import { SecretsResource } from "./Secrets.js"
import { MembersResource } from "./Members.js"


/** The account's tables, for the features that read them directly (sessions, bootstrap, exports). */
export const Tables = {
  organizations: OrganizationsResource.tableDef,
  quotas: QuotasResource.tableDef,
  premiumFeatures: PremiumFeaturesResource.tableDef,
  keys: ApiKeysResource.tableDef,
  secrets: SecretsResource.tableDef,
  members: MembersResource.tableDef,
  persons: PersonsTable,
  invitations: InvitationsTable,
  settings: SettingsTable
}
