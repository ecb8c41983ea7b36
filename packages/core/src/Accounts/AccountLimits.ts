import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type PremiumFeatureFlag, premiumFeatureFlags } from "../Domain/Account.js"
import { FeatureCache } from "./FeatureCache.js"
import { OrganizationLimits } from "../Engine/OrganizationLimits.js"
import { type Row, Storage, type TableDef } from "../Engine/Ports.js"
import { eq } from "../Engine/Query.js"
import { Tables } from "./AccountTables.js"

/** An organization's one row of a per-organization table (its quotas, its premium features). */
export const organizationRow = (table: TableDef, organizationId: string): Effect.Effect<Row | undefined, never, Storage> =>
  Effect.flatMap(Storage, (storage) =>
    Effect.map(
      storage.repository(table).find({
        count: false,
        where: [eq("organization_id", organizationId)],
        sort: [],
        ordered: false,
        limit: 1,
        skip: 0
      }),
      (page) => page.data[0]
    ))

/**
 * The engine's limits read from the account resources: the organizations, quotas and
 * premium-features tables. Premium features go through the feature cache (checked on every
 * gated request); quotas are read inside the creating transaction, never cached.
 */
export const OrganizationLimitsLive: Layer.Layer<OrganizationLimits, never, Storage | FeatureCache> = Layer.effect(
  OrganizationLimits,
  Effect.gen(function*() {
    const storage = yield* Storage
    const cache = yield* FeatureCache
    const row = (table: TableDef, organizationId: string) =>
      Effect.provideService(organizationRow(table, organizationId), Storage, storage)
    // The set of a cached row, made once while the cache keeps that row (a write asks twice).
    const sets = new WeakMap<Row, ReadonlySet<PremiumFeatureFlag>>()
    const none: ReadonlySet<PremiumFeatureFlag> = new Set()
    const flagsOf = (r: Row | undefined): ReadonlySet<PremiumFeatureFlag> => {
      if (r === undefined) return none
      let set = sets.get(r)
      if (set === undefined) {
        set = new Set(premiumFeatureFlags.filter((f) => r[f] === true))
        sets.set(r, set)
      }
      return set
    }
    return OrganizationLimits.of({
      // Counted, not read: on every write an organization owns, its twenty columns decoded for nothing.
      requireExisting: (organizationId, missing) => storage.repository(Tables.organizations).requireRow([eq("id", organizationId)], missing),
      quotaOf: (organizationId, quota) =>
        Effect.map(row(Tables.quotas, organizationId), (r) => {
          const limit = r?.[quota]
          return typeof limit === "number" ? limit : undefined
        }),
      featuresOf: (organizationId, outsideTransaction = false) =>
        Effect.map(cache.read(organizationId, row(Tables.premiumFeatures, organizationId), outsideTransaction), flagsOf)
    })
  })
)
