import { describe, expect, it } from "vitest"
import { buildSdkConfig, completeTemplateApp, deepMerge, templateAppErrors } from "../src/Notices/Rules.js"

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

  it("completeTemplateApp fills the lists left out, keeps what is given and invents no object", () => {
    expect(completeTemplateApp(undefined)).toEqual({ essentialPurposes: [], vendors: { include: [] } })
    expect(completeTemplateApp({ essentialPurposes: ["c1"], vendors: { iab: { all: true, stacks: {} } } })).toEqual({
      essentialPurposes: ["c1"],
      vendors: { include: [], iab: { all: true, include: [], exclude: [], restrictions: [], stacks: { ids: [] } } }
    })
    const r = { id: "r", purposeId: ["2"], restrictionType: "allow" as const, vendors: { restrictionType: "list" as const, ids: [3] } }
    expect(completeTemplateApp({ vendors: { iab: { restrictions: [r] } } }).vendors?.iab?.restrictions).toEqual([
      { ...r, vendors: { restrictionType: "list", ids: [3], purposeId: [] } }
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
