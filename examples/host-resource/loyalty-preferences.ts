/**
 * A resource of the host's own, declared as the platform declares its own: how a member of a
 * shop's loyalty programme wants to hear about it, per channel. Owned by an organization (a shop
 * sees its members' preferences only), at most 10,000 per shop, one per member and channel.
 * From this declaration come its routes under /v1/loyalty-preferences, its OpenAPI operations and
 * `cmp.loyaltyPreferences` in the host API; `migrations` creates its table.
 */
import { Common, defineResource } from "@cmp/core"
import * as Schema from "effect/Schema"

const Channel = Schema.Literal("email", "sms", "post")

const LoyaltyPreference = Schema.Struct({
  id: Common.Id,
  organization_id: Common.Id,
  /** The shop's own id of the member. */
  member_id: Schema.String,
  channel: Channel,
  opted_in: Schema.Boolean,
  ...Common.Audit
})

export const LoyaltyPreferences = defineResource({
  name: "loyalty preference",
  path: "loyalty-preferences",
  table: "loyalty_preferences",
  output: LoyaltyPreference,
  createInput: Schema.Struct({
    organization_id: Common.Id,
    member_id: Schema.String,
    channel: Channel,
    opted_in: Schema.optional(Schema.Boolean)
  }),
  updateInput: Schema.Struct({ opted_in: Schema.Boolean }),
  methods: ["find", "get", "create", "patch", "remove"],
  ownerField: "organization_id",
  defaults: { opted_in: false },
  unique: [["organization_id", "member_id", "channel"]],
  indexes: [{ name: "loyalty_preferences_organization", columns: ["organization_id", "created_at"] }],
  quota: { name: "loyalty_preferences", limit: 10_000 }
})

/** Its table, in each store's SQL: they differ in their boolean and timestamp types only. */
const table = (types: { readonly boolean: string; readonly timestamp: string }) => [
  `CREATE TABLE loyalty_preferences (
    id TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL,
    member_id TEXT NOT NULL,
    channel TEXT NOT NULL,
    opted_in ${types.boolean} NOT NULL,
    created_at ${types.timestamp} NOT NULL,
    updated_at ${types.timestamp} NOT NULL,
    version INTEGER NOT NULL,
    UNIQUE (organization_id, member_id, channel)
  )`,
  "CREATE INDEX loyalty_preferences_organization ON loyalty_preferences (organization_id, created_at)"
]

/** Run after the platform's own migrations, each once; a change to the table is a new one, `0002_…`. */
export const migrations = {
  "0001_loyalty_preferences": {
    sqlite: table({ boolean: "INTEGER", timestamp: "TEXT" }),
    postgres: table({ boolean: "BOOLEAN", timestamp: "TIMESTAMPTZ" })
  }
}
