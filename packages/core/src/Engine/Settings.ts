import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import type { PremiumFeatureFlag, QuotaField } from "../Domain/Account.js"

/** How long one `api_requests` quota period lasts. */
export type QuotaPeriod = { readonly _tag: "CalendarMonth" } | { readonly _tag: "Fixed"; readonly seconds: number }

export interface SettingsShape {
  /** Id of the operator's own organization; its internal keys are operator keys. */
  readonly operatorOrganizationId: string
  readonly defaultQuotas: Readonly<Record<QuotaField, number>>
  readonly defaultPremiumFeatures: ReadonlyArray<PremiumFeatureFlag>
  readonly tokenTtlSeconds: number
  readonly apiRequestsPeriod: QuotaPeriod
  /** Receiver hosts allowed despite plain http or a private address (`WEBHOOK_ALLOW_HOSTS`). */
  readonly webhookAllowHosts: ReadonlyArray<string>
  /** Domains under this zone are `managed` (owned by the operator); unset: every domain is `custom`. */
  readonly managedZone?: string | undefined
  /** What `GET /v1/languages` answers. */
  readonly languages?: LanguagesSetting | undefined
  /** Lifetime of a signed dashboard URL. */
  readonly dashboardUrlTtlSeconds?: number | undefined
  /** `ORGANIZATIONS_PER_PERSON`: organizations one person (a member) may create; the operator is not limited. */
  readonly organizationsPerPerson: number
  /** `INVITATIONS_PER_HOUR`: invitations one organization may make in an hour, whoever invites. */
  readonly invitationsPerHour: number
  /** `PUBLIC_RATE_LIMIT`: public consent writes per minute, per public key and per client address. */
  readonly publicRateLimit: PublicRateLimitSetting
}

export interface PublicRateLimitSetting {
  readonly perKey: number
  readonly perAddress: number
}

/**
 * One busy site's banner, per server process: 100 writes a second per public key; a visitor
 * records a handful of choices, so 60 a minute per address leaves room for many behind one NAT.
 */
export const defaultPublicRateLimit: PublicRateLimitSetting = { perKey: 6000, perAddress: 60 }

export interface LanguagesSetting {
  readonly available: ReadonlyArray<string>
  readonly default: string
  readonly defaultCountries: Readonly<Record<string, string>>
}

export const defaultLanguages: LanguagesSetting = {
  available: ["en", "fr", "de", "es", "it", "nl", "pt", "pl"],
  default: "en",
  defaultCountries: { en: "GB", fr: "FR", de: "DE", es: "ES", it: "IT", nl: "NL", pt: "PT", pl: "PL" }
}

export const defaultQuotas: Readonly<Record<QuotaField, number>> = {
  exports_configs: 5,
  exports_destinations: 3,
  scraper_enabled_properties: 10,
  parallel_notices_deployments: 5,
  consent_proof_reports: 10,
  api_requests: 1_000_000,
  delivery_clouds: 1,
  services_per_delivery_cloud: 10,
  regions_per_delivery_cloud: 3,
  domains_per_delivery_cloud: 10,
  acm_scan_max_pages_per_property: 500,
  secrets: 20,
  metadata_purposes: 100,
  metadata_partners: 500,
  // Every webhook, enabled or not: each one is a signed call per matching change.
  webhooks: 20
}

export const OPERATOR_ORGANIZATION_ID = "operator"

export class Settings extends Context.Tag("@cmp/core/Settings")<Settings, SettingsShape>() {
  static readonly defaults: SettingsShape = {
    operatorOrganizationId: OPERATOR_ORGANIZATION_ID,
    defaultQuotas,
    defaultPremiumFeatures: [],
    tokenTtlSeconds: 3600,
    apiRequestsPeriod: { _tag: "CalendarMonth" },
    webhookAllowHosts: [],
    organizationsPerPerson: 10,
    invitationsPerHour: 50,
    publicRateLimit: defaultPublicRateLimit
  }
  static readonly layer = (overrides: Partial<SettingsShape> = {}) =>
    Layer.succeed(Settings, { ...Settings.defaults, ...overrides })
}
