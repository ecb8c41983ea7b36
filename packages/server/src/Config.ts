import { defaultLanguages, defaultQuotas, type PremiumFeatureFlag, premiumFeatureFlags, type QuotaField, type QuotaPeriod } from "@cmp/core"
import type { ServerOptions } from "@cmp/http-express"
import { PgStore } from "@cmp/store-postgres"
import { type DispatcherConfig, parseRetrySchedule } from "@cmp/webhooks"
import { SqliteStore } from "@cmp/store-sqlite"
import type * as LogLevel from "effect/LogLevel"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"

/** A configuration mistake: reported in one line at start, never as a stack trace. */
export class ConfigError extends Error {}

const bool = (env: NodeJS.ProcessEnv, name: string, fallback: boolean) => {
  const v = env[name]?.trim().toLowerCase()
  if (v === undefined || v === "") return fallback
  if (["true", "1", "yes"].includes(v)) return true
  if (["false", "0", "no"].includes(v)) return false
  throw new ConfigError(`${name} must be true or false, got '${env[name]}'`)
}

const int = (env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) => {
  const v = env[name]?.trim()
  if (v === undefined || v === "") return fallback
  const n = Number(v)
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`${name} must be an integer from ${min} to ${max}`)
  return n
}

const logLevels = ["All", "Trace", "Debug", "Info", "Warning", "Error", "Fatal", "None"] as const

const period = (v: string | undefined): QuotaPeriod => {
  if (v === undefined || v.trim() === "" || v.trim() === "month") return { _tag: "CalendarMonth" }
  const named: Record<string, number> = { day: 86_400, hour: 3_600 }
  const seconds = named[v.trim()] ?? Number(v)
  if (!Number.isInteger(seconds) || seconds < 1) {
    throw new ConfigError("API_REQUESTS_PERIOD must be month, day, hour or a number of seconds")
  }
  return { _tag: "Fixed", seconds }
}

const quotas = (v: string | undefined): Record<QuotaField, number> => {
  if (!v) return defaultQuotas
  let parsed: unknown
  try {
    parsed = JSON.parse(v)
  } catch {
    throw new ConfigError("DEFAULT_QUOTAS must be a JSON object such as {\"secrets\": 50}")
  }
  const out = { ...defaultQuotas }
  for (const [k, n] of Object.entries(parsed as Record<string, unknown>)) {
    if (!(k in defaultQuotas)) throw new ConfigError(`DEFAULT_QUOTAS: unknown quota '${k}'`)
    if (typeof n !== "number" || !Number.isInteger(n) || n < 0) throw new ConfigError(`DEFAULT_QUOTAS: '${k}' must be a non-negative integer`)
    out[k as QuotaField] = n
  }
  return out
}

const features = (v: string | undefined): Array<PremiumFeatureFlag> => {
  const list = (v ?? "").split(",").map((s) => s.trim()).filter(Boolean)
  for (const f of list) {
    if (!(premiumFeatureFlags as ReadonlyArray<string>).includes(f)) {
      throw new ConfigError(`DEFAULT_PREMIUM_FEATURES: unknown feature '${f}'`)
    }
  }
  return list as Array<PremiumFeatureFlag>
}

const vendorList = (v: string | undefined, base: string): object | undefined => {
  if (!v?.trim()) return undefined
  try {
    return JSON.parse(fs.readFileSync(path.resolve(base, v.trim()), "utf8")) as object
  } catch (e) {
    throw new ConfigError(`TCF_VENDOR_LIST must name a readable vendor-list JSON file: ${e instanceof Error ? e.message : String(e)}`)
  }
}

/** Organization resources (issue 5): domain provisioning, signed dashboard URLs, languages. */
const organizationOptions = (env: NodeJS.ProcessEnv) => {
  const zone = env.MANAGED_DOMAIN_ZONE?.trim().toLowerCase().replace(/^\.|\.$/g, "") || undefined
  const kind = env.DOMAIN_PROVISIONER?.trim().toLowerCase() || "immediate"
  const target = env.DOMAIN_CNAME_TARGET?.trim() || undefined
  if (kind !== "immediate" && kind !== "dns") throw new ConfigError("DOMAIN_PROVISIONER must be immediate or dns")
  if (kind === "dns" && !target) throw new ConfigError("DOMAIN_PROVISIONER=dns needs DOMAIN_CNAME_TARGET")
  const urlSigningKey = env.URL_SIGNING_KEY || undefined
  if (urlSigningKey !== undefined && urlSigningKey.length < 32) throw new ConfigError("URL_SIGNING_KEY must be at least 32 characters long")
  const list = (env.LANGUAGES_AVAILABLE ?? "").split(",").map((l) => l.trim()).filter(Boolean)
  for (const l of list) if (!/^[a-z]{2}(-[A-Z]{2})?$/.test(l)) throw new ConfigError(`LANGUAGES_AVAILABLE: '${l}' is not a code such as en or en-US`)
  let countries: Record<string, string> | undefined
  if (env.LANGUAGES_DEFAULT_COUNTRIES?.trim()) {
    try {
      countries = JSON.parse(env.LANGUAGES_DEFAULT_COUNTRIES) as Record<string, string>
    } catch {
      throw new ConfigError("LANGUAGES_DEFAULT_COUNTRIES must be a JSON object such as {\"en\": \"GB\"}")
    }
    if (typeof countries !== "object" || countries === null || Array.isArray(countries) || Object.values(countries).some((c) => typeof c !== "string")) {
      throw new ConfigError("LANGUAGES_DEFAULT_COUNTRIES must map languages to country codes")
    }
  }
  const available = list.length > 0 ? list : defaultLanguages.available
  const def = env.LANGUAGES_DEFAULT?.trim() || (available.includes(defaultLanguages.default) ? defaultLanguages.default : available[0]!)
  if (!available.includes(def)) throw new ConfigError("LANGUAGES_DEFAULT must be one of LANGUAGES_AVAILABLE")
  return {
    provisioner: kind === "dns" ? { kind: "dns" as const, cnameTarget: target! } : { kind: "immediate" as const },
    urlSigningKey,
    settings: {
      managedZone: zone,
      languages: { available, default: def, defaultCountries: countries ?? defaultLanguages.defaultCountries },
      dashboardUrlTtlSeconds: int(env, "DASHBOARD_URL_TTL_SECONDS", 900, 10, 86_400)
    }
  }
}

/** Reads the server's options from the environment (see the README's table). */
export interface Configuration extends ServerOptions {
  readonly sqlitePath: string
  readonly database: "sqlite" | "postgres"
  readonly inServerDispatcher: boolean
  readonly dispatcher: DispatcherConfig
}

export const fromEnv = (env: NodeJS.ProcessEnv = process.env): Configuration => {
  // `pnpm start` runs in packages/server; a relative path means the directory pnpm was run from.
  const base = env.INIT_CWD || process.cwd()
  const pemOrPath = (v: string) => (v.includes("-----BEGIN") ? v : path.resolve(base, v))
  const sqlitePath = path.resolve(base, env.SQLITE_PATH || "./data/consent.db")
  const databaseUrl = env.DATABASE_URL?.trim() || undefined
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError("DATABASE_URL must be a postgres:// or postgresql:// URL")
  }
  const logLevel = (env.LOG_LEVEL ?? "Info") as LogLevel.Literal
  if (!logLevels.includes(logLevel as never)) throw new ConfigError(`LOG_LEVEL must be one of ${logLevels.join(", ")}`)
  if ((env.TLS_CERT && !env.TLS_KEY) || (!env.TLS_CERT && env.TLS_KEY)) {
    throw new ConfigError("TLS_CERT and TLS_KEY must be set together")
  }
  if ((env.ADMIN_API_KEY && !env.ADMIN_API_SECRET) || (!env.ADMIN_API_KEY && env.ADMIN_API_SECRET)) {
    throw new ConfigError("ADMIN_API_KEY and ADMIN_API_SECRET must be set together")
  }
  if (env.ADMIN_API_SECRET && env.ADMIN_API_SECRET.length < 16) {
    throw new ConfigError("ADMIN_API_SECRET must be at least 16 characters long")
  }
  const allowHosts = (env.WEBHOOK_ALLOW_HOSTS ?? "").split(",").map((h) => h.trim().toLowerCase()).filter(Boolean)
  let retrySchedule: ReadonlyArray<number>
  try {
    retrySchedule = parseRetrySchedule(env.WEBHOOK_RETRY_SCHEDULE)
  } catch (e) {
    throw new ConfigError(`WEBHOOK_RETRY_SCHEDULE: ${e instanceof Error ? e.message : String(e)}`)
  }
  const localAddress = env.WEBHOOK_LOCAL_ADDRESS?.trim() || undefined
  if (localAddress && net.isIP(localAddress) === 0) throw new ConfigError("WEBHOOK_LOCAL_ADDRESS must be an IP address")
  const timeoutMs = int(env, "WEBHOOK_TIMEOUT_MS", 15_000, 100, 600_000)
  const dispatcher: DispatcherConfig = {
    retrySchedule,
    timeoutMs,
    leaseMs: int(env, "WEBHOOK_LEASE_MS", timeoutMs + 30_000, 1_000, 3_600_000),
    allowHosts,
    localAddress,
    concurrency: int(env, "WEBHOOK_CONCURRENCY", 32, 1, 1_000)
  }
  const encryptionKey = env.ENCRYPTION_KEY?.trim() || undefined
  const organization = organizationOptions(env)
  return {
    /** Whether this server also delivers webhooks (the default), or leaves it to `worker` processes. */
    inServerDispatcher: bool(env, "WEBHOOK_DISPATCHER", true),
    dispatcher,
    encryptionKey,
    webhookAllowHosts: allowHosts,
    /** Directory export destinations are confined under EXPORTS_ROOT (unset: they fail). */
    exportsRoot: env.EXPORTS_ROOT?.trim() ? path.resolve(base, env.EXPORTS_ROOT.trim()) : undefined,
    /** IAB Global Vendor List (JSON file) for server-side TC strings. */
    tcfVendorList: vendorList(env.TCF_VENDOR_LIST, base),
    sqlitePath,
    database: databaseUrl ? "postgres" : "sqlite",
    store: databaseUrl
      ? PgStore.layer({ url: databaseUrl, maxConnections: int(env, "DATABASE_POOL_SIZE", 10, 1, 1000) })
      : SqliteStore.layer({ filename: sqlitePath }),
    port: int(env, "PORT", 3000, 0, 65535),
    host: env.HOST || "127.0.0.1",
    allowHttp: bool(env, "ALLOW_HTTP", false),
    trustProxy: bool(env, "TRUST_PROXY", false),
    tls: env.TLS_CERT && env.TLS_KEY ? { cert: pemOrPath(env.TLS_CERT), key: pemOrPath(env.TLS_KEY) } : undefined,
    jwtSecret: env.JWT_SECRET || undefined,
    admin: { key: env.ADMIN_API_KEY || undefined, secret: env.ADMIN_API_SECRET || undefined },
    logLevel,
    provisioner: organization.provisioner,
    urlSigningKey: organization.urlSigningKey,
    settings: {
      ...organization.settings,
      defaultQuotas: quotas(env.DEFAULT_QUOTAS),
      defaultPremiumFeatures: features(env.DEFAULT_PREMIUM_FEATURES),
      apiRequestsPeriod: period(env.API_REQUESTS_PERIOD)
    }
  }
}
