import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { limitingKey } from "../Operations/ClientAddress.js"
import { nowMillis } from "../Engine/Clock.js"
import { TooManyRequests } from "../Domain/Errors.js"

/**
 * Slows repeated failed session attempts, per key (or email) and per client address. After
 * `freeFailures` failures an attempt must wait: 1 s, then doubling per further failure, at most
 * `maxDelaySeconds`; failures are forgotten `forgetAfterSeconds` after the last one, and a
 * success clears the key of the credential that succeeded (never an address's: a guesser would
 * otherwise reset its address's count with a login of its own between guesses). So guessing is
 * throttled, but the real owner is never locked out for longer than the cap. Counters live in
 * memory: each server throttles on its own.
 */
export interface ThrottleOptions {
  readonly freeFailures: number
  readonly maxDelaySeconds: number
  readonly forgetAfterSeconds: number
}

/** Keys held at most. */
const MAX_KEYS = 100_000

interface Entry {
  failures: number
  last: number
  blockedUntil: number
}

export class LoginThrottle extends Context.Tag("@cmp/core/LoginThrottle")<
  LoginThrottle,
  {
    /** Fails with TooManyRequests while any of the keys is blocked. */
    readonly check: (keys: ReadonlyArray<string>) => Effect.Effect<void, TooManyRequests>
    readonly failed: (keys: ReadonlyArray<string>) => Effect.Effect<void>
    readonly succeeded: (keys: ReadonlyArray<string>) => Effect.Effect<void>
  }
>() {
  static readonly defaults: ThrottleOptions = { freeFailures: 5, maxDelaySeconds: 900, forgetAfterSeconds: 3600 }

  static readonly make = (options: ThrottleOptions = LoginThrottle.defaults) =>
    Effect.sync(() => {
      const entries = new Map<string, Entry>()
      const live = (key: string, now: number) => {
        const e = entries.get(key)
        if (e && now - e.last > options.forgetAfterSeconds * 1000) {
          entries.delete(key)
          return undefined
        }
        return e
      }
      /**
       * Bounds the memory made-up keys can take without ever clearing a blocked key to make room
       * (clearing everything freed the key a guesser was blocked on): the forgotten entries go
       * first, then those blocked least long, down to nine tenths.
       */
      const makeRoom = (now: number) => {
        for (const k of entries.keys()) live(k, now)
        let over = entries.size - Math.floor(MAX_KEYS * 0.9)
        if (over <= 0) return
        const last = Float64Array.from(entries.values(), (e) => e.blockedUntil).sort()[over - 1]!
        for (const [k, e] of entries) {
          if (over === 0) break
          if (e.blockedUntil <= last) {
            entries.delete(k)
            over--
          }
        }
      }
      return LoginThrottle.of({
        check: (keys) =>
          Effect.flatMap(nowMillis, (now) => {
            let until = 0
            for (const k of keys) until = Math.max(until, live(k, now)?.blockedUntil ?? 0)
            return until > now
              ? Effect.fail(
                new TooManyRequests({
                  message: "Too many failed attempts: wait before trying again",
                  retryAfterSeconds: Math.ceil((until - now) / 1000)
                })
              )
              : Effect.void
          }),
        failed: (keys) =>
          Effect.map(nowMillis, (now) => {
            if (entries.size >= MAX_KEYS) makeRoom(now)
            for (const k of keys) {
              const e = live(k, now) ?? { failures: 0, last: now, blockedUntil: 0 }
              e.failures++
              e.last = now
              const over = e.failures - options.freeFailures
              if (over >= 0) e.blockedUntil = now + Math.min(2 ** over, options.maxDelaySeconds) * 1000
              entries.set(k, e)
            }
          }),
        succeeded: (keys) => Effect.sync(() => keys.forEach((k) => entries.delete(k)))
      })
    })

  static readonly layer = (options?: ThrottleOptions) => Layer.effect(LoginThrottle, LoginThrottle.make(options))
}

const ADDRESS_PREFIX = "addr:"

/**
 * The throttle key of a client address on one credential endpoint (an IPv6 address counted by
 * its /64, like every limit by address). Each endpoint counts its own: failed invitation tokens
 * do not lock the same office out of its logins.
 */
export const addressKeys = (endpoint: "session" | "invitation" | "integration", clientAddress: string | undefined): ReadonlyArray<string> =>
  clientAddress ? [`${ADDRESS_PREFIX}${endpoint}:${limitingKey(clientAddress)}`] : []

/**
 * Runs one credential check under the throttle: refused at once while any key is blocked (so a
 * blocked guess costs no hashing); a failure counts against every key, a success clears the
 * credential's keys only: an address's count runs down with time alone.
 */
export const throttled = <A, E, R>(keys: ReadonlyArray<string>, attempt: Effect.Effect<A, E, R>) =>
  Effect.flatMap(LoginThrottle, (throttle) =>
    Effect.zipRight(
      throttle.check(keys),
      attempt.pipe(Effect.tapBoth({
        onFailure: () => throttle.failed(keys),
        onSuccess: () => throttle.succeeded(keys.filter((k) => !k.startsWith(ADDRESS_PREFIX)))
      }))
    ))
