import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Row } from "../Engine/Ports.js"

/**
 * An organization's premium-feature row, kept in memory for a moment. Every gated request
 * (each consent event) checks the row; reading it from the database each time cost a query per
 * request. A change made through this process is seen at once (the row is dropped after its
 * commit); one made through another server process is seen within `ttlMs`.
 */
export interface FeatureCacheService {
  readonly read: <R>(organizationId: string, load: Effect.Effect<Row | undefined, never, R>) => Effect.Effect<Row | undefined, never, R>
  readonly forget: (organizationId: string) => Effect.Effect<void>
}

export class FeatureCache extends Context.Tag("@cmp/core/FeatureCache")<FeatureCache, FeatureCacheService>() {
  static readonly layer = (ttlMs = 1000): Layer.Layer<FeatureCache> =>
    Layer.sync(FeatureCache, () => {
      const entries = new Map<string, { readonly row: Row | undefined; readonly until: number }>()
      return {
        read: <R>(organizationId: string, load: Effect.Effect<Row | undefined, never, R>) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) => {
            const hit = entries.get(organizationId)
            if (hit && hit.until > now) return Effect.succeed(hit.row)
            return Effect.tap(load, (row) => {
              // Bounded: an organization's row is small, but ids come from callers.
              if (entries.size >= 10_000) entries.clear()
              entries.set(organizationId, { row, until: now + ttlMs })
            })
          }),
        forget: (organizationId) => Effect.sync(() => entries.delete(organizationId))
      }
    })
}

/** Reads an organization's premium features through the cache. */
export const readFeatures = <R>(organizationId: string, load: Effect.Effect<Row | undefined, never, R>) =>
  Effect.flatMap(FeatureCache, (cache) => cache.read(organizationId, load))

export const forgetFeatures = (organizationId: unknown): Effect.Effect<void, never, FeatureCache> =>
  typeof organizationId !== "string" ? Effect.void : Effect.flatMap(FeatureCache, (cache) => cache.forget(organizationId))
