import * as Clock from "effect/Clock"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

/**
 * A clock tests move by hand, shared by the server they start: time-based rules (token expiry,
 * quota periods, retry schedules) are tested without sleeping. `sleep` still waits real time,
 * so the server's own timers behave.
 */
export class ManualClock implements Clock.Clock {
  readonly [Clock.ClockTypeId]: Clock.ClockTypeId = Clock.ClockTypeId
  constructor(public millis: number = Date.now()) {}
  advance(ms: number) {
    this.millis += ms
  }
  unsafeCurrentTimeMillis() {
    return this.millis
  }
  unsafeCurrentTimeNanos() {
    return BigInt(this.millis) * 1_000_000n
  }
  currentTimeMillis = Effect.sync(() => this.millis)
  currentTimeNanos = Effect.sync(() => BigInt(this.millis) * 1_000_000n)
  sleep = (duration: Duration.Duration) => Effect.sleep(duration).pipe(Effect.withClock(Clock.make()))
}
