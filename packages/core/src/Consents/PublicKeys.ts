import * as Effect from "effect/Effect"
import { CredentialCache } from "../Accounts/CredentialCache.js"
import { NotAuthenticated } from "../Domain/Errors.js"
import { Storage } from "../Engine/Ports.js"
import type { Principal } from "../Engine/Principal.js"
import { eq } from "../Engine/Query.js"
import { OrganizationsResource } from "../Accounts/Organizations.js"

/**
 * The organization a public key (`public_api_key`) belongs to. Every public write asks, so the
 * answer goes through the credential cache: an organization's removal drops it at once here,
 * and within the cache's bound on other servers.
 */
export const authenticatePublicKey = (key: string) =>
  Effect.gen(function*() {
    const unknown = new NotAuthenticated({ message: "Unknown public key" })
    // Keys are `pk_` and random letters; anything else is no key, and never reaches the store.
    if (!/^pk_[A-Za-z0-9_-]{8,128}$/.test(key)) return yield* Effect.fail(unknown)
    const storage = yield* Storage
    const organizationId = yield* Effect.flatMap(CredentialCache, (cache) =>
      cache.read(
        "public_keys",
        key,
        Effect.suspend(() =>
          Effect.map(
            storage.repository(OrganizationsResource.tableDef).find({
              count: false,
              where: [eq("public_api_key", key)],
              sort: [],
              ordered: false,
              limit: 1,
              skip: 0
            }),
            (page) => page.data[0]?.id
          )
        ).pipe(Effect.orDie)
      ))
    if (organizationId === undefined) return yield* Effect.fail(unknown)
    return { _tag: "PublicKey", organizationId } satisfies Principal
  })
