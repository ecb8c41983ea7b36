import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"

/** Time always comes from Effect's Clock, so tests move it with a test clock. */
export const nowMillis = Clock.currentTimeMillis

export const nowIso = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

export const nowSeconds = Effect.map(Clock.currentTimeMillis, (ms) => Math.floor(ms / 1000))
