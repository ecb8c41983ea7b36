import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { limitingKey } from "../Operations/ClientAddress.js"
import { nowMillis } from "../Engine/Clock.js"
import { TooManyRequests } from "../Domain/Errors.js"
import type { EndUserPrincipal } from "../Engine/Principal.js"
import { Settings } from "../Engine/Settings.js"

/**
 * The rate of end users' consent writes (a public key's, a consent token's), per organization
 * and per client address: each allows `n` writes a minute, spread or at once (a bucket of `n`
 * that refills over a minute, kept as the time it will next be full: the generic cell rate
 * algorithm). Counters live in memory: each server process counts on its own, so behind a
 * balancer the allowance multiplies by the number of processes.
 */

const WINDOW_MS = 60_000

/**
 * Keys held at most. Past it, the full buckets (which hold nothing) are swept; if that is not
 * enough, the buckets full soonest are forgotten, down to nine tenths. Forgetting a bucket gives
 * back only what it was still to refill, the least of any bucket's, and a busy client's bucket is
 * full last: made-up addresses cannot empty the table, nor free the bucket of whoever sends them.
 */
const MAX_KEYS = 100_000

export interface Limit {
  /** What is counted: `key:<organization>`, `token:<organization>`, `address:<ip or /64>`. */
  readonly key: string
  /** Writes a minute. */
  readonly perMinute: number
}

export interface PublicRateLimitService {
  /** Counts one write against every limit, or none and fails when any is spent. */
  readonly take: (limits: ReadonlyArray<Limit>) => Effect.Effect<void, TooManyRequests>
}

export class PublicRateLimit extends Context.Tag("@cmp/core/PublicRateLimit")<PublicRateLimit, PublicRateLimitService>() {
  /** `maxKeys` is lowered only in tests. */
  static readonly make = (maxKeys = MAX_KEYS) => Effect.sync((): PublicRateLimitService => {
    /** When each bucket would be full again: `now` or earlier means full. */
    const fullAt = new Map<string, number>()
    const makeRoom = (now: number) => {
      for (const [k, at] of fullAt) if (at <= now) fullAt.delete(k)
      // Down to nine tenths even when the sweep freed a few: the next sweep is as many keys away.
      let over = fullAt.size - Math.floor(maxKeys * 0.9)
      if (over <= 0) return
      const times = Float64Array.from(fullAt.values()).sort()
      const last = times[over - 1]!
      for (const [k, at] of fullAt) {
        if (over === 0) break
        if (at <= last) {
          fullAt.delete(k)
          over--
        }
      }
    }
    return {
      take: (limits) =>
        Effect.flatMap(nowMillis, (now) => {
          // Before the buckets are read, so a forgotten one is read as full.
          if (fullAt.size >= maxKeys) makeRoom(now)
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
          for (const [key, at] of next) fullAt.set(key, at)
          return Effect.void
        })
    }
  })

  static readonly layer: Layer.Layer<PublicRateLimit> = Layer.effect(PublicRateLimit, PublicRateLimit.make())
}

/**
 * The limits of one end user's write: its organization's allowance for the credential's kind (a
 * public key's writes and consent tokens' have one each), and the address it came from when
 * known, whatever credential it holds (an IPv6 address counted by its /64).
 */
export const endUserWriteLimits = (principal: EndUserPrincipal, address: string | undefined) =>
  Effect.map(Settings, ({ publicRateLimit }): ReadonlyArray<Limit> => [
    { key: `${principal._tag === "PublicKey" ? "key" : "token"}:${principal.organizationId}`, perMinute: publicRateLimit.perKey },
    ...(address === undefined ? [] : [{ key: `address:${limitingKey(address)}`, perMinute: publicRateLimit.perAddress }])
  ])
