import * as Schema from "effect/Schema"
import { Audit, exampleIds, Id, JsonObject, Name, NonNegativeInt, opt } from "./Common.js"
import { CountryCode } from "./Consent.js"

// ---------------------------------------------------------------- notice texts

export const NoticeTextPlatform = Schema.Literal("web", "amp", "app", "ctv")

export const NoticeText = Schema.Struct({
  id: Id,
  organization_id: Id,
  /** Internal label, never shown to end users. */
  name: Name,
  platforms: Schema.Array(NoticeTextPlatform),
  /** The default text for the organization and platform(s). */
  default: Schema.Boolean,
  ...Audit
})
export type NoticeText = typeof NoticeText.Type

const exampleText = { name: "Cookie banner (web)", platforms: ["web"], default: true } as const

export const NoticeTextCreate = Schema.Struct({
  organization_id: Id,
  name: Name,
  platforms: Schema.optional(Schema.Array(NoticeTextPlatform)),
  default: Schema.optional(Schema.Boolean)
}).annotations({ examples: [{ organization_id: exampleIds.organization, ...exampleText }] })
export const NoticeTextUpdate = Schema.Struct({
  name: Name,
  platforms: Schema.Array(NoticeTextPlatform),
  default: Schema.Boolean
}).annotations({ examples: [exampleText] })

// ---------------------------------------------------------------- notice text contents

/** Set by the operator's review, never by the client. */
export const ContentStatus = Schema.Literal("submitted", "approved", "rejected")
export type ContentStatus = typeof ContentStatus.Type

const ContentBody = Schema.String.pipe(
  Schema.filter((s) => s.trim().length > 0, { message: () => "must not be empty" }),
  Schema.maxLength(200_000, { message: () => "must be at most 200000 characters" })
)

export const NoticeTextContent = Schema.Struct({
  id: Id,
  content: ContentBody,
  status: ContentStatus,
  includes_purposes: Schema.Boolean,
  /** Assigned on creation: previous max for the text + 1. */
  content_version: Schema.Int.pipe(Schema.positive()),
  organization_id: Id,
  text_id: Id,
  ...Audit
})
export type NoticeTextContent = typeof NoticeTextContent.Type

const exampleWording = {
  content: "We and our partners use cookies to measure visits and to show you offers that suit you. " +
    "You can change your choice at any time from the privacy settings at the bottom of every page.",
  includes_purposes: true
}

export const NoticeTextContentCreate = Schema.Struct({
  content: ContentBody,
  includes_purposes: Schema.optional(Schema.Boolean),
  organization_id: Id,
  text_id: Id
}).annotations({ examples: [{ organization_id: exampleIds.organization, text_id: exampleIds.text, ...exampleWording }] })
export const NoticeTextContentUpdate = Schema.Struct({
  content: ContentBody,
  includes_purposes: Schema.Boolean
}).annotations({ examples: [exampleWording] })
/** What only the operator may write: the review. */
export const NoticeTextContentReview = Schema.Struct({ status: ContentStatus })

// ---------------------------------------------------------------- SDK configuration

export const SdkPlatform = Schema.Literal("web", "amp", "mobile", "television")
export const TextMode = Schema.Literal("approved", "custom")
/** `null` means no negative action. */
export const NegativeAction = Schema.Literal("button", "link")
export const DisagreeButtonStyle = Schema.Literal("primary", "secondary")
export const DurationUnit = Schema.Literal("months", "days", "seconds")

/** A date (`2024-01-31`) or date-time. */
const DateString = Schema.String.pipe(
  Schema.filter((s) => /^\d{4}-\d{2}-\d{2}/.test(s) && !Number.isNaN(Date.parse(s)), {
    message: () => "must be an ISO 8601 date"
  })
)

const Duration = Schema.Number.pipe(
  Schema.finite({ message: () => "must be a finite number" }),
  Schema.nonNegative({ message: () => "must not be negative" })
)

const ShortString = Schema.String.pipe(Schema.maxLength(255, { message: () => "must be at most 255 characters" }))

/** The optional fields of the SDK configuration (everything but organization_id, platform, config). */
const sdkOptionalFields = {
  notice_deployment_id: opt(Id),
  /** Merged into the result. */
  custom_json: opt(JsonObject),
  /** true uses the client's own ATP vendor selection. */
  full_atp: opt(Schema.Boolean),
  text_mode: opt(TextMode),
  /** The approved text when text_mode is `approved`. */
  text_id: opt(Id),
  enable_ignore_consent_before: opt(Schema.Boolean),
  /** Consent given before this date is collected again. */
  ignore_consent_before: opt(DateString),
  negative_action: opt(NegativeAction),
  disagree_button_style: opt(DisagreeButtonStyle),
  country: opt(CountryCode),
  notice_deny_applies_to_li: opt(Schema.Boolean),
  preferences_deny_applies_to_li: opt(Schema.Boolean),
  consent_duration: opt(Duration),
  consent_duration_unit: opt(DurationUnit),
  denied_consent_duration: opt(Duration),
  denied_consent_duration_unit: opt(DurationUnit),
  denied_consent_duration_custom: opt(Schema.Boolean),
  gcm_enabled: opt(Schema.Boolean),
  gcm_tcf_enabled: opt(Schema.Boolean),
  gcm_set_default_status: opt(Schema.Boolean),
  gcm_data_layer_name: opt(ShortString),
  gcm_analytics_default_status: opt(Schema.Boolean),
  gcm_ads_default_status: opt(Schema.Boolean),
  gcm_functionality_default_status: opt(Schema.Boolean),
  gcm_personalization_default_status: opt(Schema.Boolean),
  gcm_security_default_status: opt(Schema.Boolean),
  gcm_ad_user_data_default_status: opt(Schema.Boolean),
  gcm_ad_personalization_default_status: opt(Schema.Boolean),
  microsoft_enabled: opt(Schema.Boolean),
  microsoft_set_default_status: opt(Schema.Boolean),
  microsoft_ad_storage_default_status: opt(Schema.Boolean),
  microsoft_enable_tcf_advertiser_consent_mode: opt(Schema.Boolean),
  ctv_focus_on_agree_and_close: opt(Schema.Boolean),
  sdk_version: opt(ShortString)
}

/** Input of `widgets/notices/generators/sdk`. */
/** A banner that asks again after six months, with Google Consent Mode denied until the visitor chooses. */
const exampleSdkFields = {
  text_mode: "custom",
  negative_action: "button",
  consent_duration: 6,
  consent_duration_unit: "months",
  gcm_enabled: true,
  gcm_set_default_status: true
} as const

export const SdkConfigurationInput = Schema.Struct({
  organization_id: Id,
  platform: SdkPlatform,
  config: JsonObject,
  ...sdkOptionalFields
}).annotations({
  examples: [{
    organization_id: exampleIds.organization,
    platform: "web",
    config: {},
    ...exampleSdkFields,
    custom_json: { notice: { position: "bottom" } }
  }]
})
export type SdkConfigurationInput = typeof SdkConfigurationInput.Type

/** Output: the configuration structured for the client SDK. */
export const SdkConfiguration = Schema.Struct({ config: JsonObject })
export type SdkConfiguration = typeof SdkConfiguration.Type

// ---------------------------------------------------------------- notice configs

/** The `config` of a notice config on input: the SDK configuration fields, all optional. */
export const NoticeConfigBody = Schema.Struct({
  organization_id: Schema.optional(Id),
  platform: Schema.optional(SdkPlatform),
  config: Schema.optional(JsonObject),
  ...sdkOptionalFields
})
export type NoticeConfigBody = typeof NoticeConfigBody.Type

export const NoticeConfig = Schema.Struct({
  id: Id,
  organization_id: Id,
  config: JsonObject,
  ...Audit
})
export type NoticeConfig = typeof NoticeConfig.Type

export const NoticeConfigCreate = Schema.Struct({
  organization_id: Id,
  config: NoticeConfigBody
}).annotations({ examples: [{ organization_id: exampleIds.organization, config: { platform: "web", ...exampleSdkFields } }] })
export const NoticeConfigUpdate = Schema.Struct({
  config: NoticeConfigBody
}).annotations({ examples: [{ config: { platform: "web", ...exampleSdkFields } }] })

// ---------------------------------------------------------------- notice template configs

const StringIds = Schema.Array(Schema.String.pipe(Schema.maxLength(255)))
const IabVendorIds = Schema.Array(NonNegativeInt)

export const RestrictionType = Schema.Literal("allow", "disallow", "req-consent", "req-li")

/**
 * A TCF v2 purpose id, as the decimal text of 1 to 11 and nothing else: the rules compare it as
 * a number, so `"3 4"` or `"1x"` must not pass for a purpose they would not check.
 */
export const TcfPurposeId = Schema.String.pipe(
  Schema.pattern(/^(?:[1-9]|1[01])$/, { message: () => "must be a TCF purpose id: \"1\" to \"11\"" })
)
const TcfPurposeIds = Schema.Array(TcfPurposeId)

/** A restriction says what it restricts: its id, purposes, type and vendor scope stay required. */
export const TcfRestriction = Schema.Struct({
  id: Schema.String.pipe(Schema.maxLength(255)),
  purposeId: TcfPurposeIds,
  restrictionType: RestrictionType,
  vendors: Schema.Struct({
    restrictionType: Schema.Literal("list", "all"),
    /** IAB vendor ids, required (non-empty) when restrictionType is `list`. */
    ids: Schema.optional(IabVendorIds),
    purposeId: Schema.optional(TcfPurposeIds)
  })
})

export const TcfVersion = Schema.Int.pipe(
  Schema.between(1, 2, { message: () => "must be an integer from 1 to 2" })
)

export const IabVendors = Schema.Struct({
  /** Include all IAB vendors. */
  all: Schema.optional(Schema.Boolean),
  include: Schema.optional(IabVendorIds),
  /** Used when `all` is true. */
  exclude: Schema.optional(IabVendorIds),
  enabled: Schema.optional(Schema.Boolean),
  version: Schema.optional(TcfVersion),
  restrictions: Schema.optional(Schema.Array(TcfRestriction)),
  stacks: Schema.optionalWith(
    Schema.Struct({
      auto: Schema.optional(Schema.Boolean),
      ids: Schema.optional(StringIds)
    }),
    { exact: true }
  )
})

const TemplateVendors = Schema.Struct({
  include: Schema.optional(StringIds),
  iab: Schema.optionalWith(IabVendors, { exact: true })
})

/**
 * `config.app` of a template config, as in the spec: no field is required. A list left out is
 * stored empty (`completeTemplateApp`), so the stored config shows what the TCF rules checked.
 */
export const TemplateApp = Schema.Struct({
  /** Custom purpose IDs. */
  essentialPurposes: Schema.optional(StringIds),
  vendors: Schema.optionalWith(TemplateVendors, { exact: true })
})
export type TemplateApp = typeof TemplateApp.Type

/** `app` is validated; the sections after it (preferences and later) are kept as they are. */
export const TemplateConfigBody = Schema.Struct(
  // Exact optionals of objects: a non-exact one also reports "expected undefined" for a wrong value.
  { app: Schema.optionalWith(TemplateApp, { exact: true }) },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
)
export type TemplateConfigBody = typeof TemplateConfigBody.Type

export const NoticeTemplateConfig = Schema.Struct({
  id: Id,
  template_id: opt(Id),
  organization_id: Id,
  config: TemplateConfigBody,
  ...Audit
})
export type NoticeTemplateConfig = typeof NoticeTemplateConfig.Type

/** Essential purposes and the organization's own vendors; no IAB vendors, so no TCF rule applies. */
const exampleTemplate = {
  template_id: null,
  config: { app: { essentialPurposes: ["cookies"], vendors: { include: ["google-analytics"] } } }
}

export const NoticeTemplateConfigCreate = Schema.Struct({
  template_id: opt(Id),
  organization_id: Id,
  config: TemplateConfigBody
}).annotations({ examples: [{ organization_id: exampleIds.organization, ...exampleTemplate }] })
export const NoticeTemplateConfigUpdate = Schema.Struct({
  template_id: opt(Id),
  config: TemplateConfigBody
}).annotations({ examples: [exampleTemplate] })
