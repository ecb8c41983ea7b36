import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import { ApiKey, Member, Organization, premiumFeatureFlags, PremiumFeature, Quota, quotaFields } from "../src/Domain/Account.js"
import { fieldsOf } from "../src/Engine/Fields.js"
import { ApiKeysResource } from "../src/Accounts/ApiKeys.js"
import { OrganizationsResource } from "../src/Accounts/Organizations.js"
import { SecretsResource } from "../src/Accounts/Secrets.js"

describe("fieldsOf(ApiKey)", () => {
  const f = fieldsOf(ApiKey)

  it("lists exactly the struct's properties", () => {
    expect(Object.keys(f).sort()).toEqual(
      ["created_at", "description", "enabled", "id", "is_internal", "name", "organization_id", "previous_secret_expires_at", "secret",
        "updated_at", "version"].sort()
    )
  })

  it("derives the kinds and nullability", () => {
    expect(f).toEqual({
      id: { kind: "string", nullable: false },
      name: { kind: "string", nullable: false },
      description: { kind: "string", nullable: true },
      organization_id: { kind: "string", nullable: false },
      enabled: { kind: "boolean", nullable: false },
      is_internal: { kind: "boolean", nullable: false },
      secret: { kind: "string", nullable: true },
      previous_secret_expires_at: { kind: "timestamp", nullable: true },
      created_at: { kind: "timestamp", nullable: false },
      updated_at: { kind: "timestamp", nullable: false },
      version: { kind: "number", nullable: false }
    })
  })
})

describe("fieldsOf(Organization)", () => {
  const f = fieldsOf(Organization)

  it("strings, optional strings and urls", () => {
    expect(f.name).toEqual({ kind: "string", nullable: false })
    expect(f.public_api_key).toEqual({ kind: "string", nullable: false })
    expect(f.website).toEqual({ kind: "string", nullable: true })
    expect(f.analytics_url).toEqual({ kind: "string", nullable: true })
    expect(f.industry_id).toEqual({ kind: "string", nullable: true })
    expect(f.organization_group_name).toEqual({ kind: "string", nullable: true })
    expect(f.organization_group_id).toEqual({ kind: "string", nullable: true })
  })

  it("booleans", () => {
    for (
      const k of [
        "validate_purpose_id",
        "disable_preferences_in_consents",
        "auth_enabled",
        "auth_allow_user_creation",
        "allow_tcf_with_custom_text",
        "self_register",
        "allow_chat_support"
      ]
    ) expect([k, f[k]]).toEqual([k, { kind: "boolean", nullable: false }])
  })

  it("an array is json, an optional positive int is a nullable number", () => {
    expect(f.auth_message_priority).toEqual({ kind: "json", nullable: false })
    expect(f.iab_tcf_cmp_id).toEqual({ kind: "number", nullable: true })
    expect(f.consent_retention_days).toEqual({ kind: "number", nullable: true })
  })

  it("audit fields", () => {
    expect(f.created_at).toEqual({ kind: "timestamp", nullable: false })
    expect(f.updated_at).toEqual({ kind: "timestamp", nullable: false })
    expect(f.version).toEqual({ kind: "number", nullable: false })
  })

  it("an optional date-time is a nullable timestamp", () => {
    expect(f.consent_tokens_revoked_before).toEqual({ kind: "timestamp", nullable: true })
  })

  it("has 23 fields", () => {
    expect(Object.keys(f)).toHaveLength(23)
  })
})

describe("fieldsOf(Quota) and fieldsOf(PremiumFeature)", () => {
  it("every quota is a non-nullable number", () => {
    const f = fieldsOf(Quota)
    expect(Object.keys(f)).toHaveLength(quotaFields.length + 5)
    for (const q of quotaFields) expect([q, f[q]]).toEqual([q, { kind: "number", nullable: false }])
    expect(f.organization_id).toEqual({ kind: "string", nullable: false })
    expect(f.created_at).toEqual({ kind: "timestamp", nullable: false })
  })

  it("every premium feature flag is a non-nullable boolean", () => {
    const f = fieldsOf(PremiumFeature)
    for (const p of premiumFeatureFlags) expect([p, f[p]]).toEqual([p, { kind: "boolean", nullable: false }])
  })
})

describe("fieldsOf: literals, unions and errors", () => {
  it("a union of string literals is a string", () => {
    expect(fieldsOf(Member).authentication_method).toEqual({ kind: "string", nullable: false })
    expect(fieldsOf(Member).role_id).toEqual({ kind: "string", nullable: true })
  })

  it("a union of different kinds is json; a nullable timestamp stays a timestamp", () => {
    const f = fieldsOf(Schema.Struct({
      mixed: Schema.Union(Schema.String, Schema.Number),
      at: Schema.NullOr(Organization.fields.created_at),
      n: Schema.Literal(1, 2),
      rec: Schema.Record({ key: Schema.String, value: Schema.Unknown })
    }))
    expect(f).toEqual({
      mixed: { kind: "json", nullable: false },
      at: { kind: "timestamp", nullable: true },
      n: { kind: "number", nullable: false },
      rec: { kind: "json", nullable: false }
    })
  })

  it("an exact optional property (no undefined in its type) is still nullable", () => {
    expect(fieldsOf(Schema.Struct({ a: Schema.optionalWith(Schema.String, { exact: true }), b: Schema.String }))).toEqual({
      a: { kind: "string", nullable: true },
      b: { kind: "string", nullable: false }
    })
  })

  it("refuses a schema that is not a struct", () => {
    expect(() => fieldsOf(Schema.String)).toThrow(/not a struct schema/)
  })
})

describe("resource columns derived from the fields", () => {
  it("API keys: the secret is transient (not a column), the hash is private (not queryable)", () => {
    expect(ApiKeysResource.tableDef.fields.secret).toBeUndefined()
    expect(ApiKeysResource.tableDef.fields.secret_hash).toEqual({ kind: "string", nullable: false })
    expect(ApiKeysResource.queryFields.secret_hash).toBeUndefined()
    expect(ApiKeysResource.queryFields.secret).toBeUndefined()
    expect(ApiKeysResource.queryFields.is_internal).toEqual({ kind: "boolean", nullable: false })
    expect(ApiKeysResource.tableDef.unique).toEqual([["organization_id", "name"]])
    expect(ApiKeysResource.tableDef.defaultSort).toEqual([{ field: "created_at", direction: 1 }])
  })

  it("secrets: same split", () => {
    expect(SecretsResource.tableDef.fields.secret).toBeUndefined()
    expect(SecretsResource.queryFields.secret_hash).toBeUndefined()
  })

  it("organizations: crm_account_id is a column but not an output field", () => {
    expect(OrganizationsResource.tableDef.fields.crm_account_id).toEqual({ kind: "string", nullable: true })
    expect(OrganizationsResource.outputFields.crm_account_id).toBeUndefined()
    expect(OrganizationsResource.queryFields.crm_account_id).toBeUndefined()
    expect(OrganizationsResource.operatorFields.has("allow_chat_support")).toBe(true)
    expect(OrganizationsResource.createFields.has("self_register")).toBe(false)
  })
})
