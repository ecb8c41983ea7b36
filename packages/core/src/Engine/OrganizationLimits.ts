import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { PremiumFeatureFlag, QuotaField } from "../Domain/Account.js"

/**
 * What the engine enforces of an organization's account: that it exists, its quotas and its
 * premium features. The engine asks this port rather than reading the account resources'
 * tables, so it never depends on the resources declared above it.
 */
export class OrganizationLimits extends Context.Tag("@cmp/core/OrganizationLimits")<
  OrganizationLimits,
  {
    readonly exists: (organizationId: string) => Effect.Effect<boolean>
    /** The organization's limit on `quota`; none when it has no quota set. */
    readonly quotaOf: (organizationId: string, quota: QuotaField) => Effect.Effect<number | undefined>
    /** The premium features enabled for the organization. */
    readonly featuresOf: (organizationId: string) => Effect.Effect<ReadonlySet<PremiumFeatureFlag>>
  }
>() {}
