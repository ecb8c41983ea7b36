import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { ConfigError, fromEnv } from "../src/Config.js"

describe("configuration from the environment", () => {
  it("uses the documented defaults", () => {
    const o = fromEnv({})
    expect(o.port).toBe(3000)
    expect(o.host).toBe("127.0.0.1")
    expect(o.sqlitePath).toBe(path.resolve(process.cwd(), "data/consent.db"))
    expect(o.allowHttp).toBe(false)
    expect(o.trustProxy).toBe(false)
    expect(o.tls).toBeUndefined()
    expect(o.settings?.apiRequestsPeriod).toEqual({ _tag: "CalendarMonth" })
    expect(o.settings?.defaultPremiumFeatures).toEqual([])
  })

  it("reads every variable", () => {
    const o = fromEnv({
      PORT: "8080",
      HOST: "0.0.0.0",
      SQLITE_PATH: "/tmp/x.db",
      ALLOW_HTTP: "true",
      TRUST_PROXY: "1",
      ADMIN_API_KEY: "admin",
      ADMIN_API_SECRET: "a-long-enough-secret",
      JWT_SECRET: "x".repeat(40),
      DEFAULT_PREMIUM_FEATURES: "webhooks, consents_api",
      DEFAULT_QUOTAS: "{\"secrets\": 3}",
      API_REQUESTS_PERIOD: "day",
      TLS_CERT: "/c.pem",
      TLS_KEY: "/k.pem"
    })
    expect(o.port).toBe(8080)
    expect(o.host).toBe("0.0.0.0")
    expect(o.sqlitePath).toBe("/tmp/x.db")
    expect(fromEnv({ INIT_CWD: "/srv/app", SQLITE_PATH: "db/c.db" }).sqlitePath).toBe("/srv/app/db/c.db")
    expect(o.allowHttp).toBe(true)
    expect(o.trustProxy).toBe(true)
    expect(o.admin).toEqual({ key: "admin", secret: "a-long-enough-secret" })
    expect(o.jwtSecret).toBe("x".repeat(40))
    expect(o.settings?.defaultPremiumFeatures).toEqual(["webhooks", "consents_api"])
    expect(o.settings?.defaultQuotas?.secrets).toBe(3)
    expect(o.settings?.defaultQuotas?.api_requests).toBe(1_000_000)
    expect(o.settings?.apiRequestsPeriod).toEqual({ _tag: "Fixed", seconds: 86_400 })
    expect(o.tls).toEqual({ cert: "/c.pem", key: "/k.pem" })
  })

  it("DATABASE_URL selects PostgreSQL; otherwise SQLite", () => {
    expect(fromEnv({}).database).toBe("sqlite")
    expect(fromEnv({ DATABASE_URL: "postgres://u@localhost:5432/db" }).database).toBe("postgres")
    expect(fromEnv({ DATABASE_URL: "postgresql://u@localhost/db", DATABASE_POOL_SIZE: "3" }).database).toBe("postgres")
  })

  it.each([
    [{ PORT: "http" }, /PORT/],
    [{ ALLOW_HTTP: "maybe" }, /ALLOW_HTTP/],
    [{ ADMIN_API_KEY: "admin" }, /ADMIN_API_KEY/],
    [{ ADMIN_API_KEY: "admin", ADMIN_API_SECRET: "short" }, /ADMIN_API_SECRET/],
    [{ TLS_CERT: "/c.pem" }, /TLS_CERT/],
    [{ DEFAULT_PREMIUM_FEATURES: "flying" }, /flying/],
    [{ DEFAULT_QUOTAS: "{\"nope\": 1}" }, /nope/],
    [{ DEFAULT_QUOTAS: "not json" }, /DEFAULT_QUOTAS/],
    [{ API_REQUESTS_PERIOD: "fortnight" }, /API_REQUESTS_PERIOD/],
    [{ LOG_LEVEL: "loud" }, /LOG_LEVEL/],
    [{ DATABASE_URL: "mysql://localhost/db" }, /DATABASE_URL/],
    [{ DATABASE_URL: "postgres://localhost/db", DATABASE_POOL_SIZE: "0" }, /DATABASE_POOL_SIZE/]
  ])("refuses %o with a clear message", (env, message) => {
    expect(() => fromEnv(env)).toThrow(ConfigError)
    expect(() => fromEnv(env)).toThrow(message)
  })
})
