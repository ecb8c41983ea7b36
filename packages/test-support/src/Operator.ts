import { authenticate, bootstrap, createSession, OrganizationsResource, type Principal, ResourceService as RS } from "@cmp/core"
import * as Effect from "effect/Effect"

/**
 * What most suites over core's use-cases start from: a fresh store's operator (bootstrapped
 * with the suites' key) signed in, and the organizations it makes, by name, their ids in order.
 */
export const operatorWith = (...names: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    yield* bootstrap({ key: "admin", secret: "admin-secret" })
    const session = yield* createSession({ type: "api-key", key: "admin", secret: "admin-secret" })
    const operator = (yield* authenticate(session.access_token)) as Principal
    const organizations: Array<string> = []
    for (const name of names) organizations.push((yield* RS.create(OrganizationsResource, operator, { name })).id as string)
    return { operator, organizations }
  })
