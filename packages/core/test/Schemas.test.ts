import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import * as Analytics from "../src/Domain/Analytics.js"
import * as Consent from "../src/Domain/Consent.js"
import * as Export from "../src/Domain/Export.js"
import * as Notice from "../src/Domain/Notice.js"
import * as Property from "../src/Domain/Property.js"
import * as Webhook from "../src/Domain/Webhook.js"

const decode = <A, I>(schema: Schema.Schema<A, I, never>, input: unknown) =>
  Schema.decodeUnknownEither(schema, { onExcessProperty: "error", errors: "all" })(input)

const ok = <A, I>(schema: Schema.Schema<A, I, never>, input: unknown): A => {
  const r = decode(schema, input)
  if (Either.isLeft(r)) {
    throw new Error(`expected success, got:\n${ParseResult.TreeFormatter.formatErrorSync(r.left)}`)
  }
  return r.right
}

/** Fails, and returns the issues as `path: message` lines for finer assertions. */
const bad = <A, I>(schema: Schema.Schema<A, I, never>, input: unknown): string => {
  const r = decode(schema, input)
  if (Either.isRight(r)) throw new Error(`expected failure, decoded: ${JSON.stringify(r.right)}`)
  return ParseResult.ArrayFormatter.formatErrorSync(r.left)
    .map((i) => `${i.path.join(".")}: ${i.message}`)
    .join("\n")
}

const audit = { created_at: "2026-11-22T10:00:00.000Z", updated_at: "2026-11-22T10:00:00.000Z", version: 1 }

// ---------------------------------------------------------------- Property.ts

describe("Property", () => {
  const property = { id: "p1", organization_id: "o1", name: "Site", website: "https://example.com", ...audit }

  it("decodes output and inputs", () => {
    ok(Property.Property, property)
    ok(Property.Property, { ...property, website: null })
    ok(Property.PropertyCreate, { organization_id: "o1", name: "Site" })
    ok(Property.PropertyUpdate, { name: "Site", website: null })
  })
  it("rejects a missing name, a bad website and output-only fields", () => {
    expect(bad(Property.PropertyCreate, { organization_id: "o1" })).toContain("name")
    expect(bad(Property.PropertyCreate, { organization_id: "o1", name: "x", website: "ftp://x" })).toContain(
      "must be an http or https URL"
    )
    expect(bad(Property.PropertyCreate, { organization_id: "o1", name: "x", version: 1 })).toContain("version")
    expect(bad(Property.PropertyUpdate, { name: "x", organization_id: "o2" })).toContain("organization_id")
  })
})

describe("Domain", () => {
  const domain = {
    id: "consent.example.com",
    organization_id: "o1",
    description: null,
    enabled: true,
    entity_id: null,
    type: "custom",
    status: "draft",
    usage: "cmp",
    bots_crawl: "allow_all",
    ...audit
  }

  it("decodes output, create and update", () => {
    ok(Property.Domain, domain)
    ok(Property.DomainCreate, { id: "a-b.example.co.uk", organization_id: "o1", usage: "privacy-center" })
    ok(Property.DomainUpdate, { enabled: false, status: "to_be_deleted", bots_crawl: "disallow_all" })
  })
  it("a page host's proof and a failure's reason are output only", () => {
    const verification = { record: "_cmp-verify.privacy.example.com", value: "v" }
    ok(Property.Domain, { ...domain, usage: "privacy-center", verification, failure_reason: "No TXT record" })
    expect(bad(Property.DomainCreate, { id: "a.example.com", organization_id: "o1", usage: "privacy-center", verification })).toContain("verification")
    expect(bad(Property.DomainUpdate, { enabled: true, failure_reason: "none" })).toContain("failure_reason")
  })
  it("accepts all seven states", () => {
    for (const s of ["draft", "scheduled", "to_be_deleted", "deploying", "deleting", "failed", "ready"]) {
      ok(Property.DomainStatus, s)
    }
    bad(Property.DomainStatus, "deployed")
  })
  it("validates the FQDN", () => {
    const create = (id: string) => ({ id, organization_id: "o1", usage: "cmp" })
    expect(bad(Property.DomainCreate, create("Consent.Example.com"))).toContain("lower-case")
    expect(bad(Property.DomainCreate, create("localhost"))).toContain("fully qualified domain name")
    bad(Property.DomainCreate, create("-bad.example.com"))
    bad(Property.DomainCreate, create("bad..example.com"))
    bad(Property.DomainCreate, create("example.com."))
    bad(Property.DomainCreate, create("https://example.com"))
    bad(Property.DomainCreate, create(`${"a".repeat(64)}.example.com`))
  })
  it("requires id, organization_id and usage on create; rejects type, bad usage and bots_crawl", () => {
    expect(bad(Property.DomainCreate, { organization_id: "o1", usage: "cmp" })).toContain("id")
    expect(bad(Property.DomainCreate, { id: "a.example.com", organization_id: "o1" })).toContain("usage")
    expect(bad(Property.DomainCreate, { id: "a.example.com", usage: "cmp" })).toContain("organization_id")
    expect(bad(Property.DomainCreate, { id: "a.example.com", organization_id: "o1", usage: "cmp", type: "managed" })).toContain("type")
    bad(Property.DomainCreate, { id: "a.example.com", organization_id: "o1", usage: "web" })
    bad(Property.DomainCreate, { id: "a.example.com", organization_id: "o1", usage: "cmp", bots_crawl: "some" })
  })
  it("update does not take id, organization_id or usage", () => {
    expect(bad(Property.DomainUpdate, { enabled: true, usage: "cmp" })).toContain("usage")
    expect(bad(Property.DomainUpdate, { enabled: true, organization_id: "o1" })).toContain("organization_id")
    bad(Property.DomainUpdate, { enabled: true, status: "live" })
  })
})

describe("Cookie and Vendor", () => {
  const create = { name: "_ga", domain: ".example.com", taxonomy_id: "t1", property_id: "p1" }

  it("decodes output and inputs", () => {
    ok(Property.Cookie, { id: "c1", ...create, lifetime: 3600, status: "draft", vendor_id: null, ...audit })
    ok(Property.CookieCreate, { ...create, lifetime: 0, status: "published", vendor_id: "v1" })
    ok(Property.CookieUpdate, { name: "_ga", domain: "example.com", status: "draft", taxonomy_id: "t1" })
  })
  it("rejects missing required fields, a bad lifetime and a bad status", () => {
    for (const k of ["name", "domain", "taxonomy_id", "property_id"]) {
      const input: Record<string, unknown> = { ...create }
      delete input[k]
      expect(bad(Property.CookieCreate, input)).toContain(k)
    }
    bad(Property.CookieCreate, { ...create, lifetime: -1 })
    bad(Property.CookieCreate, { ...create, lifetime: 1.5 })
    bad(Property.CookieCreate, { ...create, status: "archived" })
    bad(Property.CookieCreate, { ...create, domain: "https://example.com/" })
    expect(bad(Property.CookieCreate, { ...create, id: "c1" })).toContain("id")
  })
  it("does not let property_id change", () => {
    expect(
      bad(Property.CookieUpdate, { name: "_ga", domain: "example.com", status: "draft", taxonomy_id: "t1", property_id: "p2" })
    ).toContain("property_id")
  })
  it("vendors", () => {
    ok(Property.Vendor, { id: "v1", status: "published", property_id: "p1", metadata_id: "m1", ...audit })
    ok(Property.VendorCreate, { property_id: "p1", metadata_id: "m1" })
    ok(Property.VendorUpdate, { status: "draft", metadata_id: "m2" })
    expect(bad(Property.VendorCreate, { property_id: "p1" })).toContain("metadata_id")
    bad(Property.VendorCreate, { property_id: "p1", metadata_id: "m1", status: "live" })
    expect(bad(Property.VendorUpdate, { status: "draft", metadata_id: "m2", property_id: "p2" })).toContain("property_id")
  })
})

describe("PrivacyCenter", () => {
  const create = {
    name: "Privacy",
    organization_id: "o1",
    website: "https://example.com",
    custom_domains: ["privacy.example.com"],
    contact: { email: "dpo@example.com", schedule: "+33 1 00 00 00 00", address: "1 rue X" },
    customization: { logo: "https://cdn.example.com/logo.png", colors: { primary: "#ff0000" } },
    legal_name: "Example SAS",
    display_cookies: "choices",
    privacy_policy: "# Policy",
    content: { title: { en: "Hello" } },
    languages: ["en", "fr-FR"],
    auth_required: true
  }

  it("decodes output and inputs", () => {
    ok(Property.PrivacyCenter, { id: "pc1", ...create, ...audit })
    ok(Property.PrivacyCenterCreate, create)
    ok(Property.PrivacyCenterCreate, { name: "P", organization_id: "o1", languages: null })
    ok(Property.PrivacyCenterCreate, { name: "P", organization_id: "o1", languages: [] })
    const { organization_id: _, ...update } = create
    ok(Property.PrivacyCenterUpdate, update)
  })
  it("requires organization_id and name on input", () => {
    expect(bad(Property.PrivacyCenterCreate, { name: "P" })).toContain("organization_id")
    expect(bad(Property.PrivacyCenterCreate, { organization_id: "o1" })).toContain("name")
  })
  it("rejects a logo over http", () => {
    expect(
      bad(Property.PrivacyCenterCreate, { ...create, customization: { logo: "http://cdn.example.com/logo.png" } })
    ).toContain("must be an https URL")
  })
  it("rejects custom domains with a scheme or a slash", () => {
    expect(bad(Property.PrivacyCenterCreate, { ...create, custom_domains: ["https://privacy.example.com"] })).toContain(
      "custom_domains.0"
    )
    bad(Property.PrivacyCenterCreate, { ...create, custom_domains: ["privacy.example.com/"] })
    bad(Property.PrivacyCenterCreate, { ...create, custom_domains: ["privacy.example.com/path"] })
  })
  it("rejects bad languages, display_cookies, contact email and unknown nested keys", () => {
    expect(bad(Property.PrivacyCenterCreate, { ...create, languages: ["EN"] })).toContain("languages.0")
    bad(Property.PrivacyCenterCreate, { ...create, languages: ["en-us"] })
    bad(Property.PrivacyCenterCreate, { ...create, languages: ["eng"] })
    bad(Property.PrivacyCenterCreate, { ...create, display_cookies: "all" })
    bad(Property.PrivacyCenterCreate, { ...create, contact: { email: "nope" } })
    bad(Property.PrivacyCenterCreate, { ...create, customization: { colors: { secondary: "#000" } } })
    bad(Property.PrivacyCenterCreate, { ...create, auth_required: "yes" })
    expect(bad(Property.PrivacyCenterCreate, { ...create, created_at: audit.created_at })).toContain("created_at")
  })
})

// ---------------------------------------------------------------- Notice.ts

describe("NoticeText and NoticeTextContent", () => {
  it("notice texts", () => {
    ok(Notice.NoticeText, { id: "t1", organization_id: "o1", name: "Main", platforms: ["web", "ctv"], default: true, ...audit })
    ok(Notice.NoticeTextCreate, { organization_id: "o1", name: "Main" })
    bad(Notice.NoticeTextCreate, { organization_id: "o1", name: "Main", platforms: ["mobile"] })
    expect(bad(Notice.NoticeTextCreate, { name: "Main" })).toContain("organization_id")
  })

  const create = { content: "We use cookies.", organization_id: "o1", text_id: "t1" }

  it("decodes contents", () => {
    ok(Notice.NoticeTextContent, {
      id: "c1",
      ...create,
      status: "submitted",
      includes_purposes: false,
      content_version: 1,
      ...audit
    })
    ok(Notice.NoticeTextContentCreate, { ...create, includes_purposes: true })
    ok(Notice.NoticeTextContentUpdate, { content: "New", includes_purposes: false })
  })
  it("create takes neither status nor content_version and requires content, organization_id, text_id", () => {
    expect(bad(Notice.NoticeTextContentCreate, { ...create, status: "approved" })).toContain("status")
    expect(bad(Notice.NoticeTextContentCreate, { ...create, content_version: 2 })).toContain("content_version")
    for (const k of ["content", "organization_id", "text_id"]) {
      const input: Record<string, unknown> = { ...create }
      delete input[k]
      expect(bad(Notice.NoticeTextContentCreate, input)).toContain(k)
    }
    bad(Notice.NoticeTextContentCreate, { ...create, content: "   " })
  })
  it("content status is one of three", () => {
    ok(Notice.ContentStatus, "rejected")
    bad(Notice.ContentStatus, "pending")
    expect(bad(Notice.NoticeTextContentUpdate, { content: "x", includes_purposes: true, status: "approved" })).toContain(
      "status"
    )
  })
})

describe("SDK configuration", () => {
  const input = { organization_id: "o1", platform: "web", config: { app: {} } }
  const full = {
    ...input,
    notice_deployment_id: "d1",
    custom_json: { a: 1 },
    full_atp: false,
    text_mode: "approved",
    text_id: "t1",
    enable_ignore_consent_before: true,
    ignore_consent_before: "2024-01-31",
    negative_action: null,
    disagree_button_style: "secondary",
    country: "FR",
    notice_deny_applies_to_li: true,
    preferences_deny_applies_to_li: false,
    consent_duration: 13,
    consent_duration_unit: "months",
    denied_consent_duration: 7,
    denied_consent_duration_unit: "days",
    denied_consent_duration_custom: true,
    gcm_enabled: true,
    gcm_tcf_enabled: false,
    gcm_set_default_status: true,
    gcm_data_layer_name: "dataLayer",
    gcm_analytics_default_status: false,
    gcm_ads_default_status: false,
    gcm_functionality_default_status: true,
    gcm_personalization_default_status: false,
    gcm_security_default_status: true,
    gcm_ad_user_data_default_status: false,
    gcm_ad_personalization_default_status: false,
    microsoft_enabled: true,
    microsoft_set_default_status: true,
    microsoft_ad_storage_default_status: false,
    microsoft_enable_tcf_advertiser_consent_mode: true,
    ctv_focus_on_agree_and_close: true,
    sdk_version: "2.0.0"
  }

  it("decodes the minimal and the full input, and the output", () => {
    ok(Notice.SdkConfigurationInput, input)
    ok(Notice.SdkConfigurationInput, full)
    ok(Notice.SdkConfigurationInput, { ...full, negative_action: "link" })
    ok(Notice.SdkConfiguration, { config: { app: { apiKey: "x" } } })
    bad(Notice.SdkConfiguration, {})
  })
  it("requires organization_id, platform and config", () => {
    for (const k of ["organization_id", "platform", "config"]) {
      const i: Record<string, unknown> = { ...input }
      delete i[k]
      expect(bad(Notice.SdkConfigurationInput, i)).toContain(k)
    }
  })
  it("enforces the enums and the country code", () => {
    expect(bad(Notice.SdkConfigurationInput, { ...input, platform: "app" })).toContain("platform")
    expect(bad(Notice.SdkConfigurationInput, { ...input, text_mode: "free" })).toContain("text_mode")
    expect(bad(Notice.SdkConfigurationInput, { ...input, negative_action: "none" })).toContain("negative_action")
    expect(bad(Notice.SdkConfigurationInput, { ...input, disagree_button_style: "tertiary" })).toContain(
      "disagree_button_style"
    )
    expect(bad(Notice.SdkConfigurationInput, { ...input, consent_duration_unit: "years" })).toContain(
      "consent_duration_unit"
    )
    expect(bad(Notice.SdkConfigurationInput, { ...input, denied_consent_duration_unit: "weeks" })).toContain(
      "denied_consent_duration_unit"
    )
    expect(bad(Notice.SdkConfigurationInput, { ...input, country: "fr" })).toContain("country")
    bad(Notice.SdkConfigurationInput, { ...input, country: "FRA" })
    expect(bad(Notice.SdkConfigurationInput, { ...input, gcm_enabled: "true" })).toContain("gcm_enabled")
    expect(bad(Notice.SdkConfigurationInput, { ...input, microsoft_enabled: 1 })).toContain("microsoft_enabled")
    expect(bad(Notice.SdkConfigurationInput, { ...input, consent_duration: -1 })).toContain("consent_duration")
    expect(bad(Notice.SdkConfigurationInput, { ...input, ignore_consent_before: "yesterday" })).toContain(
      "ignore_consent_before"
    )
    expect(bad(Notice.SdkConfigurationInput, { ...input, unknown_flag: true })).toContain("unknown_flag")
  })
})

describe("NoticeConfig", () => {
  it("decodes output and inputs", () => {
    ok(Notice.NoticeConfig, { id: "n1", organization_id: "o1", config: { anything: [1] }, ...audit })
    ok(Notice.NoticeConfigCreate, { organization_id: "o1", config: {} })
    ok(Notice.NoticeConfigCreate, { organization_id: "o1", config: { platform: "amp", gcm_enabled: true, config: {} } })
    ok(Notice.NoticeConfigUpdate, { config: { text_mode: "custom" } })
  })
  it("requires config and organization_id and validates the SDK fields", () => {
    expect(bad(Notice.NoticeConfigCreate, { organization_id: "o1" })).toContain("config")
    expect(bad(Notice.NoticeConfigCreate, { config: {} })).toContain("organization_id")
    expect(bad(Notice.NoticeConfigCreate, { organization_id: "o1", config: { platform: "tv" } })).toContain(
      "config.platform"
    )
    expect(bad(Notice.NoticeConfigCreate, { organization_id: "o1", config: { not_an_sdk_field: 1 } })).toContain(
      "config.not_an_sdk_field"
    )
    expect(bad(Notice.NoticeConfigUpdate, { config: {}, organization_id: "o1" })).toContain("organization_id")
  })
})

describe("NoticeTemplateConfig", () => {
  const config = {
    app: {
      essentialPurposes: ["p1"],
      vendors: {
        include: ["v1"],
        iab: {
          all: true,
          include: [1, 2],
          exclude: [3],
          enabled: true,
          version: 2,
          restrictions: [
            {
              id: "r1",
              purposeId: ["2"],
              restrictionType: "req-li",
              vendors: { restrictionType: "list", ids: [1], purposeId: ["2"] }
            }
          ],
          stacks: { auto: true, ids: ["s1"] }
        }
      }
    },
    preferences: { content: { anything: true } },
    theme: "dark"
  }
  const create = { organization_id: "o1", template_id: "tpl", config }

  it("decodes and keeps the sections after app", () => {
    ok(Notice.NoticeTemplateConfig, { id: "c1", ...create, ...audit })
    const decoded = ok(Notice.NoticeTemplateConfigCreate, create)
    expect(decoded.config.preferences).toEqual({ content: { anything: true } })
    expect(decoded.config.theme).toBe("dark")
    ok(Notice.NoticeTemplateConfigUpdate, { config })
    ok(Notice.NoticeTemplateConfigCreate, {
      organization_id: "o1",
      config: { app: { essentialPurposes: [], vendors: { iab: { version: 1 } } } }
    })
  })
  const withIab = (iab: unknown) => ({
    organization_id: "o1",
    config: { app: { essentialPurposes: [], vendors: { iab } } }
  })
  it("rejects TCF version 3 and non-integers", () => {
    expect(bad(Notice.NoticeTemplateConfigCreate, withIab({ version: 3 }))).toContain("config.app.vendors.iab.version")
    bad(Notice.NoticeTemplateConfigCreate, withIab({ version: 0 }))
    bad(Notice.NoticeTemplateConfigCreate, withIab({ version: 1.5 }))
  })
  it("validates restrictions and vendor lists", () => {
    const restriction = {
      id: "r1",
      purposeId: ["7"],
      restrictionType: "allow",
      vendors: { restrictionType: "all" }
    }
    ok(Notice.NoticeTemplateConfigCreate, withIab({ restrictions: [restriction] }))
    expect(
      bad(Notice.NoticeTemplateConfigCreate, withIab({ restrictions: [{ ...restriction, restrictionType: "deny" }] }))
    ).toContain("restrictions.0.restrictionType")
    bad(
      Notice.NoticeTemplateConfigCreate,
      withIab({ restrictions: [{ ...restriction, vendors: { restrictionType: "some" } }] })
    )
    bad(Notice.NoticeTemplateConfigCreate, withIab({ restrictions: [{ ...restriction, purposeId: undefined }] }))
    // TCF purpose ids only: the decimal text of 1 to 11.
    for (const id of ["p", "1x", "1,3", "3 4", "1\u0000", "0", "12", "03", " 1", ""]) {
      expect(bad(Notice.NoticeTemplateConfigCreate, withIab({ restrictions: [{ ...restriction, purposeId: ["2", id] }] })), id)
        .toContain("restrictions.0.purposeId.1")
    }
    for (const id of ["1", "9", "10", "11"]) ok(Notice.NoticeTemplateConfigCreate, withIab({ restrictions: [{ ...restriction, purposeId: [id] }] }))
    bad(Notice.NoticeTemplateConfigCreate, withIab({ include: ["1"] }))
    bad(Notice.NoticeTemplateConfigCreate, withIab({ all: "yes" }))
    bad(Notice.NoticeTemplateConfigCreate, withIab({ stacks: { auto: true, ids: [1] } }))
  })
  it("requires organization_id and config; no field of config.app is required", () => {
    ok(Notice.NoticeTemplateConfigCreate, { organization_id: "o1", config: { preferences: {} } })
    ok(Notice.NoticeTemplateConfigCreate, { organization_id: "o1", config: { app: {} } })
    ok(Notice.NoticeTemplateConfigCreate, { organization_id: "o1", config: { app: { vendors: { iab: { all: true } } } } })
    expect(bad(Notice.NoticeTemplateConfigCreate, { organization_id: "o1", config: { app: null } })).toContain("config.app")
    expect(bad(Notice.NoticeTemplateConfigCreate, { config })).toContain("organization_id")
    expect(bad(Notice.NoticeTemplateConfigCreate, { organization_id: "o1" })).toContain("config")
  })
})

// ---------------------------------------------------------------- Consent.ts

describe("Consent events", () => {
  const consents = {
    purposes: [{ id: "analytics", enabled: true, enabled_li: false, metadata: { src: "banner" } }, { id: "ads", enabled: false }],
    vendors: { enabled: ["v1"], disabled: [], enabled_li: ["v2"], disabled_li: [] },
    tcfcs: "CPXxRfAPXxRfAAfKABENB-CgAAAAAAAAAAYgAAAAAAAA"
  }
  const create = { organization_id: "o1", user: { organization_user_id: "u-42" }, consents }

  it("decodes output and inputs", () => {
    ok(Consent.ConsentEvent, {
      id: "e1",
      organization_id: "o1",
      status: "confirmed",
      regulation: "gdpr",
      metadata: null,
      user: { id: "u1", organization_user_id: "u-42", metadata: { a: 1 }, country: "FR" },
      consents,
      proofs_id: ["p1"],
      notice_text_content_id: "c1",
      gpc: true,
      gpc_conflict: true,
      ...audit
    })
    ok(Consent.ConsentEventCreate, create)
    ok(Consent.ConsentEventCreate, { ...create, gpc: true, gpc_override: true })
    expect(bad(Consent.ConsentEventCreate, { ...create, gpc_conflict: true })).toContain("gpc_conflict")
    expect(bad(Consent.ConsentEvent, { ...create, id: "e1", status: "confirmed", regulation: "gdpr", proofs_id: [], gpc: true, gpc_conflict: false, ...audit }))
      .toContain("gpc_conflict")
    ok(Consent.ConsentEventCreate, {
      ...create,
      id: "client-id",
      created_at: "2020-01-01T00:00:00.000Z",
      status: "pending_approval",
      regulation: "cpra",
      metadata: { source: "import" }
    })
    ok(Consent.ConsentEventCreate, { ...create, consents: { purposes: [{ id: "x", enabled: true }] } })
    ok(Consent.ConsentEventUpdate, { status: "confirmed", consents: {} })
  })
  it("requires user, consents and organization_id", () => {
    for (const k of ["user", "consents", "organization_id"]) {
      const i: Record<string, unknown> = { ...create }
      delete i[k]
      expect(bad(Consent.ConsentEventCreate, i)).toContain(k)
    }
  })
  it("rejects bad status, regulation, country, purposes and vendors", () => {
    expect(bad(Consent.ConsentEventCreate, { ...create, status: "pending" })).toContain("status")
    expect(bad(Consent.ConsentEventCreate, { ...create, regulation: "GDPR" })).toContain("regulation")
    bad(Consent.ConsentEventCreate, { ...create, regulation: "" })
    expect(bad(Consent.ConsentEventCreate, { ...create, user: { id: "u1", country: "fr" } })).toContain("user.country")
    expect(
      bad(Consent.ConsentEventCreate, { ...create, consents: { purposes: [{ id: "x" }] } })
    ).toContain("consents.purposes.0.enabled")
    bad(Consent.ConsentEventCreate, { ...create, consents: { purposes: [{ id: "x", enabled: "yes" }] } })
    bad(Consent.ConsentEventCreate, { ...create, consents: { vendors: { enabled: "v1" } } })
    expect(bad(Consent.ConsentEventCreate, { ...create, consents: { vendors: { allowed: [] } } })).toContain(
      "consents.vendors.allowed"
    )
    bad(Consent.ConsentEventCreate, { ...create, created_at: "yesterday" })
  })
  it("rejects output-only fields on input", () => {
    expect(bad(Consent.ConsentEventCreate, { ...create, version: 1 })).toContain("version")
    expect(bad(Consent.ConsentEventCreate, { ...create, updated_at: audit.updated_at })).toContain("updated_at")
    expect(bad(Consent.ConsentEventUpdate, { status: "confirmed", consents: {}, user: {} })).toContain("user")
    expect(bad(Consent.ConsentEventUpdate, { status: "confirmed", consents: {}, regulation: "gdpr" })).toContain(
      "regulation"
    )
  })
})

describe("Consent users", () => {
  const consents = {
    purposes: [{ id: "analytics", enabled: true }],
    vendors: { enabled: ["v1"], disabled: [], enabled_li: [], disabled_li: [] },
    tcfcs: "CP..."
  }
  const user = {
    id: "u1",
    organization_id: "o1",
    organization_user_id: "u-42",
    metadata: null,
    country: "DE",
    regulation: "gdpr",
    consents,
    gpc: false,
    consent_state: "given",
    ...audit
  }

  it("decodes output and inputs", () => {
    ok(Consent.ConsentUser, user)
    ok(Consent.ConsentUser, { ...user, consent_state: "expired", expires_at: "2026-01-01T00:00:00.000Z" })
    ok(Consent.ConsentUserCreate, { organization_id: "o1" })
    ok(Consent.ConsentUserCreate, {
      organization_id: "o1",
      organization_user_id: "u-42",
      metadata: { plan: "pro" },
      country: "US",
      consents: { purposes: [{ id: "a", enabled: true }] }
    })
    ok(Consent.ConsentUserUpdate, { organization_user_id: null, metadata: {}, country: "GB" })
    ok(Consent.ConsentUserUpdate, { regulation: "ccpa", consents: { purposes: [{ id: "a", enabled: false }] } })
  })
  it("the effective status is one regulation's, with the fields of an event's consents, every list present", () => {
    expect(bad(Consent.ConsentUser, { ...user, consents: { vendors: consents.vendors } })).toContain("consents.purposes")
    expect(bad(Consent.ConsentUser, { ...user, consents: { ...consents, vendors: { enabled: [] } } })).toContain("consents.vendors.disabled")
    expect(bad(Consent.ConsentUser, { ...user, consents: { gdpr: consents } })).toContain("consents")
    expect(bad(Consent.ConsentUser, { ...user, consents: { ...consents, updated_at: "2026-11-22T10:00:00.000Z" } })).toContain("updated_at")
    expect(bad(Consent.ConsentUser, { ...user, regulation: "GDPR" })).toContain("regulation")
  })
  it("rejects missing organization_id, bad country, and output-only fields on input", () => {
    expect(bad(Consent.ConsentUserCreate, {})).toContain("organization_id")
    bad(Consent.ConsentUserCreate, { organization_id: "o1", country: "Germany" })
    expect(bad(Consent.ConsentUserCreate, { organization_id: "o1", id: "u1" })).toContain("id")
    expect(bad(Consent.ConsentUserUpdate, { consents: { purposes: "all" } })).toContain("consents.purposes")
    expect(bad(Consent.ConsentUserUpdate, { organization_id: "o2" })).toContain("organization_id")
  })
})

// ---------------------------------------------------------------- Webhook.ts

describe("Webhook", () => {
  const auth = { token_url: "https://auth.example.com/token", client_id: "cid", client_secret: "s3cr3t", scope: "hooks" }
  const create = {
    organization_id: "o1",
    url: "https://hooks.example.com/in",
    enabled: true,
    event_types: ["event.created", "user.updated"],
    flatten: true,
    regulations: ["gdpr", "ccpa"],
    auth
  }

  it("lists the six event types of the spec, and the expiry type beside them", () => {
    expect(Webhook.specEventTypes).toEqual([
      "event.created",
      "event.updated",
      "event.deleted",
      "user.created",
      "user.updated",
      "user.deleted"
    ])
    expect(Webhook.webhookEventTypes).toEqual([...Webhook.specEventTypes, "user.consent_expired"])
    // An empty list is the spec's six: a receiver written for the spec never meets the seventh.
    expect(Webhook.acceptsType([], "user.updated")).toBe(true)
    expect(Webhook.acceptsType([], "user.consent_expired")).toBe(false)
    expect(Webhook.acceptsType(["user.consent_expired"], "user.consent_expired")).toBe(true)
    expect(Webhook.acceptsType(["user.consent_expired"], "user.updated")).toBe(false)
    for (const t of Webhook.webhookEventTypes) ok(Webhook.WebhookEventType, t)
    bad(Webhook.WebhookEventType, "user.merged")
  })
  it("decodes output and inputs", () => {
    const { client_secret: _, ...shownAuth } = auth
    ok(Webhook.Webhook, {
      id: "w1",
      ...create,
      auth: shownAuth,
      signing_secret: "whsec_abc",
      ...audit
    })
    ok(Webhook.Webhook, { id: "w1", ...create, event_types: [], auth: null, ...audit })
    ok(Webhook.WebhookCreate, { organization_id: "o1", url: "http://localhost:8080/hook" })
    ok(Webhook.WebhookCreate, create)
    const { organization_id: __, ...update } = create
    ok(Webhook.WebhookUpdate, { ...update, auth: null })
  })
  it("never carries the client secret in output", () => {
    expect(bad(Webhook.Webhook, { id: "w1", ...create, ...audit })).toContain("auth.client_secret")
  })
  it("requires url, organization_id and complete credentials", () => {
    expect(bad(Webhook.WebhookCreate, { organization_id: "o1" })).toContain("url")
    expect(bad(Webhook.WebhookCreate, { url: create.url })).toContain("organization_id")
    expect(bad(Webhook.WebhookCreate, { ...create, auth: { token_url: auth.token_url, client_id: "c" } })).toContain(
      "auth.client_secret"
    )
    bad(Webhook.WebhookCreate, { ...create, auth: { ...auth, client_id: "" } })
    bad(Webhook.WebhookCreate, { ...create, auth: { ...auth, token_url: "not a url" } })
  })
  it("rejects bad URLs, event types and regulations, and output-only fields", () => {
    bad(Webhook.WebhookCreate, { ...create, url: "ftp://hooks.example.com" })
    expect(bad(Webhook.WebhookCreate, { ...create, event_types: ["event.created", "event.exploded"] })).toContain(
      "event_types.1"
    )
    expect(bad(Webhook.WebhookCreate, { ...create, regulations: ["GDPR"] })).toContain("regulations.0")
    expect(bad(Webhook.WebhookCreate, { ...create, signing_secret: "whsec_x" })).toContain("signing_secret")
    expect(bad(Webhook.WebhookUpdate, { ...create })).toContain("organization_id")
  })
  it("delivery log", () => {
    const attempt = {
      id: "a1",
      delivery_id: "msg_1",
      attempted_at: "2026-11-22T10:00:00.000Z",
      status_code: null,
      duration_ms: 15000,
      error: "timeout",
      response_excerpt: null
    }
    const delivery = {
      id: "msg_1",
      organization_id: "o1",
      webhook_id: "w1",
      event_type: "event.created",
      regulation: "gdpr",
      status: "failed",
      attempts_count: 6,
      next_attempt_at: null,
      last_status_code: 500,
      payload: { type: "event.created", parameters: {}, regulation: "gdpr" },
      created_at: audit.created_at,
      updated_at: audit.updated_at,
      version: 3
    }
    ok(Webhook.WebhookDelivery, delivery)
    ok(Webhook.WebhookDelivery, { ...delivery, attempts: [attempt, { ...attempt, id: "a2", status_code: 200, error: null }] })
    expect(bad(Webhook.WebhookDelivery, { ...delivery, status: "retrying" })).toContain("status")
    expect(bad(Webhook.WebhookDelivery, { ...delivery, attempts_count: -1 })).toContain("attempts_count")
    const { next_attempt_at: _, ...noNext } = delivery
    expect(bad(Webhook.WebhookDelivery, noNext)).toContain("next_attempt_at")
    expect(bad(Webhook.WebhookDelivery, { ...delivery, attempts: [{ ...attempt, duration_ms: -5 }] })).toContain(
      "attempts.0.duration_ms"
    )
  })
})

// ---------------------------------------------------------------- Analytics.ts

describe("Analytics", () => {
  const dashboard = {
    id: "d1",
    name: "Consents",
    order: 1,
    url: "https://dash.example.com/embed?token=abc&exp=1",
    category: "analytics",
    type: "tool_a",
    product: "cmp",
    aggregation_period: "daily",
    description: null,
    illustration_ref: "https://cdn.example.com/d.png"
  }
  const create = {
    type: "tool_a",
    product: "pmp",
    aggregation_period: "monthly",
    target_url: "https://dash.example.com/embed/1"
  }

  it("decodes dashboards and catalogue entries", () => {
    ok(Analytics.Dashboard, dashboard)
    ok(Analytics.DashboardCreate, create)
    ok(Analytics.DashboardCreate, { ...create, organization_id: null, name: "X", order: 2, category: "home" })
    ok(Analytics.DashboardUpdate, create)
  })
  it("enforces required fields and enums", () => {
    const { url: _, ...noUrl } = dashboard
    expect(bad(Analytics.Dashboard, noUrl)).toContain("url")
    expect(bad(Analytics.Dashboard, { ...dashboard, product: "dmp" })).toContain("product")
    expect(bad(Analytics.Dashboard, { ...dashboard, aggregation_period: "yearly" })).toContain("aggregation_period")
    expect(bad(Analytics.Dashboard, { ...dashboard, category: "other" })).toContain("category")
    expect(bad(Analytics.DashboardCreate, { ...create, type: "" })).toContain("type")
    const { target_url: __, ...noTarget } = create
    expect(bad(Analytics.DashboardCreate, noTarget)).toContain("target_url")
    expect(bad(Analytics.DashboardCreate, { ...create, url: dashboard.url })).toContain("url")
  })
  it("languages", () => {
    ok(Analytics.Languages, { available: ["en", "fr-FR"], default: "en", defaultCountries: { en: "US", fr: "FR" } })
    expect(bad(Analytics.Languages, { available: ["en"], defaultCountries: {} })).toContain("default")
    bad(Analytics.Languages, { available: ["en"], default: "en", defaultCountries: { en: 1 } })
  })
})

// ---------------------------------------------------------------- Export.ts

describe("Export", () => {
  const destinations = [
    { type: "directory", path: "o1/nightly" },
    { type: "https", url: "https://bucket.example.com/upload" }
  ]
  const create = { organization_id: "o1", name: "Nightly", destinations }

  it("decodes configs", () => {
    ok(Export.ExportConfig, { id: "x1", ...create, enabled: true, ...audit })
    ok(Export.ExportConfigCreate, create)
    ok(Export.ExportConfigUpdate, { name: "Nightly", enabled: false, destinations: [destinations[0]] })
  })
  it("rejects empty, unknown and mixed-up destinations", () => {
    expect(bad(Export.ExportConfigCreate, { ...create, destinations: [] })).toContain("destinations")
    bad(Export.ExportConfigCreate, { ...create, destinations: [{ type: "s3", bucket: "b" }] })
    // Plain http is refused by the service unless the host is allowed (WEBHOOK_ALLOW_HOSTS); the schema takes http(s) only.
    bad(Export.ExportConfigCreate, { ...create, destinations: [{ type: "https", url: "ftp://bucket.example.com" }] })
    bad(Export.ExportConfigCreate, { ...create, destinations: [{ type: "directory", path: "/var/exports" }] })
    bad(Export.ExportConfigCreate, { ...create, destinations: [{ type: "directory", path: "a/../../etc" }] })
    bad(Export.ExportConfigCreate, { ...create, destinations: [{ type: "directory", url: "https://x.example.com" }] })
    bad(Export.ExportConfigCreate, { ...create, destinations: [{ type: "directory", path: "" }] })
    expect(bad(Export.ExportConfigCreate, { organization_id: "o1", name: "N" })).toContain("destinations")
    expect(bad(Export.ExportConfigCreate, { ...create, id: "x1" })).toContain("id")
  })
  it("runs", () => {
    const run = { organization_id: "o1", export_config_id: "x1", from: "2026-11-01T00:00:00.000Z", to: "2026-11-02T00:00:00.000Z" }
    ok(Export.ExportRunInput, run)
    expect(bad(Export.ExportRunInput, { ...run, from: undefined })).toContain("from")
    expect(bad(Export.ExportRunInput, { ...run, to: "tomorrow" })).toContain("to")
    expect(bad(Export.ExportRunInput, { ...run, to: "2026-10-01T00:00:00.000Z" })).toContain("to: must not be before from")
    ok(Export.ExportRun, {
      id: "r1",
      ...run,
      status: "succeeded",
      events_count: 10,
      users_count: 3,
      destinations_count: 2,
      error: null,
      ...audit
    })
    bad(Export.ExportRun, {
      id: "r1",
      ...run,
      status: "running",
      events_count: 10,
      users_count: 3,
      destinations_count: 2,
      error: null,
      created_at: audit.created_at
    })
  })
})

// ---------------------------------------------------------------- Type === Encoded

/** Rows and JSON coincide only if no schema transforms (refinements are fine). */
const hasTransformation = (ast: unknown): boolean => {
  const seen = new Set<unknown>()
  const walk = (node: unknown): boolean => {
    if (node === null || typeof node !== "object" || seen.has(node)) return false
    seen.add(node)
    if ((node as { _tag?: unknown })._tag === "Transformation") return true
    return Object.values(node as Record<string, unknown>).some(walk)
  }
  return walk(ast)
}

describe("every exported schema keeps Type equal to Encoded", () => {
  const modules = { Property, Notice, Consent, Webhook, Analytics, Export }
  const schemas = Object.entries(modules).flatMap(([m, mod]) =>
    Object.entries(mod)
      .filter(([, v]) => Schema.isSchema(v))
      .map(([n, v]) => [`${m}.${n}`, v as Schema.Schema.AnyNoContext] as const)
  )

  it("finds the schemas", () => {
    expect(schemas.length).toBeGreaterThan(60)
  })
  it("detects a transformation when there is one", () => {
    expect(hasTransformation(Schema.Struct({ n: Schema.NumberFromString }).ast)).toBe(true)
  })
  it("has no transformation in any exported schema", () => {
    expect(schemas.filter(([, s]) => hasTransformation(s.ast)).map(([n]) => n)).toEqual([])
  })
})
