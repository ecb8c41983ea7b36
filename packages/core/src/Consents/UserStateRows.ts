import type { ConsentState } from "../Domain/Consent.js"
import { defineTable, field, jsonField } from "../Engine/Tables.js"

/**
 * One row per user and regulation with a state: the index of users by state. The database
 * keeps it from the users' `consent_states` with triggers, in the writing statement's own
 * transaction (so a consent event costs no statement more, and rows written by any path,
 * older servers during an upgrade included, are covered); the forward migration filled it
 * from the users already stored. `user_created_at` and `user_id` page users in the order of
 * `$cursor` (`created_at`, then id); `last_event_at` is what an expiry is compared with;
 * `announced_event_id` names the last merged event whose expiry was announced.
 *
 * What a state is under a policy reads three more columns, so the `consent_state` filter
 * decides from this row alone, whatever the policy says by then: `vendors_enabled` (some
 * vendor is enabled), `enabled_purposes` (the ids of the purposes enabled, as a JSON array)
 * and `notice_text_content_id` (the content the last merged event names).
 */
export const UserStatesTable = defineTable("consent_user_states", {
  organization_id: field.string,
  user_id: field.string,
  regulation: field.string,
  state: jsonField<ConsentState>(),
  last_event_id: field.optionalString,
  last_event_at: field.optionalTimestamp,
  user_created_at: field.timestamp,
  announced_event_id: field.optionalString,
  vendors_enabled: field.boolean,
  enabled_purposes: jsonField<ReadonlyArray<string>>(),
  notice_text_content_id: field.optionalString
}, {
  key: ["organization_id", "user_id", "regulation"],
  indexes: [
    { name: "consent_user_states_page", columns: ["organization_id", "regulation", "user_created_at", "user_id"] },
    { name: "consent_user_states_due", columns: ["organization_id", "regulation", "last_event_at"] }
  ],
  defaultSort: []
})
