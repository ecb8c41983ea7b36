import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import { nowMillis } from "../Engine/Clock.js"
import { TooManyRequests } from "../Domain/Errors.js"
import { OrganizationLimits } from "../Engine/OrganizationLimits.js"
import { UsageStore } from "../Engine/Ports.js"
import { type QuotaPeriod, Settings } from "../Engine/Settings.js"

/** The period a moment falls in: a stable key and when it ends. */
export const periodOf = (period: QuotaPeriod, ms: number): { key: string; endsAt: number } => {
  if (period._tag === "Fixed") {
    const index = Math.floor(ms / (period.seconds * 1000))
    return { key: `${period.seconds}s:${index}`, endsAt: (index + 1) * period.seconds * 1000 }
  }
  const d = new Date(ms)
  const y = d.getUTCFullYear()
  const m = d.getUTCMonth()
  return { key: `${y}-${String(m + 1).padStart(2, "0")}`, endsAt: Date.UTC(y, m + 1, 1) }
}

interface Counter {
  period: string
  /** The period's total in the database when last read or flushed (all servers). */
  stored: number
  /** Requests counted here and not yet written. */
  pending: number
  limit: number
  refreshedAt: number
}

/** How stale a cached quota limit and shared total may get before they are read again. */
const REFRESH_MS = 5_000

/** A counter of the current period, read recently enough to count on without reading it again. */
const isFresh = (c: Counter | undefined, key: string, now: number): c is Counter =>
  c !== undefined && c.period === key && now - c.refreshedAt <= REFRESH_MS

/**
 * The `api_requests` quota. Requests are counted in memory and written in batches, so the
 * hot path adds no database write; servers sharing a database see each other's counts
 * within a flush interval.
 */
export class ApiUsage extends Context.Tag("@cmp/core/ApiUsage")<
  ApiUsage,
  {
    /**
     * Counts one request against each organization it acts in (a find over several counts once
     * in each); refused, it counts nowhere, so no organization pays for a request it did not get.
     */
    readonly hit: (organizationIds: string | ReadonlyArray<string>) => Effect.Effect<void, TooManyRequests>
    readonly flush: Effect.Effect<void>
  }
>() {
  static readonly make = Effect.gen(function*() {
    const usage = yield* UsageStore
    const limits = yield* OrganizationLimits
    const settings = yield* Settings
    const counters = new Map<string, Counter>()

    const readLimit = (organizationId: string) =>
      Effect.map(limits.quotaOf(organizationId, "api_requests"), (limit) => limit ?? Number.POSITIVE_INFINITY)

    const flushOne = (organizationId: string, c: Counter) =>
      Effect.gen(function*() {
        if (c.pending === 0) return
        const n = c.pending
        c.pending = 0
        c.stored = yield* usage.add(organizationId, c.period, n)
      })

    /** The organization's counter for the current period, read again when stale. */
    const counterOf = (organizationId: string, key: string, now: number) =>
      Effect.gen(function*() {
        let c = counters.get(organizationId)
        if (!isFresh(c, key, now)) {
          if (c) yield* flushOne(organizationId, c)
          const stored = yield* usage.get(organizationId, key)
          const limit = yield* readLimit(organizationId)
          c = { period: key, stored, pending: 0, limit, refreshedAt: now }
          counters.set(organizationId, c)
        }
        return c
      })

    /** Counts on the counters, or fails when one is exhausted: refused, it counts nowhere. */
    const countOn = (ids: ReadonlyArray<string>, cs: ReadonlyArray<Counter>, endsAt: number, now: number): Effect.Effect<void, TooManyRequests> => {
      const exhausted = cs.find((c) => c.stored + c.pending >= c.limit)
      if (exhausted) {
        return Effect.fail(
          new TooManyRequests({
            message: `Quota 'api_requests' of ${exhausted.limit} requests per period is exhausted`,
            retryAfterSeconds: Math.max(1, Math.ceil((endsAt - now) / 1000))
          })
        )
      }
      // Reading a counter may yield: count on the one the map holds now, not a replaced copy.
      ids.forEach((id, i) => (counters.get(id) ?? cs[i]!).pending++)
      return Effect.void
    }

    const hit = (organizationIds: string | ReadonlyArray<string>) =>
      Effect.flatMap(nowMillis, (now) => {
        const { endsAt, key } = periodOf(settings.apiRequestsPeriod, now)
        const ids = typeof organizationIds === "string" ? [organizationIds] : [...new Set(organizationIds)]
        // Asked on every request: while each counter is fresh, nothing is read and no step taken.
        const fresh: Array<Counter> = []
        for (const id of ids) {
          const c = counters.get(id)
          if (!isFresh(c, key, now)) break
          fresh.push(c)
        }
        if (fresh.length === ids.length) return countOn(ids, fresh, endsAt, now)
        return Effect.flatMap(
          Effect.forEach(ids, (id) => counterOf(id, key, now)),
          (cs) => countOn(ids, cs, endsAt, now)
        )
      })

    const flush = Effect.suspend(() =>
      Effect.forEach([...counters.entries()], ([org, c]) => flushOne(org, c), { discard: true })
    )
    return { hit, flush }
  })

  /** Flushes every few seconds and once more on shutdown. */
  static readonly layer = (flushEvery = "2 seconds" as const) =>
    Layer.scoped(
      ApiUsage,
      Effect.gen(function*() {
        const service = yield* ApiUsage.make
        yield* Effect.forkScoped(Effect.repeat(service.flush, Schedule.spaced(flushEvery)))
        yield* Effect.addFinalizer(() => service.flush)
        return service
      })
    )
}
