import { changePrimaryKey, createIndex, dropIndex, migration } from "../Ddl.js"
import { consentEvents, consentUsers } from "./0003_consents_webhooks.js"

/**
 * Consent users and events are keyed by `(organization_id, id)`: their ids are chosen by the
 * client, so two organizations may use the same one. Also creates the member and API key
 * indexes that 0001 made on PostgreSQL only.
 */
export default migration([
  createIndex("members", "members_organization", ["organization_id", "created_at"], { ifNotExists: true }),
  createIndex("api_keys", "api_keys_organization", ["organization_id", "created_at"], { ifNotExists: true }),
  // Dropped before the rebuild below, which would otherwise copy it for nothing.
  dropIndex("consent_events_user"),
  changePrimaryKey(consentUsers, ["organization_id", "id"]),
  changePrimaryKey(consentEvents, ["organization_id", "id"]),
  // A user's events are always looked up within the organization.
  createIndex("consent_events", "consent_events_user", ["organization_id", "user_id", "regulation", "created_at"])
])
