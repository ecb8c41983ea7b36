import { PlatformConfig } from "@cmp/platform"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import * as ServerConfig from "../src/ServerConfig.js"

/** The server's and the platform's settings as `pnpm start` reads them, from a given environment. */
const read = (env: Record<string, string>) =>
  Effect.runSync(
    Effect.either(Config.all({ server: ServerConfig.server, platform: PlatformConfig.platform })).pipe(
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))
    )
  )

/** A certificate for localhost and its key, as `TLS_CERT` and `TLS_KEY` name them. */
const fixtures = path.join(import.meta.dirname, "api", "fixtures")

const settings = (env: Record<string, string>) => {
  const r = read(env)
  if (Either.isLeft(r)) throw new Error(PlatformConfig.describe(r.left))
  return r.right
}

const problem = (env: Record<string, string>) => {
  const r = read(env)
  return Either.isLeft(r) ? PlatformConfig.describe(r.left) : undefined
}

describe("configuration from the environment", () => {
  it("BODY_TIMEOUT_MS and BODY_MEMORY_LIMIT: unset leave the API's defaults, set are passed on, out of range refused", () => {
    const unset = settings({}).server
    expect(unset.bodyTimeoutMs).toBeUndefined()
    expect(unset.bodyMemoryLimit).toBeUndefined()
    const set = settings({ BODY_TIMEOUT_MS: "2500", BODY_MEMORY_LIMIT: "8388608" }).server
    expect(set.bodyTimeoutMs).toBe(2500)
    expect(set.bodyMemoryLimit).toBe(8 * 1024 * 1024)
    expect(problem({ BODY_TIMEOUT_MS: "0" })).toContain("BODY_TIMEOUT_MS")
    expect(problem({ BODY_MEMORY_LIMIT: "1000" })).toContain("BODY_MEMORY_LIMIT")
  })

  it("uses the documented defaults", () => {
    const { platform: p, server: s } = settings({})
    expect(s.port).toBe(3000)
    expect(s.host).toBe("127.0.0.1")
    expect(s.store).toEqual({ _tag: "sqlite", options: { filename: path.resolve(process.cwd(), "data/consent.db") } })
    expect(s.allowHttp).toBe(false)
    expect(s.trustProxy).toBe(0)
    expect(s.tls).toBeUndefined()
    expect(s.logLevel).toBe("Info")
    expect(p.settings?.apiRequestsPeriod).toEqual({ _tag: "CalendarMonth" })
    expect(p.settings?.defaultPremiumFeatures).toEqual([])
    expect(p.admin).toEqual({ key: undefined, secret: undefined })
    expect(p.dispatcherSettings).toEqual({ retrySchedule: [300, 300, 300, 300, 300], timeoutMs: 15_000, leaseMs: 45_000, concurrency: 32 })
  })

  it("reads every variable", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-config-"))
    fs.copyFileSync(path.join(fixtures, "localhost-cert.pem"), path.join(dir, "c.pem"))
    const { platform: p, server: s } = settings({
      PORT: "8080",
      HOST: "0.0.0.0",
      SQLITE_PATH: "/tmp/x.db",
      ALLOW_HTTP: "true",
      TRUST_PROXY: "2",
      ADMIN_API_KEY: "admin",
      ADMIN_API_SECRET: "a-long-enough-secret",
      JWT_SECRET: "x".repeat(40),
      DEFAULT_PREMIUM_FEATURES: "webhooks, consents_api",
      DEFAULT_QUOTAS: "{\"secrets\": 3}",
      API_REQUESTS_PERIOD: "day",
      TLS_CERT: path.join(dir, "c.pem"),
      TLS_KEY: fs.readFileSync(path.join(fixtures, "localhost-key.pem"), "utf8"),
      WEBHOOK_ALLOW_HOSTS: "Receiver.local, 127.0.0.1",
      WEBHOOK_LOCAL_ADDRESS: "127.0.0.1",
      WEBHOOK_RETRY_SCHEDULE: "1,2",
      WEBHOOK_TIMEOUT_MS: "500",
      WEBHOOK_CONCURRENCY: "4",
      EXPORTS_ROOT: "/srv/exports",
      ENCRYPTION_KEY: "a".repeat(64),
      ENCRYPTION_KEY_PREVIOUS: Buffer.alloc(32, 7).toString("base64"),
      LOG_LEVEL: "Warning"
    })
    fs.rmSync(dir, { recursive: true, force: true })
    expect(s.port).toBe(8080)
    expect(s.host).toBe("0.0.0.0")
    expect(s.store).toEqual({ _tag: "sqlite", options: { filename: "/tmp/x.db" } })
    expect(s.allowHttp).toBe(true)
    expect(s.trustProxy).toBe(2)
    expect(s.logLevel).toBe("Warning")
    expect(s.tls?.cert).toContain("BEGIN CERTIFICATE")
    expect(s.tls?.key).toContain("BEGIN PRIVATE KEY")
    expect(p.admin).toEqual({ key: "admin", secret: "a-long-enough-secret" })
    expect(p.jwtSecret).toBe("x".repeat(40))
    expect(p.encryptionKey).toBe("a".repeat(64))
    expect(p.encryptionKeyPrevious).toBe(Buffer.alloc(32, 7).toString("base64"))
    expect(p.exportsRoot).toBe("/srv/exports")
    expect(p.webhookAllowHosts).toEqual(["receiver.local", "127.0.0.1"])
    expect(p.webhookLocalAddress).toBe("127.0.0.1")
    expect(p.dispatcherSettings).toEqual({ retrySchedule: [1, 2], timeoutMs: 500, leaseMs: 30_500, concurrency: 4 })
    expect(p.settings?.defaultPremiumFeatures).toEqual(["webhooks", "consents_api"])
    expect(p.settings?.defaultQuotas?.secrets).toBe(3)
    expect(p.settings?.defaultQuotas?.api_requests).toBe(1_000_000)
    expect(p.settings?.apiRequestsPeriod).toEqual({ _tag: "Fixed", seconds: 86_400 })
  })

  it("TRUST_PROXY is a number of proxies: true is one, false none", () => {
    expect(settings({ TRUST_PROXY: "true" }).server.trustProxy).toBe(1)
    expect(settings({ TRUST_PROXY: "TRUE" }).server.trustProxy).toBe(1)
    expect(settings({ TRUST_PROXY: "false" }).server.trustProxy).toBe(0)
    expect(settings({ TRUST_PROXY: "0" }).server.trustProxy).toBe(0)
    expect(settings({ TRUST_PROXY: " 3 " }).server.trustProxy).toBe(3)
    for (const v of ["yes", "no", "-1", "1.5", "1e1", "0x1", "loopback", "10.0.0.0/8"]) {
      expect(problem({ TRUST_PROXY: v }), v).toMatch(/^TRUST_PROXY must be true, false or the number of proxies/)
    }
  })

  it("METRICS_TOKEN of 16 characters or more is taken as written", () => {
    expect(settings({ METRICS_TOKEN: " sixteen-chars-x" }).server.metricsToken).toBe(" sixteen-chars-x")
    expect(settings({}).server.metricsToken).toBeUndefined()
  })

  it("relative paths are relative to the directory pnpm was run from", () => {
    const { server: s } = settings({ INIT_CWD: "/srv/app", SQLITE_PATH: "db/c.db" })
    expect(s.store).toEqual({ _tag: "sqlite", options: { filename: "/srv/app/db/c.db" } })
  })

  it("an empty variable counts as unset", () => {
    const { server: s } = settings({ PORT: "", ALLOW_HTTP: " ", DATABASE_URL: "" })
    expect(s.port).toBe(3000)
    expect(s.allowHttp).toBe(false)
    expect(s.store._tag).toBe("sqlite")
  })

  it("DATABASE_URL selects PostgreSQL; otherwise SQLite", () => {
    expect(settings({}).server.store._tag).toBe("sqlite")
    expect(settings({ DATABASE_URL: "postgres://u@localhost:5432/db" }).server.store).toEqual({
      _tag: "postgres",
      options: { url: "postgres://u@localhost:5432/db", maxConnections: 10 }
    })
    expect(settings({ DATABASE_URL: "postgresql://u@localhost/db", DATABASE_POOL_SIZE: "3" }).server.store).toEqual({
      _tag: "postgres",
      options: { url: "postgresql://u@localhost/db", maxConnections: 3 }
    })
  })

  it.each([
    [{ PORT: "http" }, /PORT/],
    [{ ALLOW_HTTP: "maybe" }, /ALLOW_HTTP/],
    [{ ADMIN_API_KEY: "admin" }, /ADMIN_API_KEY/],
    [{ ADMIN_API_KEY: "admin", ADMIN_API_SECRET: "short" }, /^ADMIN_API_SECRET must be at least 16 characters long$/],
    [{ ADMIN_API_SECRET: "short" }, /^ADMIN_API_KEY and ADMIN_API_SECRET must be set together, the secret at least 16 characters long$/],
    [{ JWT_SECRET: "short" }, /^JWT_SECRET must be at least 32 characters long$/],
    [{ ENCRYPTION_KEY: "abc" }, /^ENCRYPTION_KEY must be 32 bytes, as base64 or 64 hex characters/],
    [{ ENCRYPTION_KEY: "a".repeat(63) }, /^ENCRYPTION_KEY must be 32 bytes/],
    [{ ENCRYPTION_KEY_PREVIOUS: "abc" }, /^ENCRYPTION_KEY_PREVIOUS must be 32 bytes, as base64 or 64 hex characters/],
    [{ REQUIRE_EXTERNAL_KEYS: "true", JWT_SECRET: "j".repeat(32) }, /^REQUIRE_EXTERNAL_KEYS is true but ENCRYPTION_KEY is not set/],
    [{ REQUIRE_EXTERNAL_KEYS: "true" }, /^REQUIRE_EXTERNAL_KEYS is true but JWT_SECRET and ENCRYPTION_KEY are not set/],
    [{ TLS_CERT: "/c.pem" }, /TLS_CERT/],
    [{ TLS_CERT: "/nowhere/c.pem", TLS_KEY: "/nowhere/k.pem" }, /TLS_CERT must be PEM text or a readable file/],
    [{ TLS_CERT: "-----BEGIN CERTIFICATE-----\nc\n-----END CERTIFICATE-----", TLS_KEY: "-----BEGIN PRIVATE KEY-----\nk\n-----END PRIVATE KEY-----" },
      /^TLS_CERT and TLS_KEY must be a PEM certificate chain and its private key: /],
    [{ TLS_CERT: path.join(fixtures, "localhost-cert.pem"), TLS_KEY: path.join(fixtures, "localhost-cert.pem") },
      /^TLS_CERT and TLS_KEY must be a PEM certificate chain and its private key: /],
    [{ DEFAULT_PREMIUM_FEATURES: "flying" }, /flying/],
    [{ DEFAULT_QUOTAS: "{\"nope\": 1}" }, /nope/],
    [{ DEFAULT_QUOTAS: "not json" }, /DEFAULT_QUOTAS/],
    [{ API_REQUESTS_PERIOD: "fortnight" }, /API_REQUESTS_PERIOD/],
    [{ LOG_LEVEL: "loud" }, /LOG_LEVEL/],
    [{ DATABASE_URL: "mysql://localhost/db" }, /DATABASE_URL/],
    [{ DATABASE_URL: "postgres://localhost/db", DATABASE_POOL_SIZE: "0" }, /DATABASE_POOL_SIZE/],
    [{ WEBHOOK_RETRY_SCHEDULE: "300,x" }, /^WEBHOOK_RETRY_SCHEDULE must be comma-separated non-negative seconds, got "300,x"$/],
    [{ WEBHOOK_LOCAL_ADDRESS: "eth0" }, /WEBHOOK_LOCAL_ADDRESS/],
    [{ WEBHOOK_LEASE_MS: "10" }, /WEBHOOK_LEASE_MS/],
    [{ METRICS_TOKEN: "fifteen-chars-x" }, /^METRICS_TOKEN must be at least 16 characters long$/]
  ])("refuses %o with a clear message", (env, message) => {
    expect(problem(env)).toMatch(message)
  })

  it("names every variable at fault at once", () => {
    const p = problem({ PORT: "http", LOG_LEVEL: "loud", DEFAULT_QUOTAS: "[]" })
    expect(p).toMatch(/PORT/)
    expect(p).toMatch(/LOG_LEVEL/)
    expect(p).toMatch(/DEFAULT_QUOTAS/)
  })

  it("names each variable at fault once, the platform's keys beside the server's settings", () => {
    const p = problem({ PORT: "abc", JWT_SECRET: "short", ADMIN_API_SECRET: "short", ENCRYPTION_KEY: "abc", WEBHOOK_RETRY_SCHEDULE: "x" })
    for (const name of ["PORT", "JWT_SECRET", "ADMIN_API_SECRET", "ENCRYPTION_KEY", "WEBHOOK_RETRY_SCHEDULE"]) {
      expect(p?.split(new RegExp(`\\b${name}\\b`)).length, `${name} in: ${p}`).toBe(2)
    }
  })
})
