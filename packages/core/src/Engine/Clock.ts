import * as Effect from "effect/Effect"

/**
 * Time always comes from Effect's Clock, so tests move it with a test clock. Read in one step of
 * the runtime (`Clock.currentTimeMillis` takes two, and a map over it two more): a consent event
 * reads the time some five times.
 */
export const nowMillis: Effect.Effect<number> = Effect.clockWith((clock) => Effect.succeed(clock.unsafeCurrentTimeMillis()))

export const nowIso: Effect.Effect<string> = Effect.clockWith((clock) => Effect.succeed(new Date(clock.unsafeCurrentTimeMillis()).toISOString()))

export const nowSeconds: Effect.Effect<number> = Effect.clockWith((clock) => Effect.succeed(Math.floor(clock.unsafeCurrentTimeMillis() / 1000)))
