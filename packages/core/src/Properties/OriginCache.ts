import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { KeptValues, readThrough } from "../Engine/KeptValues.js"

/**
 * The hosts of an organization's own web origins (see `Origins.ts`), kept in memory: every public
 * write with an `Origin` asks. A change made through this process drops its organization's entry
 * after the commit; one made through another server is seen once the entry ages, within `ttlMs`
 * (10 s by default), as `KeptValues` keeps them.
 */
export interface OriginCacheService {
  readonly read: <R>(organizationId: string, load: Effect.Effect<ReadonlySet<string>, never, R>) => Effect.Effect<ReadonlySet<string>, never, R>
  readonly forget: (organizationId: string) => Effect.Effect<void>
}

export class OriginCache extends Context.Tag("@cmp/core/OriginCache")<OriginCache, OriginCacheService>() {
  static readonly layer = (ttlMs = 10_000, now?: () => number): Layer.Layer<OriginCache> =>
    Layer.sync(OriginCache, () => {
      const kept = new KeptValues<ReadonlySet<string>>(ttlMs, now)
      return {
        read: (organizationId, load) => readThrough(kept, organizationId, load),
        forget: (organizationId) => Effect.sync(() => kept.forget(organizationId))
      }
    })
}

/** After a commit that changed an organization's properties, domains or privacy centers. */
export const forgetOrigins = (organizationId: unknown): Effect.Effect<void, never, OriginCache> =>
  typeof organizationId !== "string" ? Effect.void : Effect.flatMap(OriginCache, (cache) => cache.forget(organizationId))
