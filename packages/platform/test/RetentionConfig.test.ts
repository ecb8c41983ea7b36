import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { describe, expect, it } from "vitest"
import { PlatformConfig } from "../src/index.js"

const read = (env: Record<string, string>) =>
  Effect.runSync(Effect.either(PlatformConfig.platform).pipe(
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))
  ))

const retentionOf = (env: Record<string, string>) => {
  const r = read(env)
  if (Either.isLeft(r)) throw new Error(PlatformConfig.describe(r.left))
  return r.right.retention
}

describe("RETENTION_DELIVERED_DAYS, RETENTION_AUDIT_DAYS and RETENTION_INTERVAL_MS", () => {
  it("default to 30 days, 400 days and an hour, the first run a minute after start", () => {
    expect(retentionOf({})).toEqual({ deliveredDays: 30, auditDays: 400, everyMs: 3_600_000, firstAfterMs: 60_000 })
  })

  it("0 or off keeps delivered messages forever; a shorter interval starts sooner", () => {
    expect(retentionOf({ RETENTION_DELIVERED_DAYS: "0" })).toMatchObject({ deliveredDays: null })
    expect(retentionOf({ RETENTION_DELIVERED_DAYS: "OFF" })).toMatchObject({ deliveredDays: null })
    expect(retentionOf({ RETENTION_DELIVERED_DAYS: "7", RETENTION_INTERVAL_MS: "500" })).toEqual({ deliveredDays: 7, auditDays: 400, everyMs: 500, firstAfterMs: 500 })
    expect(retentionOf({ RETENTION_AUDIT_DAYS: "off" })).toMatchObject({ auditDays: null, deliveredDays: 30 })
    expect(retentionOf({ RETENTION_AUDIT_DAYS: "0" })).toMatchObject({ auditDays: null })
    expect(retentionOf({ RETENTION_AUDIT_DAYS: "730" })).toMatchObject({ auditDays: 730 })
  })

  it("anything else stops the start, naming the variable", () => {
    for (const [name, value] of [["RETENTION_DELIVERED_DAYS", "-1"], ["RETENTION_DELIVERED_DAYS", "1.5"], ["RETENTION_DELIVERED_DAYS", "never"], ["RETENTION_AUDIT_DAYS", "-3"], ["RETENTION_AUDIT_DAYS", "a year"], ["RETENTION_INTERVAL_MS", "10"], ["RETENTION_INTERVAL_MS", "hourly"]]) {
      const bad = read({ [name]: value })
      expect(Either.isLeft(bad) && PlatformConfig.describe(bad.left), value).toMatch(new RegExp(name))
    }
  })
})
