import { describe, expect, it } from "vitest"
import { buildSdkConfig, deepMerge, templateAppErrors } from "../src/Notices/Rules.js"

describe("notice rules", () => {
  it("deepMerge merges objects, replaces arrays and scalars, ignores __proto__", () => {
    const merged = deepMerge({ a: { b: 1, c: [1, 2] }, d: 1 }, JSON.parse('{"a":{"c":[3]},"__proto__":{"x":1},"e":2}'))
    expect(merged).toEqual({ a: { b: 1, c: [3] }, d: 1, e: 2 })
    expect(({} as any).x).toBeUndefined()
  })

  it("templateAppErrors names each TCF rule", () => {
    const errors = templateAppErrors({
      essentialPurposes: [],
      vendors: {
        iab: {
          exclude: [1],
          restrictions: [
            { id: "r", purposeId: ["1", "2"], restrictionType: "req-li", vendors: { restrictionType: "list" } }
          ]
        }
      }
    })
    expect(Object.keys(errors).sort()).toEqual([
      "config.app.vendors.iab.exclude",
      "config.app.vendors.iab.restrictions.0.purposeId",
      "config.app.vendors.iab.restrictions.0.vendors.ids"
    ])
  })

  it("buildSdkConfig: custom_json last, GCM statuses", () => {
    const { config } = buildSdkConfig({
      organization_id: "o",
      platform: "web",
      config: { app: { a: 1 } },
      gcm_enabled: true,
      gcm_security_default_status: true,
      custom_json: { platform: "amp" }
    }, undefined)
    expect(config.platform).toBe("amp")
    expect(config.app).toEqual({ a: 1 })
    expect((config.integrations as any).google_consent_mode.default_status.security_storage).toBe("granted")
    expect((config.integrations as any).google_consent_mode.default_status.ad_storage).toBe("denied")
  })
})
