import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { nowMillis } from "../Clock.js"
import { TooManyRequests } from "../Domain/Errors.js"
import { Settings } from "../Settings.js"

/**
 * The rate of public consent writes, per public key and per client address: each allows `n`
 * writes a minute, spread or at once (a bucket of `n` that refills over a minute, kept as the
 * time it will next be full: the generic cell rate algorithm). Counters live in memory: each
 * server process counts on its own, so behind a balancer the allowance multiplies by the
 * number of processes.
 */

const WINDOW_MS = 60_000

/** Past this many keys, the full ones (which hold nothing) are swept. */
const SWEEP_AT = 100_000

export interface Limit {
  /** What is counted: `key:<organization>`, `address:<ip>`. */
  readonly key: string
  /** Writes a minute. */
  readonly perMinute: number
}

export interface PublicRateLimitService {
  /** Counts one write against every limit, or none and fails when any is spent. */
  readonly take: (limits: ReadonlyArray<Limit>) => Effect.Effect<void, TooManyRequests>
}

export class PublicRateLimit extends Context.Tag("@cmp/core/PublicRateLimit")<PublicRateLimit, PublicRateLimitService>() {
  static readonly make = Effect.sync((): PublicRateLimitService => {
    /** When each bucket would be full again: `now` or earlier means full. */
    const fullAt = new Map<string, number>()
    const sweep = (now: number) => {
      for (const [k, at] of fullAt) if (at <= now) fullAt.delete(k)
      // Every key busy at once: forgetting them all costs an allowance, never a refused write.
      if (fullAt.size >= SWEEP_AT) fullAt.clear()
    }
    return {
      take: (limits) =>
        Effect.flatMap(nowMillis, (now) => {
          let wait = 0
          const next: Array<[string, number]> = []
          for (const { key, perMinute } of limits) {
            if (!(perMinute > 0)) {
              wait = Math.max(wait, WINDOW_MS)
              continue
            }
            const interval = WINDOW_MS / perMinute
            const start = Math.max(fullAt.get(key) ?? now, now)
            // The bucket holds `perMinute` writes: it is empty when full again a minute from now.
            const over = start + interval - now - WINDOW_MS
            if (over > 0) wait = Math.max(wait, over)
            else next.push([key, start + interval])
          }
          if (wait > 0) {
            return Effect.fail(new TooManyRequests({
              message: "Too many consent writes: slow down",
              retryAfterSeconds: Math.max(1, Math.ceil(wait / 1000))
            }))
          }
          if (fullAt.size >= SWEEP_AT) sweep(now)
          for (const [key, at] of next) fullAt.set(key, at)
          return Effect.void
        })
    }
  })

  static readonly layer: Layer.Layer<PublicRateLimit> = Layer.effect(PublicRateLimit, PublicRateLimit.make)
}

/** The limits of one public write: its organization's key, and the address it came from when known. */
export const publicWriteLimits = (organizationId: string, address: string | undefined) =>
  Effect.map(Settings, ({ publicRateLimit }): ReadonlyArray<Limit> => [
    { key: `key:${organizationId}`, perMinute: publicRateLimit.perKey },
    ...(address === undefined ? [] : [{ key: `address:${address}`, perMinute: publicRateLimit.perAddress }])
  ])
