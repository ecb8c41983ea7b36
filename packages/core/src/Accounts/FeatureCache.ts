import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { KeptValues, readThrough } from "../Engine/KeptValues.js"
import type { Row } from "../Engine/Ports.js"

/**
 * An organization's premium-feature row, kept in memory for a moment. Every gated request
 * (each consent event) checks the row; reading it from the database each time cost a query per
 * request. A change made through this process is seen at once (the row is dropped after its
 * commit); one made through another server process is seen within `ttlMs` (`KeptValues`).
 */
export interface FeatureCacheService {
  /** `join`: the caller holds no transaction, and may wait for a load of the row under way. */
  readonly read: <R>(organizationId: string, load: Effect.Effect<Row | undefined, never, R>, join?: boolean) => Effect.Effect<Row | undefined, never, R>
  readonly forget: (organizationId: string) => Effect.Effect<void>
}

export class FeatureCache extends Context.Tag("@cmp/core/FeatureCache")<FeatureCache, FeatureCacheService>() {
  static readonly layer = (ttlMs = 1000, now?: () => number): Layer.Layer<FeatureCache> =>
    Layer.sync(FeatureCache, () => {
      const kept = new KeptValues<Row | undefined>(ttlMs, now)
      return {
        read: (organizationId, load, join) => readThrough(kept, organizationId, load, join),
        forget: (organizationId) => Effect.sync(() => kept.forget(organizationId))
      }
    })
}

/** Reads an organization's premium features through the cache. */
export const readFeatures = <R>(organizationId: string, load: Effect.Effect<Row | undefined, never, R>) =>
  Effect.flatMap(FeatureCache, (cache) => cache.read(organizationId, load))

export const forgetFeatures = (organizationId: unknown): Effect.Effect<void, never, FeatureCache> =>
  typeof organizationId !== "string" ? Effect.void : Effect.flatMap(FeatureCache, (cache) => cache.forget(organizationId))
