import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { describe, expect, it } from "vitest"
import { PlatformConfig } from "../src/index.js"

/** The platform's settings as read from a given environment. */
const read = (env: Record<string, string | undefined>) =>
  Effect.runSync(Effect.either(PlatformConfig.platform).pipe(
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined))))
  ))

const fromEnv = (env: Record<string, string | undefined>) => {
  const r = read(env)
  if (Either.isLeft(r)) throw new Error(PlatformConfig.describe(r.left))
  return r.right
}

describe("organization resources configuration", () => {
  it("defaults: immediate provisioner, no managed zone, default languages, 15-minute dashboard URLs", () => {
    const o = fromEnv({})
    expect(o.provisioner).toEqual({ kind: "immediate" })
    expect(o.urlSigningKey).toBeUndefined()
    expect(o.settings?.managedZone).toBeUndefined()
    expect(o.settings?.languages?.default).toBe("en")
    expect(o.settings?.languages?.available).toContain("fr")
    expect(o.settings?.dashboardUrlTtlSeconds).toBe(900)
  })

  it("reads MANAGED_DOMAIN_ZONE, DOMAIN_PROVISIONER, DOMAIN_CNAME_TARGET, URL_SIGNING_KEY and the languages", () => {
    const o = fromEnv({
      MANAGED_DOMAIN_ZONE: ".CMP-Managed.net.",
      DOMAIN_PROVISIONER: "dns",
      DOMAIN_CNAME_TARGET: "edge.cmp.example",
      URL_SIGNING_KEY: "k".repeat(32),
      LANGUAGES_AVAILABLE: "de,fr-CH",
      LANGUAGES_DEFAULT: "fr-CH",
      LANGUAGES_DEFAULT_COUNTRIES: "{\"de\":\"AT\"}",
      DASHBOARD_URL_TTL_SECONDS: "60"
    })
    expect(o.provisioner).toEqual({ kind: "dns", cnameTarget: "edge.cmp.example" })
    expect(o.urlSigningKey).toBe("k".repeat(32))
    expect(o.settings).toMatchObject({
      managedZone: "cmp-managed.net",
      languages: { available: ["de", "fr-CH"], default: "fr-CH", defaultCountries: { de: "AT" } },
      dashboardUrlTtlSeconds: 60
    })
  })

  it("refuses inconsistent values", () => {
    for (const env of [
      { DOMAIN_PROVISIONER: "route53" },
      { DOMAIN_PROVISIONER: "dns" },
      { URL_SIGNING_KEY: "short" },
      { LANGUAGES_AVAILABLE: "english" },
      { LANGUAGES_AVAILABLE: "de", LANGUAGES_DEFAULT: "en" },
      { LANGUAGES_DEFAULT_COUNTRIES: "[1]" },
      { DASHBOARD_URL_TTL_SECONDS: "0" }
    ]) expect(Either.isLeft(read(env)), JSON.stringify(env)).toBe(true)
  })
})
