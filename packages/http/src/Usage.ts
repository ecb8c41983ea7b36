import { type PlatformServices, type Principal, ResourceService } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { parseQuery } from "./Query.js"
import type { Context, Route } from "./Routes.js"

/**
 * The organizations an API request is counted against in `api_requests`: the one a client key
 * (or a platform integration, which acts as one) belongs to; for a member, the organization it
 * acts in; none for the operator.
 */

/** Organization ids a value names: one id, a list, or `{ $in: [...] }`. */
const idsIn = (value: unknown): Array<string> => {
  if (typeof value === "string") return [value]
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === "string")
  if (typeof value === "object" && value !== null && "$in" in value) return idsIn((value as { $in: unknown }).$in)
  return []
}

/**
 * The organizations a request names: its body's `organization_id`, and `?organization_id=` where
 * the route acts in the organization the query names.
 */
const namedOrganizations = (route: Route, query: Record<string, unknown>, body: unknown): Array<string> => [
  ...(route.queryNamesOrganization ? idsIn(query.organization_id) : []),
  ...(typeof body === "object" && body !== null && !Array.isArray(body) ? idsIn((body as Record<string, unknown>).organization_id) : [])
]

/** The owning organization of the route's object, found as the route finds it, when the member can see it. */
const ownerOfTarget = (route: Route, context: Context, principal: Principal, query: Record<string, unknown>) =>
  Effect.gen(function*() {
    const target = route.target?.(context)
    const owner = target?.def.ownerField
    if (!target || owner === undefined) return undefined
    if (owner === "id") return target.id
    const at = route.queryNamesOrganization && typeof query.organization_id === "string" ? { organizationId: query.organization_id } : {}
    const row = yield* Effect.option(ResourceService.loadVisible(target.def, principal, target.id, at))
    return Option.match(row, { onNone: () => undefined, onSome: (r) => r[owner] })
  })

/**
 * A member of one organization always counts there. A member of several counts where the
 * request's object belongs, else where the request names (`organization_id`); a request that
 * names none of them and works on no object of theirs (a find over all of them, an unknown id)
 * counts once in each. The object comes first: an action on one organization's object counts
 * there whatever else the request names.
 */
export const countedOrganizations = (
  principal: Principal,
  route: Route,
  context: Context
): Effect.Effect<ReadonlyArray<string>, never, PlatformServices> => {
  switch (principal._tag) {
    case "Operator":
      return Effect.succeed([])
    // Recording consent, where it is given, is never an API request of the organization's.
    case "PublicKey":
    case "ConsentToken":
      return Effect.succeed([])
    // Every request of a key: answered without a step of its own.
    case "Client":
      return Effect.succeed([principal.organizationId])
    case "Member": {
      const mine = principal.organizationIds
      if (mine.length <= 1) return Effect.succeed(mine)
      return Effect.gen(function*() {
        // A query the route will refuse names nothing here; the route answers its 400.
        const query = yield* Effect.orElseSucceed(parseQuery(context.rawQuery), () => ({} as Record<string, unknown>))
        const owner = yield* ownerOfTarget(route, context, principal, query)
        if (typeof owner === "string" && mine.includes(owner)) return [owner]
        const named = namedOrganizations(route, query, context.body).filter((o) => mine.includes(o))
        return named.length > 0 ? named : mine
      })
    }
  }
}
