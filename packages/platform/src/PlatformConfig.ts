import {
  defaultLanguages,
  defaultQuotas,
  type PremiumFeatureFlag,
  premiumFeatureFlags,
  type QuotaField,
  type QuotaPeriod,
  Settings
} from "@cmp/core"
import type { ProvisionerOption } from "@cmp/platform-node"
import { type DispatcherConfig, parseRetrySchedule } from "@cmp/webhooks"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Either from "effect/Either"
import type * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import type { PlatformOptions } from "./Options.js"
import type { TracingOptions } from "./Tracing.js"

/**
 * The platform's settings as Effect `Config`, read from the environment by default (the
 * variables of docs/configuration.md). An empty variable counts as unset, as it did in a shell
 * `VAR= pnpm start`. Every mistake is an `InvalidData` naming the variable, so a start fails
 * with one line per problem instead of a stack trace.
 */

const invalid = (name: string, message: string) => ConfigError.InvalidData([name], message)

/** The variable as written, unset when absent or empty (secrets are not trimmed). */
export const raw = (name: string): Config.Config<Option.Option<string>> =>
  Config.string(name).pipe(Config.option, Config.map(Option.filter((s) => s !== "")))

/** The variable trimmed, unset when absent or blank. */
export const trimmed = (name: string): Config.Config<Option.Option<string>> =>
  Config.map(raw(name), (o) => Option.filter(Option.map(o, (s) => s.trim()), (s) => s !== ""))

/** Why a variable's value cannot be used. */
class Problem {
  constructor(readonly message: string) {}
}
const problem = (message: string) => new Problem(message)

/** Parses a set variable with `parse`; unset gives `fallback`. */
export const parsed = <A>(name: string, fallback: A, parse: (value: string) => A | Problem): Config.Config<A> =>
  Config.mapOrFail(trimmed(name), (o): Either.Either<A, ConfigError.ConfigError> => {
    if (Option.isNone(o)) return Either.right(fallback)
    const result = parse(o.value)
    return result instanceof Problem ? Either.left(invalid(name, result.message)) : Either.right(result)
  })

export const flag = (name: string, fallback: boolean) =>
  parsed(name, fallback, (v) => {
    const s = v.toLowerCase()
    if (["true", "1", "yes"].includes(s)) return true
    if (["false", "0", "no"].includes(s)) return false
    return problem(`${name} must be true or false, got '${v}'`)
  })

export const integer = (name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  parsed(name, fallback, (v) => {
    const n = Number(v)
    return Number.isInteger(n) && n >= min && n <= max ? n : problem(`${name} must be an integer from ${min} to ${max}`)
  })

/** JSON text, or undefined when it does not parse. */
const parseJson = (v: string): unknown => {
  try {
    return JSON.parse(v)
  } catch {
    return undefined
  }
}

/**
 * Relative paths are relative to the directory the command was started from: pnpm runs a
 * package script in the package's directory but says where it was called in `INIT_CWD`.
 */
export const baseDirectory = Config.map(raw("INIT_CWD"), Option.getOrElse(() => process.cwd()))

const logLevels = ["All", "Trace", "Debug", "Info", "Warning", "Error", "Fatal", "None"] as const

export const logLevel = parsed<LogLevel.Literal>("LOG_LEVEL", "Info", (v) =>
  (logLevels as ReadonlyArray<string>).includes(v)
    ? (v as LogLevel.Literal)
    : problem(`LOG_LEVEL must be one of ${logLevels.join(", ")}`))

const period = parsed<QuotaPeriod>("API_REQUESTS_PERIOD", { _tag: "CalendarMonth" }, (v) => {
  if (v === "month") return { _tag: "CalendarMonth" }
  const named: Record<string, number> = { day: 86_400, hour: 3_600 }
  const seconds = named[v] ?? Number(v)
  return Number.isInteger(seconds) && seconds >= 1
    ? { _tag: "Fixed", seconds }
    : problem("API_REQUESTS_PERIOD must be month, day, hour or a number of seconds")
})

const quotas = parsed<Readonly<Record<QuotaField, number>>>("DEFAULT_QUOTAS", defaultQuotas, (v) => {
  const given = parseJson(v)
  if (typeof given !== "object" || given === null || Array.isArray(given)) {
    return problem("DEFAULT_QUOTAS must be a JSON object such as {\"secrets\": 50}")
  }
  const out = { ...defaultQuotas }
  for (const [k, n] of Object.entries(given)) {
    if (!(k in defaultQuotas)) return problem(`DEFAULT_QUOTAS: unknown quota '${k}'`)
    if (typeof n !== "number" || !Number.isInteger(n) || n < 0) return problem(`DEFAULT_QUOTAS: '${k}' must be a non-negative integer`)
    out[k as QuotaField] = n
  }
  return out
})

const features = parsed<ReadonlyArray<PremiumFeatureFlag>>("DEFAULT_PREMIUM_FEATURES", [], (v) => {
  const list = v.split(",").map((s) => s.trim()).filter(Boolean)
  const unknown = list.find((f) => !(premiumFeatureFlags as ReadonlyArray<string>).includes(f))
  return unknown === undefined ? (list as Array<PremiumFeatureFlag>) : problem(`DEFAULT_PREMIUM_FEATURES: unknown feature '${unknown}'`)
})

const list = (name: string, lower = false) =>
  Config.map(trimmed(name), (o) =>
    Option.match(o, {
      onNone: () => [] as Array<string>,
      onSome: (v) => v.split(",").map((h) => (lower ? h.trim().toLowerCase() : h.trim())).filter(Boolean)
    }))

// ---------------------------------------------------------------- the operator key

const admin = Config.all({ key: raw("ADMIN_API_KEY"), secret: raw("ADMIN_API_SECRET") }).pipe(
  Config.mapOrFail(({ key, secret }) => {
    // Both problems of the pair in one message, which names each variable once.
    const short = Option.isSome(secret) && secret.value.length < 16
    if (Option.isSome(key) !== Option.isSome(secret)) {
      return Either.left(invalid(
        "ADMIN_API_KEY",
        `ADMIN_API_KEY and ADMIN_API_SECRET must be set together${short ? ", the secret at least 16 characters long" : ""}`
      ))
    }
    if (short) return Either.left(invalid("ADMIN_API_SECRET", "ADMIN_API_SECRET must be at least 16 characters long"))
    return Either.right({ key: Option.getOrUndefined(key), secret: Option.getOrUndefined(secret) })
  })
)

// ---------------------------------------------------------------- the keys the platform signs and seals with

/** `JWT_SECRET`: the HS256 key of access tokens (a secret: not trimmed). */
const jwtSecret = Config.mapOrFail(raw("JWT_SECRET"), (o) =>
  Option.isSome(o) && o.value.length < 32
    ? Either.left(invalid("JWT_SECRET", "JWT_SECRET must be at least 32 characters long"))
    : Either.right(Option.getOrUndefined(o)))

/** `JWT_SECRET_PREVIOUS`: the key `JWT_SECRET` replaced, still verifying the tokens it signed. */
const jwtSecretPrevious = Config.mapOrFail(raw("JWT_SECRET_PREVIOUS"), (o) =>
  Option.isSome(o) && o.value.length < 32
    ? Either.left(invalid("JWT_SECRET_PREVIOUS", "JWT_SECRET_PREVIOUS must be at least 32 characters long"))
    : Either.right(Option.getOrUndefined(o)))

/** `ENCRYPTION_KEY`: 32 bytes as 64 hex characters or base64, read as the secret box reads it. */
export const encryptionKey = Config.mapOrFail(trimmed("ENCRYPTION_KEY"), (o) => {
  if (Option.isNone(o)) return Either.right(undefined)
  const bytes = /^[0-9a-f]{64}$/i.test(o.value) ? Buffer.from(o.value, "hex") : Buffer.from(o.value, "base64")
  return bytes.length === 32
    ? Either.right(o.value)
    : Either.left(invalid("ENCRYPTION_KEY", "ENCRYPTION_KEY must be 32 bytes, as base64 or 64 hex characters (openssl rand -base64 32)"))
})

/** `ENCRYPTION_KEY_PREVIOUS`: the key `ENCRYPTION_KEY` replaced, still opening what it sealed. */
export const encryptionKeyPrevious = Config.mapOrFail(trimmed("ENCRYPTION_KEY_PREVIOUS"), (o) => {
  if (Option.isNone(o)) return Either.right(undefined)
  const bytes = /^[0-9a-f]{64}$/i.test(o.value) ? Buffer.from(o.value, "hex") : Buffer.from(o.value, "base64")
  return bytes.length === 32
    ? Either.right(o.value)
    : Either.left(invalid("ENCRYPTION_KEY_PREVIOUS", "ENCRYPTION_KEY_PREVIOUS must be 32 bytes, as base64 or 64 hex characters, as ENCRYPTION_KEY"))
})

/** Why `requireExternalKeys` refuses a start without these keys. */
export const externalKeysMissing = (missing: ReadonlyArray<string>) =>
  `REQUIRE_EXTERNAL_KEYS is true but ${missing.join(" and ")} ${missing.length > 1 ? "are" : "is"} not set: ` +
  "give them from a secret store rather than keep generated keys in the database"

/**
 * `REQUIRE_EXTERNAL_KEYS`, refused here as well as by the platform's layer when a key it asks for
 * is unset, so that the refusal is named beside any other mistake of the same start (a key set
 * but invalid is that key's own mistake).
 */
const requireExternalKeys = Config.all({ require: flag("REQUIRE_EXTERNAL_KEYS", false), jwt: raw("JWT_SECRET"), box: trimmed("ENCRYPTION_KEY") }).pipe(
  Config.mapOrFail(({ box, jwt, require }) => {
    const missing = [...(Option.isNone(jwt) ? ["JWT_SECRET"] : []), ...(Option.isNone(box) ? ["ENCRYPTION_KEY"] : [])]
    return require && missing.length > 0
      ? Either.left(invalid("REQUIRE_EXTERNAL_KEYS", externalKeysMissing(missing)))
      : Either.right(require)
  })
)

// ---------------------------------------------------------------- webhooks and outbound calls

const retrySchedule = Config.mapOrFail(raw("WEBHOOK_RETRY_SCHEDULE"), (o) => {
  try {
    return Either.right(parseRetrySchedule(Option.getOrUndefined(o)))
  } catch (e) {
    // The parser's message names the variable already.
    return Either.left(invalid("WEBHOOK_RETRY_SCHEDULE", e instanceof Error ? e.message : String(e)))
  }
})

const localAddress = parsed<string | undefined>("WEBHOOK_LOCAL_ADDRESS", undefined, (v) =>
  net.isIP(v) === 0 ? problem("WEBHOOK_LOCAL_ADDRESS must be an IP address") : v)

/** The dispatcher's settings (`WEBHOOK_*`); whether this process runs one is the caller's choice. */
export const dispatcher: Config.Config<DispatcherConfig> = Config.all({
  retrySchedule,
  timeoutMs: integer("WEBHOOK_TIMEOUT_MS", 15_000, 100, 600_000),
  leaseMs: Config.map(raw("WEBHOOK_LEASE_MS"), Option.getOrUndefined),
  concurrency: integer("WEBHOOK_CONCURRENCY", 32, 1, 1_000)
}).pipe(
  Config.mapOrFail(({ concurrency, leaseMs, retrySchedule, timeoutMs }) => {
    const lease = leaseMs === undefined || leaseMs.trim() === "" ? timeoutMs + 30_000 : Number(leaseMs)
    if (!Number.isInteger(lease) || lease < 1_000 || lease > 3_600_000) {
      return Either.left(invalid("WEBHOOK_LEASE_MS", "WEBHOOK_LEASE_MS must be an integer from 1000 to 3600000"))
    }
    return Either.right({ retrySchedule, timeoutMs, leaseMs: lease, concurrency })
  })
)

/** `WEBHOOK_DISPATCHER`: whether a server also delivers webhooks (else `worker` processes do). */
export const inServerDispatcher = flag("WEBHOOK_DISPATCHER", true)

// ---------------------------------------------------------------- organization resources

const provisioner = Config.all({
  kind: Config.map(trimmed("DOMAIN_PROVISIONER"), (o) => Option.getOrElse(Option.map(o, (s) => s.toLowerCase()), () => "immediate")),
  target: trimmed("DOMAIN_CNAME_TARGET")
}).pipe(Config.mapOrFail(({ kind, target }): Either.Either<ProvisionerOption, ConfigError.ConfigError> => {
  if (kind !== "immediate" && kind !== "dns") return Either.left(invalid("DOMAIN_PROVISIONER", "DOMAIN_PROVISIONER must be immediate or dns"))
  if (kind === "immediate") return Either.right({ kind: "immediate" })
  return Option.isNone(target)
    ? Either.left(invalid("DOMAIN_CNAME_TARGET", "DOMAIN_PROVISIONER=dns needs DOMAIN_CNAME_TARGET"))
    : Either.right({ kind: "dns", cnameTarget: target.value })
}))

const urlSigningKey = Config.mapOrFail(raw("URL_SIGNING_KEY"), (o) =>
  Option.isSome(o) && o.value.length < 32
    ? Either.left(invalid("URL_SIGNING_KEY", "URL_SIGNING_KEY must be at least 32 characters long"))
    : Either.right(Option.getOrUndefined(o)))

const countries = parsed<Record<string, string> | undefined>("LANGUAGES_DEFAULT_COUNTRIES", undefined, (v) => {
  const given = parseJson(v)
  if (typeof given !== "object" || given === null || Array.isArray(given) || Object.values(given).some((c) => typeof c !== "string")) {
    return problem("LANGUAGES_DEFAULT_COUNTRIES must map languages to country codes, such as {\"en\": \"GB\"}")
  }
  return given as Record<string, string>
})

const languages = Config.all({
  available: list("LANGUAGES_AVAILABLE"),
  fallback: trimmed("LANGUAGES_DEFAULT"),
  countries
}).pipe(Config.mapOrFail(({ available: given, countries, fallback }) => {
  const bad = given.find((l) => !/^[a-z]{2}(-[A-Z]{2})?$/.test(l))
  if (bad !== undefined) return Either.left(invalid("LANGUAGES_AVAILABLE", `LANGUAGES_AVAILABLE: '${bad}' is not a code such as en or en-US`))
  const available = given.length > 0 ? given : defaultLanguages.available
  const def = Option.getOrElse(fallback, () => (available.includes(defaultLanguages.default) ? defaultLanguages.default : available[0]!))
  if (!available.includes(def)) return Either.left(invalid("LANGUAGES_DEFAULT", "LANGUAGES_DEFAULT must be one of LANGUAGES_AVAILABLE"))
  return Either.right({ available, default: def, defaultCountries: countries ?? defaultLanguages.defaultCountries })
}))

const managedZone = Config.map(trimmed("MANAGED_DOMAIN_ZONE"), (o) =>
  Option.getOrUndefined(Option.filter(Option.map(o, (z) => z.toLowerCase().replace(/^\.|\.$/g, "")), (z) => z !== "")))

const vendorList = Config.all({ file: trimmed("TCF_VENDOR_LIST"), base: baseDirectory }).pipe(
  Config.mapOrFail(({ base, file }) => {
    if (Option.isNone(file)) return Either.right(undefined)
    try {
      return Either.right(JSON.parse(fs.readFileSync(path.resolve(base, file.value), "utf8")) as object)
    } catch (e) {
      return Either.left(invalid("TCF_VENDOR_LIST", `TCF_VENDOR_LIST must name a readable vendor-list JSON file: ${e instanceof Error ? e.message : String(e)}`))
    }
  })
)

const exportsRoot = Config.all({ dir: trimmed("EXPORTS_ROOT"), base: baseDirectory }).pipe(
  Config.map(({ base, dir }) => Option.getOrUndefined(Option.map(dir, (d) => path.resolve(base, d))))
)

// ---------------------------------------------------------------- invitations by mail

const isWebUrl = (s: string) => {
  try {
    return ["https:", "http:"].includes(new URL(s).protocol)
  } catch {
    return false
  }
}

const smtp = Config.all({ url: trimmed("SMTP_URL"), from: trimmed("MAIL_FROM"), acceptUrl: trimmed("INVITATION_URL") }).pipe(
  Config.mapOrFail(({ acceptUrl, from, url }) => {
    if (Option.isSome(acceptUrl) && !isWebUrl(acceptUrl.value)) {
      return Either.left(invalid("INVITATION_URL", "INVITATION_URL must be an https:// or http:// URL"))
    }
    if (Option.isNone(url) && Option.isNone(from)) {
      return Option.isSome(acceptUrl)
        ? Either.left(invalid("INVITATION_URL", "INVITATION_URL needs SMTP_URL and MAIL_FROM"))
        : Either.right(undefined)
    }
    if (Option.isNone(url) || Option.isNone(from)) {
      return Either.left(invalid("SMTP_URL", "SMTP_URL and MAIL_FROM must be set together"))
    }
    if (!/^smtps?:\/\//i.test(url.value)) return Either.left(invalid("SMTP_URL", "SMTP_URL must be an smtp:// or smtps:// URL"))
    return Either.right({ url: url.value, from: from.value, acceptUrl: Option.getOrUndefined(acceptUrl) })
  })
)

// ---------------------------------------------------------------- public consent writes

/** `PUBLIC_RATE_LIMIT=KEY,ADDRESS`: public consent writes a minute per public key and per client address. */
const publicRateLimit = parsed("PUBLIC_RATE_LIMIT", Settings.defaults.publicRateLimit, (v) => {
  const parts = v.split(",").map((p) => p.trim())
  const [perKey, perAddress] = parts.map(Number)
  const ok = (n: number | undefined) => n !== undefined && Number.isInteger(n) && n >= 1 && n <= 100_000_000
  return parts.length === 2 && ok(perKey) && ok(perAddress)
    ? { perKey: perKey!, perAddress: perAddress! }
    : problem(`PUBLIC_RATE_LIMIT must be two positive integers KEY,ADDRESS (writes a minute per public key and per address), got '${v}'`)
})

// ---------------------------------------------------------------- retention

/**
 * `RETENTION_DELIVERED_DAYS`: days delivered webhook messages and finished invitation mails are
 * kept (default 30); `0` or `off` keeps them forever.
 */
const retentionDays = (name: string, fallback: number) =>
  parsed<number | null>(name, fallback, (v) => {
    if (v.toLowerCase() === "off") return null
    const n = Number(v)
    if (!Number.isInteger(n) || n < 0 || n > 36_500) {
      return problem(`${name} must be a number of days from 0 to 36500 (0 or off: keep forever)`)
    }
    return n === 0 ? null : n
  })

const retentionDeliveredDays = retentionDays("RETENTION_DELIVERED_DAYS", 30)

/** `RETENTION_AUDIT_DAYS`: days the audit trail's entries are kept (default 400); `0` or `off` keeps them forever. */
const retentionAuditDays = retentionDays("RETENTION_AUDIT_DAYS", 400)

// ---------------------------------------------------------------- traces

/**
 * OpenTelemetry's own variables: `OTEL_EXPORTER_OTLP_ENDPOINT` (the collector's OTLP/HTTP base
 * URL) turns traces on, `OTEL_SERVICE_NAME` names the service. Unset, no span is recorded.
 */
const tracing = Config.all({ endpoint: trimmed("OTEL_EXPORTER_OTLP_ENDPOINT"), serviceName: trimmed("OTEL_SERVICE_NAME") }).pipe(
  Config.mapOrFail(({ endpoint, serviceName }): Either.Either<TracingOptions | undefined, ConfigError.ConfigError> => {
    if (Option.isNone(endpoint)) return Either.right(undefined)
    if (!isWebUrl(endpoint.value)) {
      return Either.left(invalid("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT must be an https:// or http:// URL"))
    }
    return Either.right({ endpoint: endpoint.value, serviceName: Option.getOrUndefined(serviceName) })
  })
)

// ---------------------------------------------------------------- operating

/**
 * `METRICS_TOKEN`: the bearer `/metrics` asks for (a secret: not trimmed), at least 16
 * characters, as the operator's secret; unset, `/metrics` is a 404.
 */
export const metricsToken: Config.Config<string | undefined> = Config.mapOrFail(raw("METRICS_TOKEN"), (o) =>
  Option.isSome(o) && o.value.length < 16
    ? Either.left(invalid("METRICS_TOKEN", "METRICS_TOKEN must be at least 16 characters long"))
    : Either.right(Option.getOrUndefined(o)))

// ---------------------------------------------------------------- everything

/**
 * Every platform setting but the store and the dispatcher switch: what `Platform.layerConfig`
 * builds from. The dispatcher's own settings are read here too, so a process that delivers uses them.
 */
export const platform: Config.Config<Omit<PlatformOptions, "store"> & { readonly dispatcherSettings: DispatcherConfig }> = Config.all({
  admin,
  logLevel,
  jwtSecret,
  jwtSecretPrevious,
  encryptionKey,
  encryptionKeyPrevious,
  requireExternalKeys,
  smtp,
  urlSigningKey,
  provisioner,
  exportsRoot,
  tcfVendorList: vendorList,
  webhookAllowHosts: list("WEBHOOK_ALLOW_HOSTS", true),
  webhookLocalAddress: localAddress,
  dispatcherSettings: dispatcher,
  expirySweepIntervalMs: integer("CONSENT_EXPIRY_SWEEP_MS", 5_000, 100, 60_000),
  defaultQuotas: quotas,
  defaultPremiumFeatures: features,
  apiRequestsPeriod: period,
  managedZone,
  languages,
  dashboardUrlTtlSeconds: integer("DASHBOARD_URL_TTL_SECONDS", 900, 10, 86_400),
  organizationsPerPerson: integer("ORGANIZATIONS_PER_PERSON", Settings.defaults.organizationsPerPerson),
  invitationsPerHour: integer("INVITATIONS_PER_HOUR", Settings.defaults.invitationsPerHour, 1),
  publicRateLimit,
  retentionDeliveredDays,
  retentionAuditDays,
  retentionIntervalMs: integer("RETENTION_INTERVAL_MS", 3_600_000, 100, 86_400_000),
  tracing
}).pipe(Config.map(({ apiRequestsPeriod, dashboardUrlTtlSeconds, defaultPremiumFeatures, defaultQuotas, invitationsPerHour, languages, managedZone, organizationsPerPerson, retentionAuditDays, retentionDeliveredDays, retentionIntervalMs, ...rest }) => ({
  ...rest,
  // The first run a minute after start, or sooner when runs are more frequent.
  retention: { deliveredDays: retentionDeliveredDays, auditDays: retentionAuditDays, everyMs: retentionIntervalMs, firstAfterMs: Math.min(60_000, retentionIntervalMs) },
  settings: { defaultQuotas, defaultPremiumFeatures, apiRequestsPeriod, managedZone, languages, dashboardUrlTtlSeconds, organizationsPerPerson, invitationsPerHour }
})))

/** One line per problem of a configuration that cannot be read. */
export const describe = (error: ConfigError.ConfigError): string => {
  const lines: Array<string> = []
  const walk = (e: ConfigError.ConfigError): void => {
    switch (e._op) {
      case "And":
      case "Or":
        walk(e.left)
        walk(e.right)
        return
      case "InvalidData":
      case "MissingData":
      case "SourceUnavailable":
      case "Unsupported":
        lines.push(e.message.includes(e.path.join(".")) || e.path.length === 0 ? e.message : `${e.path.join(".")}: ${e.message}`)
    }
  }
  walk(error)
  return [...new Set(lines)].join("; ")
}
