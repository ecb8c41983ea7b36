import { describe, expect, it } from "vitest"
import { periodOf } from "../src/Accounts/ApiUsage.js"

/** The counting periods of the `api_requests` quota; counting itself needs a store (the engine suites of test-support). */

describe("periodOf", () => {
  const at = (s: string) => Date.parse(s)
  const month = { _tag: "CalendarMonth" } as const

  it("calendar months: the last millisecond of January and the first of February", () => {
    expect(periodOf(month, at("2026-01-31T23:59:59.999Z"))).toEqual({
      key: "2026-01",
      endsAt: at("2026-02-01T00:00:00.000Z")
    })
    expect(periodOf(month, at("2026-02-01T00:00:00.000Z"))).toEqual({
      key: "2026-02",
      endsAt: at("2026-03-01T00:00:00.000Z")
    })
  })

  it("calendar months: December rolls into the next year; leap February", () => {
    expect(periodOf(month, at("2026-12-31T23:59:59.999Z"))).toEqual({
      key: "2026-12",
      endsAt: at("2027-01-01T00:00:00.000Z")
    })
    expect(periodOf(month, at("2028-02-29T12:00:00.000Z"))).toEqual({
      key: "2028-02",
      endsAt: at("2028-03-01T00:00:00.000Z")
    })
  })

  it("calendar months are UTC, whatever the offset written", () => {
    expect(periodOf(month, at("2026-03-01T00:30:00+01:00")).key).toBe("2026-02")
  })

  it("fixed periods", () => {
    const minute = { _tag: "Fixed", seconds: 60 } as const
    expect(periodOf(minute, 0)).toEqual({ key: "60s:0", endsAt: 60_000 })
    expect(periodOf(minute, 59_999)).toEqual({ key: "60s:0", endsAt: 60_000 })
    expect(periodOf(minute, 60_000)).toEqual({ key: "60s:1", endsAt: 120_000 })
    const day = { _tag: "Fixed", seconds: 86_400 } as const
    expect(periodOf(day, at("2026-01-02T05:00:00.000Z"))).toEqual({
      key: `86400s:${Math.floor(at("2026-01-02T00:00:00.000Z") / 86_400_000)}`,
      endsAt: at("2026-01-03T00:00:00.000Z")
    })
  })
})

