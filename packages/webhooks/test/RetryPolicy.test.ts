import { assert, describe, it } from "@effect/vitest"
import { decide, DEFAULT_RETRY_SCHEDULE, parseRetrySchedule, unavailable } from "../src/RetryPolicy.js"

describe("RetryPolicy", () => {
  it("parses WEBHOOK_RETRY_SCHEDULE", () => {
    assert.deepStrictEqual(parseRetrySchedule(undefined), [300, 300, 300, 300, 300])
    assert.deepStrictEqual(parseRetrySchedule("  "), DEFAULT_RETRY_SCHEDULE)
    assert.deepStrictEqual(parseRetrySchedule("5, 300,3600"), [5, 300, 3600])
    for (const bad of ["300,,300", "300,abc", "-1", "300;300"]) assert.throws(() => parseRetrySchedule(bad), /WEBHOOK_RETRY_SCHEDULE/)
  })

  it("decides the next state of a message", () => {
    const nowMs = Date.parse("2030-01-01T00:00:00Z")
    const at = (s: number) => new Date(nowMs + s * 1000).toISOString()
    const d = (status: number | null, previousAttempts: number, retryAfterSeconds?: number) =>
      decide({
        result: retryAfterSeconds === undefined ? { status } : { status, retryAfterSeconds },
        previousAttempts,
        retrySchedule: [60, 120],
        nowMs
      })
    assert.deepStrictEqual(d(201, 0), {
      outcome: { status: "delivered", attempts_count: 1, next_attempt_at: null, last_status_code: 201 },
      disable: false
    })
    assert.deepStrictEqual(d(null, 0).outcome, { status: "pending", attempts_count: 1, next_attempt_at: at(60), last_status_code: null })
    assert.deepStrictEqual(d(302, 1).outcome.next_attempt_at, at(120))
    assert.deepStrictEqual(d(500, 2).outcome, { status: "failed", attempts_count: 3, next_attempt_at: null, last_status_code: 500 })
    assert.deepStrictEqual(d(410, 0), {
      outcome: { status: "failed", attempts_count: 1, next_attempt_at: null, last_status_code: 410 },
      disable: true
    })
    assert.strictEqual(d(429, 0, 600).outcome.next_attempt_at, at(600))
    assert.strictEqual(d(503, 0, 10).outcome.next_attempt_at, at(60))
    assert.strictEqual(d(429, 0, 10 ** 9).outcome.next_attempt_at, at(86400))
    assert.strictEqual(d(500, 0, 600).outcome.next_attempt_at, at(60))
    // The last attempt stays the last even when the receiver asks to be called again later.
    assert.strictEqual(d(429, 2, 600).outcome.status, "failed")
    assert.deepStrictEqual(unavailable(3), { status: "failed", attempts_count: 4, next_attempt_at: null, last_status_code: null })
  })
})
