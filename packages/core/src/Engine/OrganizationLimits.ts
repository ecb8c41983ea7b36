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
    /**
     * Fails with `missing()` unless the organization exists. Inside a transaction the store may
     * check it as late as the COMMIT (`Repository.requireRow`).
     */
    readonly requireExisting: <E>(organizationId: string, missing: () => E) => Effect.Effect<void, E>
    /** The organization's limit on `quota`; none when it has no quota set. */
    readonly quotaOf: (organizationId: string, quota: QuotaField) => Effect.Effect<number | undefined>
    /**
     * The premium features enabled for the organization. A caller outside any transaction says
     * so (`outsideTransaction`): it may then wait for a read of the same row already under way
     * rather than read it again (see `KeptValues`).
     */
    readonly featuresOf: (organizationId: string, outsideTransaction?: boolean) => Effect.Effect<ReadonlySet<PremiumFeatureFlag>>
  }
>() {}
