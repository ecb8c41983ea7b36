import type { SdkConfigurationInput, TemplateApp } from "../Domain/Notice.js"

/**
 * Pure rules of notices: the IAB TCF checks of a template's `config.app`, and the SDK
 * configuration generator (spec section 2). No I/O: the use-cases load what they need first.
 */

type Json = Record<string, unknown>

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

/** TCF purposes for which legitimate interest is not an allowed legal basis (TCF v2.2 policy). */
export const PURPOSES_WITHOUT_LI: ReadonlyArray<number> = [1, 3, 4, 5, 6]

/**
 * `config.app` with every list the spec leaves optional filled in (empty); objects left out stay
 * out. What is stored and answered is then what the TCF rules were checked against.
 */
export const completeTemplateApp = (app: TemplateApp | undefined): TemplateApp => {
  const vendors = app?.vendors
  const iab = vendors?.iab
  return {
    ...app,
    essentialPurposes: app?.essentialPurposes ?? [],
    vendors: {
      ...vendors,
      include: vendors?.include ?? [],
      ...(iab === undefined ? {} : {
        iab: {
          ...iab,
          include: iab.include ?? [],
          exclude: iab.exclude ?? [],
          restrictions: (iab.restrictions ?? []).map((r) => ({
            ...r,
            vendors: { ...r.vendors, ids: r.vendors.ids ?? [], purposeId: r.vendors.purposeId ?? [] }
          })),
          ...(iab.stacks === undefined ? {} : { stacks: { ...iab.stacks, ids: iab.stacks.ids ?? [] } })
        }
      })
    }
  }
}

/** Field-named errors of a template's `config.app`; empty when it is acceptable. */
export const templateAppErrors = (app: TemplateApp, prefix = "config.app"): Record<string, string> => {
  const errors: Record<string, string> = {}
  const iab = app.vendors?.iab
  if (!iab) return errors
  const base = `${prefix}.vendors.iab`
  if (iab.exclude !== undefined && iab.exclude.length > 0 && iab.all !== true) {
    errors[`${base}.exclude`] = "is only meaningful with all: true"
  }
  iab.restrictions?.forEach((r, i) => {
    const at = `${base}.restrictions.${i}`
    if (r.restrictionType === "req-li") {
      const refused = r.purposeId.filter((p) => PURPOSES_WITHOUT_LI.includes(Number(p)))
      if (refused.length > 0) {
        errors[`${at}.purposeId`] = `req-li is not allowed for TCF purpose(s) ${refused.join(", ")}: ` +
          "legitimate interest is not a legal basis for purposes 1, 3, 4, 5 and 6"
      }
    }
    if (r.vendors.restrictionType === "list" && (r.vendors.ids === undefined || r.vendors.ids.length === 0)) {
      errors[`${at}.vendors.ids`] = "is required (at least one vendor id) when restrictionType is list"
    }
  })
  return errors
}

/** The SDK configuration input rules that need no data: the ignore-consent-before date. */
export const sdkInputErrors = (input: Partial<SdkConfigurationInput>, prefix = ""): Record<string, string> => {
  const errors: Record<string, string> = {}
  if (input.enable_ignore_consent_before === true && (input.ignore_consent_before ?? null) === null) {
    errors[`${prefix}ignore_consent_before`] = "is required (a valid date) when enable_ignore_consent_before is true"
  }
  if (input.text_mode === "approved" && (input.text_id ?? null) === null) {
    errors[`${prefix}text_id`] = "is required when text_mode is approved"
  }
  return errors
}

/** Later values win; objects merge key by key, arrays and scalars are replaced. */
export const deepMerge = (base: Json, over: Json): Json => {
  const out: Json = { ...base }
  for (const [k, v] of Object.entries(over)) {
    if (k === "__proto__" || k === "constructor" || k === "prototype") continue
    out[k] = isObject(v) && isObject(out[k]) ? deepMerge(out[k] as Json, v) : v
  }
  return out
}

const status = (b: boolean | null | undefined) => (b === true ? "granted" : "denied")

/** Google Consent Mode v2 default statuses under their standard names. */
export const gcmDefaults = (i: Partial<SdkConfigurationInput>) => ({
  ad_storage: status(i.gcm_ads_default_status),
  analytics_storage: status(i.gcm_analytics_default_status),
  functionality_storage: status(i.gcm_functionality_default_status),
  personalization_storage: status(i.gcm_personalization_default_status),
  security_storage: status(i.gcm_security_default_status),
  ad_user_data: status(i.gcm_ad_user_data_default_status),
  ad_personalization: status(i.gcm_ad_personalization_default_status)
})

export interface ApprovedText {
  readonly text_id: string
  readonly content_id: string
  readonly content_version: number
  readonly content: string
  readonly includes_purposes: boolean
}

const v = <A>(a: A | null | undefined): A | null => (a === undefined ? null : a)

/** The configuration a client SDK reads: `config` as given, the generated fields, then `custom_json` merged last. */
export const buildSdkConfig = (input: SdkConfigurationInput, text: ApprovedText | undefined): { config: Json } => {
  const ignoreBefore = input.enable_ignore_consent_before === true && input.ignore_consent_before
    ? new Date(input.ignore_consent_before).toISOString()
    : null
  const config: Json = {
    organization_id: input.organization_id,
    platform: input.platform,
    notice_deployment_id: v(input.notice_deployment_id),
    sdk_version: v(input.sdk_version),
    country: v(input.country),
    notice: {
      text_mode: input.text_mode ?? "custom",
      text: text
        ? {
          id: text.text_id,
          content_id: text.content_id,
          content_version: text.content_version,
          content: text.content,
          includes_purposes: text.includes_purposes
        }
        : null,
      negative_action: v(input.negative_action),
      disagree_button_style: input.disagree_button_style ?? "secondary",
      ctv_focus_on_agree_and_close: input.ctv_focus_on_agree_and_close ?? false
    },
    consent: {
      full_atp: input.full_atp ?? false,
      notice_deny_applies_to_li: input.notice_deny_applies_to_li ?? false,
      preferences_deny_applies_to_li: input.preferences_deny_applies_to_li ?? false,
      duration: { value: v(input.consent_duration), unit: input.consent_duration_unit ?? "months" },
      denied_duration: {
        value: v(input.denied_consent_duration),
        unit: input.denied_consent_duration_unit ?? "months",
        custom: input.denied_consent_duration_custom ?? false
      },
      ignore_consent_before: ignoreBefore
    },
    integrations: {
      google_consent_mode: input.gcm_enabled === true
        ? {
          enabled: true,
          tcf_enabled: input.gcm_tcf_enabled ?? false,
          set_default_status: input.gcm_set_default_status ?? false,
          data_layer_name: input.gcm_data_layer_name ?? "dataLayer",
          default_status: gcmDefaults(input)
        }
        : { enabled: false },
      microsoft_consent_mode: input.microsoft_enabled === true
        ? {
          enabled: true,
          set_default_status: input.microsoft_set_default_status ?? false,
          default_status: { ad_storage: status(input.microsoft_ad_storage_default_status) },
          enable_tcf_advertiser_consent_mode: input.microsoft_enable_tcf_advertiser_consent_mode ?? false
        }
        : { enabled: false }
    }
  }
  // The given `config` sections (app, preferences, ...) first, the generated fields over them,
  // then `custom_json` last.
  const merged = deepMerge(input.config, config)
  return { config: input.custom_json ? deepMerge(merged, input.custom_json) : merged }
}
