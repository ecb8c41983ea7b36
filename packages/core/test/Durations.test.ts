import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { addDuration, addMonths, type Duration, thresholdOf } from "../src/Consents/Durations.js"
import { consentStateOf, type PolicyTerms } from "../src/Consents/PolicyState.js"

const ms = (iso: string) => Date.parse(iso)
const iso = (t: number) => new Date(t).toISOString()

// Years 1..9999, so the forms of timestamps the service writes cover them.
const instant = fc.integer({ min: ms("0001-01-01T00:00:00.000Z"), max: ms("9998-12-31T23:59:59.999Z") })
// Instants near month ends, where clamping happens.
const monthEnd = fc.tuple(fc.integer({ min: 1900, max: 2200 }), fc.integer({ min: 0, max: 11 }), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 86_399_999 }))
  .map(([y, m, back, t]) => Date.UTC(y, m + 1, 0 - back) + t)
const duration: fc.Arbitrary<Duration> = fc.record({
  amount: fc.integer({ min: 1, max: 1200 }),
  unit: fc.constantFrom("months" as const, "days" as const, "seconds" as const)
})

describe("adding months", () => {
  it("keeps the time of day and clamps to the month's last day", () => {
    expect(iso(addMonths(ms("2025-01-31T10:11:12.345Z"), 1))).toBe("2025-02-28T10:11:12.345Z")
    expect(iso(addMonths(ms("2024-01-31T10:11:12.345Z"), 1))).toBe("2024-02-29T10:11:12.345Z")
    expect(iso(addMonths(ms("2024-02-29T00:00:00.000Z"), 12))).toBe("2025-02-28T00:00:00.000Z")
    expect(iso(addMonths(ms("2025-03-31T23:59:59.999Z"), 1))).toBe("2025-04-30T23:59:59.999Z")
    expect(iso(addMonths(ms("2025-11-15T08:00:00.000Z"), 13))).toBe("2026-12-15T08:00:00.000Z")
    expect(iso(addMonths(ms("0050-03-31T08:00:00.000Z"), -1))).toBe("0050-02-28T08:00:00.000Z")
  })

  it("a day is 86,400 s and a second 1,000 ms, whatever the calendar", () => {
    expect(iso(addDuration(ms("2025-03-29T12:00:00.000Z"), { amount: 2, unit: "days" }))).toBe("2025-03-31T12:00:00.000Z")
    expect(iso(addDuration(ms("2025-03-29T12:00:00.000Z"), { amount: 90, unit: "seconds" }))).toBe("2025-03-29T12:01:30.000Z")
  })

  it("is monotone: a later start never ends on an earlier day (nor earlier at all, in days or seconds)", () => {
    const dayOf = (t: number) => Math.floor(t / 86_400_000)
    fc.assert(fc.property(fc.oneof(instant, monthEnd), fc.integer({ min: 0, max: 40 * 86_400_000 }), duration, (t, dt, d) => {
      // Months keep the time of day and clamp to a shorter month's last day: 30 January 23:00 and
      // 31 January 01:00 both end on 28 February, the later start at the earlier hour.
      if (d.unit === "months") expect(dayOf(addDuration(t + dt, d))).toBeGreaterThanOrEqual(dayOf(addDuration(t, d)))
      else expect(addDuration(t + dt, d)).toBeGreaterThanOrEqual(addDuration(t, d))
    }))
  })

  it("a month from 30 January 23:00 and from 31 January 01:00 ends on the last day of February, each at its own hour", () => {
    expect(iso(addMonths(ms("2025-01-30T23:00:00.000Z"), 1))).toBe("2025-02-28T23:00:00.000Z")
    expect(iso(addMonths(ms("2025-01-31T01:00:00.000Z"), 1))).toBe("2025-02-28T01:00:00.000Z")
  })

  it("lands on the start's day of month, or on the last day of a shorter month, at the same time of day", () => {
    fc.assert(fc.property(fc.oneof(instant, monthEnd), fc.integer({ min: -1200, max: 1200 }), (t, n) => {
      const s = new Date(t)
      const e = new Date(addMonths(t, n))
      const months = (e.getUTCFullYear() - s.getUTCFullYear()) * 12 + e.getUTCMonth() - s.getUTCMonth()
      expect(months).toBe(n)
      expect(e.getUTCHours() * 3_600_000 + e.getUTCMinutes() * 60_000 + e.getUTCSeconds() * 1000 + e.getUTCMilliseconds())
        .toBe(s.getUTCHours() * 3_600_000 + s.getUTCMinutes() * 60_000 + s.getUTCSeconds() * 1000 + s.getUTCMilliseconds())
      const last = new Date(Date.UTC(2000, 0, 1))
      last.setUTCFullYear(e.getUTCFullYear(), e.getUTCMonth() + 1, 0)
      expect(e.getUTCDate()).toBe(Math.min(s.getUTCDate(), last.getUTCDate()))
    }))
  })
})

describe("the threshold of expiry", () => {
  it("is exact: the latest start whose period has ended at now", () => {
    fc.assert(fc.property(fc.oneof(instant, monthEnd), duration, (now, d) => {
      const threshold = thresholdOf(now, d)
      expect(addDuration(threshold, d)).toBeLessThanOrEqual(now)
      expect(addDuration(threshold + 1, d)).toBeGreaterThan(now)
    }))
  })

  it("at month ends", () => {
    const months = (amount: number): Duration => ({ amount, unit: "months" })
    // 29, 30 and 31 January all end on 28 February at the same time.
    expect(iso(thresholdOf(ms("2025-02-28T10:00:00.000Z"), months(1)))).toBe("2025-01-31T10:00:00.000Z")
    // Every start of February ends by 31 March (on the 28th at the latest).
    expect(iso(thresholdOf(ms("2025-03-31T10:00:00.000Z"), months(1)))).toBe("2025-02-28T23:59:59.999Z")
    expect(iso(thresholdOf(ms("2025-03-30T10:00:00.000Z"), months(1)))).toBe("2025-02-28T23:59:59.999Z")
    expect(iso(thresholdOf(ms("2025-03-15T10:00:00.000Z"), months(13)))).toBe("2024-02-15T10:00:00.000Z")
  })
})

describe("a user's consent state", () => {
  const policy: PolicyTerms = {
    consent_duration: 13,
    consent_duration_unit: "months",
    denied_consent_duration: 6,
    denied_consent_duration_unit: "months",
    essential_purpose_ids: ["essential"]
  }
  const givenState = { purposes: [{ id: "analytics", enabled: true }], vendors: {}, updated_at: "2025-01-31T10:00:00.000Z" }
  const refusedState = {
    purposes: [{ id: "essential", enabled: true }, { id: "analytics", enabled: false }],
    vendors: { enabled_li: ["v1"] },
    updated_at: "2025-01-31T10:00:00.000Z"
  }
  const now = ms("2025-05-01T00:00:00.000Z")

  it("without a policy: none, given or refused, and no expiry", () => {
    expect(consentStateOf(undefined, { state: undefined }, now)).toStrictEqual({ consent_state: "none" })
    expect(consentStateOf(undefined, { state: givenState }, now)).toStrictEqual({ consent_state: "given" })
    // Without a policy no purpose is essential.
    expect(consentStateOf(undefined, { state: refusedState }, now)).toStrictEqual({ consent_state: "given" })
    expect(consentStateOf(undefined, { state: { ...refusedState, purposes: [{ id: "analytics", enabled: false }] } }, now))
      .toStrictEqual({ consent_state: "refused" })
    expect(consentStateOf(undefined, { state: { purposes: [], vendors: { enabled: ["v"] }, updated_at: givenState.updated_at } }, now))
      .toStrictEqual({ consent_state: "given" })
  })

  it("a refusal lasts the denied duration, a consent the consent duration, from the last merged event", () => {
    expect(consentStateOf(policy, { state: givenState }, now)).toStrictEqual({ consent_state: "given", expires_at: "2026-02-28T10:00:00.000Z" })
    expect(consentStateOf(policy, { state: refusedState }, now)).toStrictEqual({ consent_state: "refused", expires_at: "2025-07-31T10:00:00.000Z" })
    expect(consentStateOf(policy, { state: refusedState }, ms("2025-07-31T10:00:00.000Z")))
      .toStrictEqual({ consent_state: "expired", expires_at: "2025-07-31T10:00:00.000Z" })
    expect(consentStateOf(policy, { state: refusedState }, ms("2025-07-31T09:59:59.999Z")).consent_state).toBe("refused")
    const noDenied = { consent_duration: 30, consent_duration_unit: "days" as const }
    expect(consentStateOf(noDenied, { state: refusedState }, now)).toStrictEqual({ consent_state: "expired", expires_at: "2025-03-02T10:00:00.000Z" })
    expect(consentStateOf(policy, { state: undefined }, now)).toStrictEqual({ consent_state: "none" })
  })

  it("recollect: before the cut-off, or when the notice text has a newer approved content; expired comes first", () => {
    const cutoff = { ...policy, recollect_before: "2025-02-01T00:00:00.000Z" }
    expect(consentStateOf(cutoff, { state: givenState }, now).consent_state).toBe("recollect")
    expect(consentStateOf(cutoff, { state: givenState }, ms("2026-03-01T00:00:00.000Z")).consent_state).toBe("expired")
    const wording = { ...policy, notice_text_id: "t1", recollect_on_new_content: true }
    expect(consentStateOf(wording, { state: givenState, lastContentVersion: 2 }, now, 2).consent_state).toBe("given")
    expect(consentStateOf(wording, { state: givenState, lastContentVersion: 2 }, now, 3).consent_state).toBe("recollect")
    expect(consentStateOf(wording, { state: givenState }, now, 1).consent_state).toBe("recollect")
    expect(consentStateOf(wording, { state: givenState }, now, undefined).consent_state).toBe("given")
    expect(consentStateOf({ ...wording, recollect_on_new_content: false }, { state: givenState }, now, 3).consent_state).toBe("given")
  })

  it("expired exactly when the last merged event is at or before the threshold", () => {
    fc.assert(fc.property(instant, fc.oneof(instant, monthEnd), duration, (last, now, d) => {
      const terms: PolicyTerms = { consent_duration: d.amount, consent_duration_unit: d.unit }
      const state = { purposes: [{ id: "p", enabled: true }], vendors: {}, updated_at: iso(last) }
      expect(consentStateOf(terms, { state }, now).consent_state === "expired").toBe(last <= thresholdOf(now, d))
    }))
  })
})
