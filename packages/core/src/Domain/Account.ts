import * as Schema from "effect/Schema"
import { Audit, Email, exampleIds, HttpsUrl, Id, Name, NonNegativeInt, opt, Text, Timestamp, Url } from "./Common.js"

// ---------------------------------------------------------------- sessions

export const SessionType = Schema.Literal("api-key", "email")

export const SessionInput = Schema.Struct({
  type: SessionType,
  key: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(320)),
  secret: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(1024))
}).annotations({
  // The operator key of the README's quick start.
  examples: [{ type: "api-key", key: "admin", secret: "change-me-0123456789" }]
})
export type SessionInput = typeof SessionInput.Type

/** The spec's schema also names `secret` as required, but no response carries it. */
export const Session = Schema.Struct({
  type: SessionType,
  key: Schema.String,
  access_token: Schema.String
})
export type Session = typeof Session.Type

export const PlatformIntegrationSessionInput = Schema.Struct({}).annotations({ examples: [{}] })

export const PlatformIntegrationSession = Schema.Struct({
  type: Schema.Literal("api-key"),
  key: Schema.String,
  access_token: Schema.String,
  platform_integration_id: Schema.String
})
export type PlatformIntegrationSession = typeof PlatformIntegrationSession.Type

/** Operator registry of platform integrations (`platform-integrations`). */
export const PlatformIntegration = Schema.Struct({
  id: Id,
  name: Name,
  description: opt(Text),
  organization_id: Id,
  enabled: Schema.Boolean,
  /** Shown once, on creation. */
  token: Schema.optional(Schema.String),
  ...Audit
})
export const PlatformIntegrationCreate = Schema.Struct({
  name: Name,
  description: opt(Text),
  organization_id: Id,
  enabled: Schema.optional(Schema.Boolean)
}).annotations({
  examples: [{
    organization_id: exampleIds.organization,
    name: "Shop hosting platform",
    description: "Opens sessions for the shop on the platform that hosts it",
    enabled: true
  }]
})
export const PlatformIntegrationUpdate = Schema.Struct({
  name: Name,
  description: opt(Text),
  enabled: Schema.Boolean
}).annotations({
  examples: [{ name: "Shop hosting platform", description: "Opens sessions for the shop on the platform that hosts it", enabled: true }]
})

// ---------------------------------------------------------------- keys

export const ApiKey = Schema.Struct({
  id: Id,
  name: Name,
  description: opt(Text),
  organization_id: Id,
  enabled: Schema.Boolean,
  is_internal: Schema.Boolean,
  /** Shown once, in the response to the key's creation or to a rotation of its secret. */
  secret: Schema.optional(Schema.String),
  /** Until when the secret replaced by the last rotation still opens sessions; `null`: none is kept. */
  previous_secret_expires_at: opt(Timestamp),
  ...Audit
})
export type ApiKey = typeof ApiKey.Type

export const ApiKeyCreate = Schema.Struct({
  organization_id: Id,
  name: Name,
  description: opt(Text),
  is_internal: Schema.optional(Schema.Boolean)
}).annotations({
  examples: [{ organization_id: exampleIds.organization, name: "Order service", description: "Records consent from the checkout" }]
})
export const ApiKeyUpdate = Schema.Struct({
  name: Name,
  description: opt(Text),
  enabled: Schema.Boolean
}).annotations({ examples: [{ name: "Order service", description: "Records consent from the checkout", enabled: true }] })

// ---------------------------------------------------------------- organizations

/** An IAB TCF CMP id: 12 bits in a TC string, 0 meaning none. */
export const TcfCmpId = Schema.Int.pipe(
  Schema.between(1, 4095, { message: () => "must be an integer from 1 to 4095 (a TCF CMP id has 12 bits)" })
)

/**
 * How many days the consent events of an organization's inactive users are kept (see
 * `ConsentRetention`); `null`: forever.
 */
export const ConsentRetentionDays = Schema.Int.pipe(
  Schema.between(1, 36_500, { message: () => "must be an integer from 1 to 36500 (days), or null to keep consent events forever" })
)

export const Organization = Schema.Struct({
  id: Id,
  name: Name,
  website: opt(Url),
  industry_id: opt(Id),
  analytics_url: opt(Url),
  public_api_key: Schema.String,
  validate_purpose_id: Schema.Boolean,
  disable_preferences_in_consents: Schema.Boolean,
  /** Deprecated: authentication is always enabled. */
  auth_enabled: Schema.Boolean,
  auth_allow_user_creation: Schema.Boolean,
  auth_message_priority: Schema.Array(Schema.String),
  allow_tcf_with_custom_text: Schema.Boolean,
  self_register: Schema.Boolean,
  organization_group_id: opt(Id),
  organization_group_name: opt(Schema.String),
  iab_tcf_cmp_id: opt(TcfCmpId),
  allow_chat_support: Schema.Boolean,
  /** Consent tokens issued before this date are refused; `null`: none. */
  consent_tokens_revoked_before: opt(Timestamp),
  /** Until when the public key replaced by the last rotation is still accepted; `null`: none is kept. */
  previous_key_expires_at: opt(Timestamp),
  /** Days the consent events of inactive users are kept before they are purged; `null`: forever. */
  consent_retention_days: opt(ConsentRetentionDays),
  ...Audit
})
export type Organization = typeof Organization.Type

const organizationInputFields = {
  name: Name,
  website: opt(Url),
  industry_id: opt(Id),
  analytics_url: opt(Url),
  auth_enabled: Schema.optional(Schema.Boolean),
  auth_allow_user_creation: Schema.optional(Schema.Boolean),
  auth_message_priority: Schema.optional(Schema.Array(Schema.String.pipe(Schema.maxLength(64)))),
  organization_group_id: opt(Id),
  consent_retention_days: opt(ConsentRetentionDays),
  /** Input only: the CRM account of the organization's group. */
  crm_account_id: opt(Id)
}

export const OrganizationCreate = Schema.Struct(organizationInputFields).annotations({
  examples: [{ name: "Acme Shop", website: "https://www.acme.example.com" }]
})
export const OrganizationUpdate = Schema.Struct({
  ...organizationInputFields,
  /** Refuses the consent tokens issued before it; a date ahead of the server's is taken as now. */
  consent_tokens_revoked_before: opt(Timestamp)
}).annotations({
  examples: [{ name: "Acme Shop", website: "https://www.acme.example.com", consent_tokens_revoked_before: null }]
})

/** Output-only flags the operator (and nobody else) may set. */
export const OrganizationOperatorFields = Schema.Struct({
  validate_purpose_id: Schema.optional(Schema.Boolean),
  disable_preferences_in_consents: Schema.optional(Schema.Boolean),
  allow_tcf_with_custom_text: Schema.optional(Schema.Boolean),
  allow_chat_support: Schema.optional(Schema.Boolean),
  organization_group_name: opt(Schema.String),
  // The IAB registers CMPs: an id a client chose could claim another CMP's identity in TC strings.
  iab_tcf_cmp_id: opt(TcfCmpId)
})

// ---------------------------------------------------------------- quotas

export const quotaFields = [
  "exports_configs",
  "exports_destinations",
  "scraper_enabled_properties",
  "parallel_notices_deployments",
  "consent_proof_reports",
  "api_requests",
  "delivery_clouds",
  "services_per_delivery_cloud",
  "regions_per_delivery_cloud",
  "domains_per_delivery_cloud",
  "acm_scan_max_pages_per_property",
  "secrets",
  "metadata_purposes",
  "metadata_partners",
  "webhooks"
] as const
export type QuotaField = (typeof quotaFields)[number]

const quotaLimits = Object.fromEntries(quotaFields.map((f) => [f, NonNegativeInt])) as {
  readonly [K in QuotaField]: typeof NonNegativeInt
}
const quotaLimitsOptional = Object.fromEntries(
  quotaFields.map((f) => [f, Schema.optional(NonNegativeInt)])
) as { readonly [K in QuotaField]: Schema.optional<typeof NonNegativeInt> }

export const Quota = Schema.Struct({
  id: Id,
  organization_id: Id,
  ...quotaLimits,
  ...Audit
})
export type Quota = typeof Quota.Type
export const QuotaCreate = Schema.Struct({ organization_id: Id, ...quotaLimitsOptional }).annotations({
  examples: [{ organization_id: exampleIds.organization, webhooks: 50, secrets: 40 }]
})
export const QuotaUpdate = Schema.Struct(quotaLimits).annotations({
  examples: [{
    exports_configs: 5,
    exports_destinations: 3,
    scraper_enabled_properties: 10,
    parallel_notices_deployments: 5,
    consent_proof_reports: 50,
    api_requests: 2_000_000,
    delivery_clouds: 1,
    services_per_delivery_cloud: 10,
    regions_per_delivery_cloud: 3,
    domains_per_delivery_cloud: 10,
    acm_scan_max_pages_per_property: 500,
    secrets: 40,
    metadata_purposes: 100,
    metadata_partners: 500,
    webhooks: 50
  }]
})

// ---------------------------------------------------------------- premium features

export const premiumFeatureFlags = [
  "preference_center",
  "preference_management_platform",
  "propagate_consents_on_sync",
  "consent_management_platform",
  "cross_device",
  "batch_exports",
  "batch_exports_manual_run",
  "batch_exports_analytics",
  "data_residency_russia",
  "integrations",
  "integrations_v2",
  "smart_vendor_list",
  "compliance_report_v2",
  "versions_and_proofs",
  "mass_update",
  "consents_api",
  "store_cmp_consents",
  "store_guest_cmp_consents",
  "sso",
  "webhooks",
  "advanced_internal_monitoring",
  "server_side",
  "acm_static_ip",
  "acm_vendor_templates",
  "acm_data_exports",
  "acm_high_frequency",
  "acm_full_website_scan",
  "web_sdk_versioning",
  "web_sdk_fixed_versioning",
  "privacy_widgets_advanced",
  "cmp_consent_or_pay",
  "cmp_rules_underage",
  "privacy_widgets_versions",
  "dsar_experience",
  "brand_manager",
  "cmp_advanced_widgets",
  "pmp_data_exports",
  "cmp_data_exports",
  "cmp_ctv_widgets"
] as const
export type PremiumFeatureFlag = (typeof premiumFeatureFlags)[number]

const flags = Object.fromEntries(premiumFeatureFlags.map((f) => [f, Schema.Boolean])) as {
  readonly [K in PremiumFeatureFlag]: typeof Schema.Boolean
}
const flagsOptional = Object.fromEntries(
  premiumFeatureFlags.map((f) => [f, Schema.optional(Schema.Boolean)])
) as { readonly [K in PremiumFeatureFlag]: Schema.optional<typeof Schema.Boolean> }

export const PremiumFeature = Schema.Struct({ id: Id, organization_id: Id, ...flags, ...Audit })
export type PremiumFeature = typeof PremiumFeature.Type
/** The premium features the examples switch on: what the consents API, its proofs and webhooks need. */
const exampleFeatures: ReadonlyArray<PremiumFeatureFlag> = ["consents_api", "versions_and_proofs", "webhooks"]

export const PremiumFeatureCreate = Schema.Struct({ organization_id: Id, ...flagsOptional }).annotations({
  examples: [{ organization_id: exampleIds.organization, ...Object.fromEntries(exampleFeatures.map((f) => [f, true])) }]
})
export const PremiumFeatureUpdate = Schema.Struct(flags).annotations({
  examples: [
    Object.fromEntries(premiumFeatureFlags.map((f) => [f, exampleFeatures.includes(f)])) as { readonly [K in PremiumFeatureFlag]: boolean }
  ]
})

// ---------------------------------------------------------------- secrets

export const Secret = Schema.Struct({
  id: Id,
  name: Name,
  description: opt(Text),
  /** The value, shown once in the response to its creation; kept hashed. */
  secret: Schema.optional(Schema.String),
  organization_id: Id,
  /** Signatures of user ids made with this secret must carry an expiration; set when it is created. */
  require_expiration: Schema.Boolean,
  ...Audit
})
export const SecretCreate = Schema.Struct({
  name: Name,
  organization_id: Id,
  description: opt(Text),
  require_expiration: Schema.optional(Schema.Boolean)
}).annotations({
  examples: [{
    organization_id: exampleIds.organization,
    name: "User id signing",
    description: "Signs organization_user_id in the shop's pages",
    require_expiration: true
  }]
})
export const SecretUpdate = Schema.Struct({ name: Name, description: opt(Text) }).annotations({
  examples: [{ name: "User id signing", description: "Signs organization_user_id in the shop's pages" }]
})

// ---------------------------------------------------------------- members

export const AuthenticationMethod = Schema.Literal("email_password", "google", "microsoft", "saml_sso")

/**
 * Returned once, to the inviter, in the response to the invitation when no mailer is configured
 * (the inviter hands it on); with a mailer it is mailed to the person invited and never
 * returned. The person accepts it with `POST /v1/invitations/accept`.
 */
export const Invitation = Schema.Struct({ token: Schema.String, expires_at: Timestamp })

export const Member = Schema.Struct({
  id: Id,
  role_id: opt(Id),
  organization_id: Id,
  user_id: Id,
  authentication_method: AuthenticationMethod,
  saml_active: Schema.Boolean,
  invitation: Schema.optional(Invitation),
  ...Audit
})
export type Member = typeof Member.Type
/** Creating a member is an invitation. */
export const MemberCreate = Schema.Struct({ name: Name, email: Email, organization_id: Id }).annotations({
  examples: [{ name: "Ada Lovelace", email: "ada@acme.example.com", organization_id: exampleIds.organization }]
})
export const InvitationAcceptInput = Schema.Struct({
  token: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(512)),
  password: Schema.String.pipe(
    Schema.minLength(8, { message: () => "must have at least 8 characters" }),
    Schema.maxLength(1024)
  )
}).annotations({
  examples: [{
    token: `inv_${exampleIds.invitation}.mV3q8ZtR0cXy1LbN5fKd7HwP2sJgA9eUoT4iCkQ6nYr`,
    password: "correct horse battery staple"
  }]
})
export const MemberUpdate = Schema.Struct({
  role_id: opt(Id),
  authentication_method: AuthenticationMethod,
  saml_active: Schema.Boolean
}).annotations({ examples: [{ role_id: null, authentication_method: "email_password", saml_active: false }] })

// ---------------------------------------------------------------- SSO and source systems

export const SsoConnection = Schema.Struct({
  id: Id,
  idp_connection_id: Schema.String,
  idp_connection_name: Schema.String,
  idp_certificate: Schema.String,
  idp_domain_aliases: Schema.Array(Schema.String),
  idp_sign_in_endpoint: HttpsUrl,
  idp_sign_out_endpoint: opt(HttpsUrl),
  idp_sign_saml_request: Schema.Boolean,
  organization_group_id: opt(Id),
  organization_id: Id,
  created_at: Timestamp,
  updated_at: Timestamp,
  version: Schema.optional(Schema.Int)
})
/**
 * Exactly one PEM certificate block and nothing else (surrounding white space aside): a chain,
 * a key or any other text beside it would be stored and shown with the connection.
 */
const PemCertificate = Schema.String.pipe(
  Schema.maxLength(20_000),
  Schema.pattern(/^\s*-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----\s*$/, {
    message: () => "must be exactly one PEM certificate (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----) and nothing else"
  })
)
const DomainAlias = Schema.String.pipe(
  Schema.pattern(/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i, {
    message: () => "must be a domain name"
  })
)
/**
 * The examples' identity provider: a self-signed certificate made for them (CN
 * idp.acme.example.com, valid until 2126), whose key was thrown away; the server parses a
 * certificate and refuses an expired one, so a made-up block would not do.
 */
const exampleIdp = {
  idp_certificate: [
    "-----BEGIN CERTIFICATE-----",
    "MIIBlDCCATugAwIBAgIUF5gdW/ZQxWnOYJwuoXLFQ/PE72EwCgYIKoZIzj0EAwIw",
    "HzEdMBsGA1UEAwwUaWRwLmFjbWUuZXhhbXBsZS5jb20wIBcNMjYxMTI4MDMxNDA3",
    "WhgPMjEyNjExMDQwMzE0MDdaMB8xHTAbBgNVBAMMFGlkcC5hY21lLmV4YW1wbGUu",
    "Y29tMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEndzuPgzdZTubc+DYHdBBt779",
    "kzXn6pFrotD4UNcNUdjP70/m9mEdbiEVW3ViPxNwRvxTTW03DXz5fLUo06+AlKNT",
    "MFEwHQYDVR0OBBYEFAs4bZrHM4pC1gH7X79O/1JtmznAMB8GA1UdIwQYMBaAFAs4",
    "bZrHM4pC1gH7X79O/1JtmznAMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwID",
    "RwAwRAIgTEdyqkW+cNepAvbPw7d3uj2Ga43ZgrM7cxIhi7WlxXsCICc/NXYLO/Z/",
    "fbrIie0mNnzxM0Kpv2n/abWZ0+Z1kmrN",
    "-----END CERTIFICATE-----"
  ].join("\n"),
  idp_sign_in_endpoint: "https://idp.acme.example.com/saml/sso",
  idp_sign_out_endpoint: "https://idp.acme.example.com/saml/slo",
  idp_domain_aliases: ["acme.example.com"],
  idp_sign_saml_request: true
}

export const SsoConnectionCreate = Schema.Struct({
  organization_id: Id,
  idp_certificate: PemCertificate,
  idp_sign_in_endpoint: HttpsUrl,
  idp_sign_out_endpoint: opt(HttpsUrl),
  idp_domain_aliases: Schema.optional(Schema.Array(DomainAlias)),
  idp_sign_saml_request: Schema.optional(Schema.Boolean)
}).annotations({ examples: [{ organization_id: exampleIds.organization, ...exampleIdp }] })
/** The spec requires `organization_id` on patch too (input only). */
export const SsoConnectionUpdate = Schema.Struct({
  organization_id: Id,
  idp_certificate: PemCertificate,
  idp_sign_in_endpoint: HttpsUrl,
  idp_sign_out_endpoint: opt(HttpsUrl),
  idp_domain_aliases: Schema.Array(DomainAlias),
  idp_sign_saml_request: Schema.Boolean
}).annotations({ examples: [{ organization_id: exampleIds.organization, ...exampleIdp }] })

export const OrganizationSourceSystem = Schema.Struct({
  id: Id,
  organization_id: Id,
  source_system: Schema.Literal("sp"),
  source_system_id: Id,
  created_at: Timestamp,
  updated_at: Timestamp,
  version: Schema.optional(Schema.Int)
})
export const OrganizationSourceSystemCreate = Schema.Struct({
  organization_id: Id,
  source_system: Schema.Literal("sp"),
  source_system_id: Id
}).annotations({ examples: [{ organization_id: exampleIds.organization, source_system: "sp", source_system_id: "sp-account-4821" }] })
