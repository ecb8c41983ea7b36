import * as Schema from "effect/Schema"
import { Audit, Email, exampleIds, HttpsUrl, Id, Name, NonNegativeInt, JsonObject, opt, Text, Url } from "./Common.js"

// ---------------------------------------------------------------- properties

/** Not in the spec: a website or app of the organization; cookies and vendors hang off it. */
export const Property = Schema.Struct({
  id: Id,
  organization_id: Id,
  name: Name,
  website: opt(Url),
  ...Audit
})
export type Property = typeof Property.Type

/** The property of the examples: its cookies are set on its website's host. */
const exampleProperty = { name: "Web shop", website: "https://shop.acme.example.com" }

export const PropertyCreate = Schema.Struct({
  organization_id: Id,
  name: Name,
  website: opt(Url)
}).annotations({ examples: [{ organization_id: exampleIds.organization, ...exampleProperty }] })
export const PropertyUpdate = Schema.Struct({
  name: Name,
  website: opt(Url)
}).annotations({ examples: [exampleProperty] })

// ---------------------------------------------------------------- domains

const Label = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
const fqdnPattern = new RegExp(`^(?:${Label}\\.)+(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$`)

/** A fully qualified domain name, lower-case, without a trailing dot (a domain's `id`). */
export const Fqdn = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9.-]+$/, {
    message: () => "must contain only lower-case letters, digits, hyphens and dots"
  }),
  Schema.maxLength(253, { message: () => "must be at most 253 characters" }),
  Schema.filter((s) => fqdnPattern.test(s), { message: () => "must be a fully qualified domain name" })
)

/** Section 3: the provisioning states of a domain. */
export const DomainStatus = Schema.Literal(
  "draft",
  "scheduled",
  "to_be_deleted",
  "deploying",
  "deleting",
  "failed",
  "ready"
)
export type DomainStatus = typeof DomainStatus.Type

export const DomainType = Schema.Literal("custom", "managed")
export const DomainUsage = Schema.Literal("cmp", "privacy-center", "preference-center")
export const BotsCrawl = Schema.Literal("allow_all", "disallow_all")

/** The usages of a host that serves the organization's pages: it must be proven before it is served. */
export const pageUsages: ReadonlyArray<typeof DomainUsage.Type> = ["privacy-center", "preference-center"]

/**
 * What proves that an organization holds a page host: a TXT record named `record` holding
 * `value`, random per domain.
 */
export const DomainVerification = Schema.Struct({
  record: Schema.String,
  value: Schema.String
})
export type DomainVerification = typeof DomainVerification.Type

export const Domain = Schema.Struct({
  id: Fqdn,
  organization_id: Id,
  description: opt(Text),
  enabled: Schema.Boolean,
  entity_id: opt(Id),
  /** Set automatically at creation; output only. */
  type: DomainType,
  status: DomainStatus,
  usage: DomainUsage,
  bots_crawl: opt(BotsCrawl),
  /** A page host's proof (usages `privacy-center`, `preference-center`); null for `cmp`. Output only. */
  verification: opt(DomainVerification),
  /** Why the domain is `failed` (the TXT record missing, the provisioner's refusal); null otherwise. Output only. */
  failure_reason: opt(Text),
  ...Audit
})
export type Domain = typeof Domain.Type

export const DomainCreate = Schema.Struct({
  id: Fqdn,
  organization_id: Id,
  usage: DomainUsage,
  description: opt(Text),
  enabled: Schema.optional(Schema.Boolean),
  entity_id: opt(Id),
  bots_crawl: opt(BotsCrawl)
}).annotations({
  examples: [{
    id: "consent.acme.example.com",
    organization_id: exampleIds.organization,
    usage: "cmp",
    description: "Serves the consent banner of the web shop",
    enabled: true
  }]
})
/**
 * `id`, `organization_id` and `usage` are not updatable. `status` is a request for a
 * transition (a client may only ask for `scheduled` or `to_be_deleted`; the state machine is
 * enforced elsewhere), so it stays optional even on PUT: leaving it out changes nothing.
 */
export const DomainUpdate = Schema.Struct({
  description: opt(Text),
  enabled: Schema.Boolean,
  entity_id: opt(Id),
  status: Schema.optional(DomainStatus),
  bots_crawl: opt(BotsCrawl)
}).annotations({
  // No status: a transition is asked for only when meant.
  examples: [{ description: "Serves the consent banner of the web shop", enabled: true, entity_id: null, bots_crawl: "allow_all" }]
})

// ---------------------------------------------------------------- cookies and vendors

/** Cookie and vendor publication status. */
export const PublicationStatus = Schema.Literal("draft", "published")
export type PublicationStatus = typeof PublicationStatus.Type

/** The domain a cookie is set on: a host name, optionally with the leading dot of cookies. */
export const CookieDomain = Schema.String.pipe(
  Schema.maxLength(254, { message: () => "must be at most 254 characters" }),
  Schema.pattern(
    /^\.?(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i,
    { message: () => "must be a domain name" }
  )
)

export const Cookie = Schema.Struct({
  id: Id,
  name: Name,
  domain: CookieDomain,
  /** Seconds. */
  lifetime: opt(NonNegativeInt),
  status: PublicationStatus,
  taxonomy_id: Id,
  property_id: Id,
  vendor_id: opt(Id),
  ...Audit
})
export type Cookie = typeof Cookie.Type

/** Google Analytics' cookie on the example property's host, kept two years. */
const exampleCookie = {
  name: "_ga",
  domain: "shop.acme.example.com",
  lifetime: 63_072_000,
  status: "draft",
  taxonomy_id: "analytics",
  vendor_id: null
} as const

export const CookieCreate = Schema.Struct({
  name: Name,
  domain: CookieDomain,
  lifetime: opt(NonNegativeInt),
  status: Schema.optional(PublicationStatus),
  taxonomy_id: Id,
  property_id: Id,
  vendor_id: opt(Id)
}).annotations({ examples: [{ property_id: exampleIds.property, ...exampleCookie }] })
/** `property_id` is not updatable. */
export const CookieUpdate = Schema.Struct({
  name: Name,
  domain: CookieDomain,
  lifetime: opt(NonNegativeInt),
  status: PublicationStatus,
  taxonomy_id: Id,
  vendor_id: opt(Id)
}).annotations({ examples: [{ ...exampleCookie, status: "published" }] })

/** A vendor of a property; its `id` differs from the vendor metadata ID. */
export const Vendor = Schema.Struct({
  id: Id,
  status: PublicationStatus,
  property_id: Id,
  metadata_id: Id,
  ...Audit
})
export type Vendor = typeof Vendor.Type

export const VendorCreate = Schema.Struct({
  status: Schema.optional(PublicationStatus),
  property_id: Id,
  metadata_id: Id
}).annotations({ examples: [{ property_id: exampleIds.property, metadata_id: "google-analytics", status: "draft" }] })
export const VendorUpdate = Schema.Struct({
  status: PublicationStatus,
  metadata_id: Id
}).annotations({ examples: [{ status: "published", metadata_id: "google-analytics" }] })

// ---------------------------------------------------------------- privacy centers

/**
 * A host name of a custom domain: no scheme, slash, port or IP address (a last label of digits
 * only is how every IPv4 form ends, `127.1` and `0x7f.1` included; IPv6 has colons). It names
 * a host and proves nothing: whether a host is served is decided by the organization's `ready`
 * domains.
 */
export const CustomDomain = Schema.String.pipe(
  Schema.filter((s) => !s.includes("://"), { message: () => "must not include a scheme" }),
  Schema.filter((s) => !s.includes("/"), { message: () => "must not include a slash" }),
  Schema.filter((s) => !s.includes(":"), { message: () => "must be a host name, without a port or an IPv6 address" }),
  Schema.maxLength(253, { message: () => "must be at most 253 characters" }),
  Schema.pattern(/^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i, {
    message: () => "must be a host name"
  }),
  Schema.filter((s) => !/(?:^|\.)[0-9]+$/.test(s), { message: () => "must be a host name, not an IP address" })
)

/** `en` or `en-US`. */
export const LanguageCode = Schema.String.pipe(
  Schema.pattern(/^[a-z]{2}(-[A-Z]{2})?$/, {
    message: () => "must be a language code such as en or en-US"
  })
)

export const PrivacyCenterContact = Schema.Struct({
  email: Schema.optional(Email),
  /** A phone number, per the spec. */
  schedule: Schema.optional(Schema.String.pipe(Schema.maxLength(255))),
  address: Schema.optional(Schema.String.pipe(Schema.maxLength(1000)))
})

export const PrivacyCenterCustomization = Schema.Struct({
  logo: Schema.optional(HttpsUrl),
  colors: Schema.optional(
    Schema.Struct({
      primary: Schema.optional(Schema.String.pipe(Schema.maxLength(64)))
    })
  )
})

export const DisplayCookies = Schema.Literal("list", "choices", "none")

/** Markdown can be longer than `Text`. */
const Markdown = Schema.String.pipe(
  Schema.maxLength(200_000, { message: () => "must be at most 200000 characters" })
)

const privacyCenterFields = {
  name: Name,
  website: opt(Url),
  custom_domains: opt(Schema.Array(CustomDomain)),
  contact: opt(PrivacyCenterContact),
  customization: opt(PrivacyCenterCustomization),
  legal_name: opt(Name),
  display_cookies: opt(DisplayCookies),
  privacy_policy: opt(Markdown),
  content: opt(JsonObject),
  /** An empty list or null enables all languages. */
  languages: opt(Schema.Array(LanguageCode))
}

export const PrivacyCenter = Schema.Struct({
  id: Id,
  ...privacyCenterFields,
  auth_required: Schema.Boolean,
  organization_id: Id,
  ...Audit
})
export type PrivacyCenter = typeof PrivacyCenter.Type

const examplePrivacyCenter = {
  name: "Acme privacy center",
  website: "https://www.acme.example.com",
  custom_domains: ["privacy.acme.example.com"],
  contact: { email: "privacy@acme.example.com", address: "1 Example Street, 75001 Paris, France" },
  legal_name: "Acme Shop SAS",
  display_cookies: "list",
  languages: ["en", "fr"],
  auth_required: false
} as const

export const PrivacyCenterCreate = Schema.Struct({
  ...privacyCenterFields,
  auth_required: Schema.optional(Schema.Boolean),
  organization_id: Id
}).annotations({ examples: [{ organization_id: exampleIds.organization, ...examplePrivacyCenter }] })
/** The spec requires `organization_id` on input; it is not updatable, so update leaves it out. */
export const PrivacyCenterUpdate = Schema.Struct({
  ...privacyCenterFields,
  auth_required: Schema.Boolean
}).annotations({ examples: [examplePrivacyCenter] })
