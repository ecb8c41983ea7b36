import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { KeptValues, readThrough } from "../Engine/KeptValues.js"

/**
 * An organization's consent policies, kept in memory for a moment (`KeptValues`): every
 * consent event and every read of a user needs its regulation's policy, and reading it each
 * time would cost a query. A change through this process drops the copy after its commit; one
 * made through another process is seen within `ttlMs` (a second).
 */
export interface ConsentPoliciesService {
  readonly read: <A, E, R>(organizationId: string, load: Effect.Effect<ReadonlyArray<A>, E, R>) => Effect.Effect<ReadonlyArray<A>, E, R>
  readonly forget: (organizationId: string) => Effect.Effect<void>
}

export class ConsentPolicies extends Context.Tag("@cmp/core/ConsentPolicies")<ConsentPolicies, ConsentPoliciesService>() {
  static readonly layer = (ttlMs = 1000, now?: () => number): Layer.Layer<ConsentPolicies> =>
    Layer.sync(ConsentPolicies, () => {
      const policies = new KeptValues<ReadonlyArray<unknown>>(ttlMs, now)
      return {
        read: <A, E, R>(organizationId: string, load: Effect.Effect<ReadonlyArray<A>, E, R>) =>
          readThrough(policies, organizationId, load) as Effect.Effect<ReadonlyArray<A>, E, R>,
        forget: (organizationId) => Effect.sync(() => policies.forget(organizationId))
      }
    })
}
