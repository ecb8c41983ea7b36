import * as Effect from "effect/Effect"
import { Forbidden, InvalidInput, QuotaExceeded } from "../Domain/Errors.js"
import type { PremiumFeatureFlag } from "../Domain/Account.js"
import { Storage, UnitOfWork } from "./Ports.js"
import { isOperator, organizationsOf, type Principal, requireOrganization } from "./Principal.js"
import { type Condition, eq } from "./Query.js"
import { type AnyResource } from "./Resource.js"
import { OrganizationLimits } from "./OrganizationLimits.js"
import { isPlainObject } from "./Bodies.js"
import { withService } from "./Services.js"

const flagOff = (flag: PremiumFeatureFlag) =>
  new Forbidden({ message: `The premium feature '${flag}' is not enabled for this organization` })

export const featureOff = (def: AnyResource) => flagOff(def.premiumFeature!)

const hasFlag = (flag: PremiumFeatureFlag, organizationId: string, outsideTransaction?: boolean) =>
  withService(OrganizationLimits, (limits) => Effect.map(limits.featuresOf(organizationId, outsideTransaction), (features) => features.has(flag)))

export const hasFeature = (def: AnyResource, organizationId: string, outsideTransaction?: boolean) =>
  hasFlag(def.premiumFeature!, organizationId, outsideTransaction)

/** An organization without this premium feature is answered 403 (for gates a declaration cannot name). */
export const requireFlag = (flag: PremiumFeatureFlag, organizationId: string) =>
  Effect.flatMap(hasFlag(flag, organizationId), (on) => (on ? Effect.void : Effect.fail(flagOff(flag))))

/**
 * A gated service answers 403 to an organization without its premium feature (the operator is
 * never gated). `outsideTransaction`: the caller holds none (see `OrganizationLimits.featuresOf`).
 */
export const requireFeature = (
  def: AnyResource,
  principal: Principal,
  organizationId: unknown,
  outsideTransaction?: boolean
): Effect.Effect<void, Forbidden, OrganizationLimits> =>
  !def.premiumFeature || isOperator(principal) || typeof organizationId !== "string"
    ? Effect.void
    : Effect.flatMap(hasFeature(def, organizationId, outsideTransaction), (on) => (on ? Effect.void : Effect.fail(featureOff(def))))

/**
 * The premium-feature gate of a write, before its body is validated: an organization without
 * the feature hears 403 whatever else is wrong with the body. The organization is the one the
 * body names in `ownerKey` (one the principal acts in, 403 otherwise); where the body names none,
 * or the owner comes from another input, the principal's organizations: when none of them has
 * the feature, no body could succeed. The operator is never gated. It runs before the write's
 * transaction begins.
 */
export const requireFeatureBeforeBody = (def: AnyResource, principal: Principal, body: unknown, ownerKey: string | undefined) => {
  if (!def.premiumFeature || isOperator(principal)) return Effect.void
  const named = ownerKey !== undefined && isPlainObject(body) ? body[ownerKey] : undefined
  if (typeof named === "string" && named !== "") {
    return Effect.zipRight(requireOrganization(principal, named), requireFeature(def, principal, named, true))
  }
  return Effect.gen(function*() {
    const orgs = organizationsOf(principal)
    if (orgs === "all") return
    for (const org of orgs) if (yield* hasFeature(def, org, true)) return
    return yield* Effect.fail(featureOff(def))
  })
}

/** Counts the organization's rows against its quota, inside the creating transaction. */
export const checkQuota = (
  def: Pick<AnyResource, "quota" | "ownerField" | "tableDef">,
  organizationId: string,
  extra: ReadonlyArray<Condition> = []
) => {
  const quota = def.quota
  const ownerField = def.ownerField
  if (!quota || ownerField === undefined) return Effect.void
  return Effect.gen(function*() {
    const name = typeof quota === "string" ? quota : quota.name
    // Two concurrent creates must not both see "one below the limit".
    yield* Effect.flatMap(UnitOfWork, (uow) => uow.lock(`quota:${name}:${organizationId}`))
    const limit = typeof quota === "string"
      ? yield* Effect.flatMap(OrganizationLimits, (limits) => limits.quotaOf(organizationId, quota))
      : typeof quota.limit === "number" ? quota.limit : yield* quota.limit(organizationId)
    if (limit === undefined) return
    const used = yield* (yield* Storage).repository(def.tableDef).count([eq(ownerField, organizationId), ...extra])
    if (used >= limit) {
      return yield* Effect.fail(
        new QuotaExceeded({
          message: `Quota '${name}' reached: the organization may have at most ${limit}`,
          quota: name,
          limit
        })
      )
    }
  })
}

/** An organization named in an input must exist (the operator can name any id). */
export const requireExistingOrganization = (organizationId: string) =>
  withService(OrganizationLimits, (limits) =>
    limits.requireExisting(organizationId, () =>
      new InvalidInput({
        message: `Invalid organization_id: no organization '${organizationId}'`,
        errors: { organization_id: "is not an existing organization" }
      })))
