import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { applyGpc } from "../src/Consents/Gpc.js"
import type { EventConsents } from "../src/Domain/Consent.js"

const ids = ["analytics", "ads", "sale", "essential"]
const consentsArb: fc.Arbitrary<EventConsents> = fc.record({
  purposes: fc.array(fc.record({ id: fc.constantFrom(...ids), enabled: fc.boolean() }), { maxLength: 5 }),
  vendors: fc.constant({ enabled: ["v1"] })
}, { requiredKeys: [] })
const refusedArb = fc.uniqueArray(fc.constantFrom(...ids), { maxLength: 3 })

describe("applyGpc", () => {
  it("without a signal, or a policy naming no purpose, the choices stay as sent and nothing conflicts", () => {
    fc.assert(fc.property(consentsArb, refusedArb, fc.boolean(), fc.boolean(), (consents, refused, signal, override) => {
      if (signal && refused.length > 0) return
      expect(applyGpc(consents, { signal, override, purposeIds: refused })).toStrictEqual({ consents, conflict: false })
    }))
  })

  it("with a signal, every purpose the policy names ends refused, added when absent, the others untouched", () => {
    fc.assert(fc.property(consentsArb, refusedArb.filter((r) => r.length > 0), (consents, refused) => {
      const r = applyGpc(consents, { signal: true, override: false, purposeIds: refused })
      expect(r.conflict).toBe(false)
      const out = r.consents.purposes ?? []
      for (const id of refused) {
        expect(out.some((p) => p.id === id)).toBe(true)
        expect(out.filter((p) => p.id === id).every((p) => !p.enabled)).toBe(true)
      }
      const others = (consents.purposes ?? []).filter((p) => !refused.includes(p.id))
      expect(out.filter((p) => !refused.includes(p.id))).toStrictEqual(others)
      expect(r.consents.vendors).toStrictEqual(consents.vendors)
    }))
  })

  it("an override keeps the choices as sent and marks the conflict", () => {
    const consents = { purposes: [{ id: "ads", enabled: true }] }
    expect(applyGpc(consents, { signal: true, override: true, purposeIds: ["ads"] })).toStrictEqual({ consents, conflict: true })
  })
})
