import * as Effect from "effect/Effect"

/**
 * Time always comes from Effect's Clock, so tests move it with a test clock. Read in one step of
 * the runtime (`Clock.currentTimeMillis` takes two, and a map over it two more): a consent event
 * reads the time some five times.
 */
const fromMillis = <A>(f: (ms: number) => A): Effect.Effect<A> =>
  Effect.clockWith((clock) => Effect.succeed(f(clock.unsafeCurrentTimeMillis())))

export const nowMillis: Effect.Effect<number> = fromMillis((ms) => ms)

export const nowIso: Effect.Effect<string> = fromMillis((ms) => new Date(ms).toISOString())

export const nowSeconds: Effect.Effect<number> = fromMillis((ms) => Math.floor(ms / 1000))
