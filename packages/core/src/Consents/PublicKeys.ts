import * as Effect from "effect/Effect"
import { CredentialCache, type CredentialHolder } from "../Accounts/CredentialCache.js"
import { NotAuthenticated } from "../Domain/Errors.js"
import { nowMillis } from "../Engine/Clock.js"
import { Storage } from "../Engine/Ports.js"
import type { Principal } from "../Engine/Principal.js"
import { eq } from "../Engine/Query.js"
import { OrganizationsResource } from "../Accounts/Organizations.js"

/** The organization whose `field` holds the key, and, for the key a rotation replaced, its date. */
const holderBy = (field: "public_api_key" | "previous_public_api_key", key: string) =>
  Effect.flatMap(Storage, (storage) =>
    Effect.map(
      storage.repository(OrganizationsResource.tableDef).find({
        count: false,
        where: [eq(field, key)],
        sort: [],
        ordered: false,
        limit: 1,
        skip: 0
      }),
      (page): CredentialHolder | undefined => {
        const org = page.data[0]
        if (org === undefined) return undefined
        if (field === "public_api_key") return { organizationId: org.id }
        return org.previous_key_expires_at === null ? undefined : { organizationId: org.id, until: org.previous_key_expires_at }
      }
    ))

/**
 * The organization a public key (`public_api_key`) belongs to, or the key its last rotation
 * replaced until that one's date. Every public write asks, so the answer goes through the
 * credential cache: an organization's removal or rotation drops it at once here, and within the
 * cache's bound on other servers. The current key is looked for first, so a page using it costs
 * the one read it always did; the date of a replaced key is compared on every request, kept
 * copy or not, so none is accepted past it.
 */
export const authenticatePublicKey = (key: string) =>
  Effect.gen(function*() {
    // Built only when failing: an error captures a stack trace, and every public write comes here.
    const unknown = () => new NotAuthenticated({ message: "Unknown public key" })
    // Keys are `pk_` and random letters; anything else is no key, and never reaches the store.
    if (!/^pk_[A-Za-z0-9_-]{8,128}$/.test(key)) return yield* Effect.fail(unknown())
    const holder = yield* Effect.flatMap(CredentialCache, (cache) =>
      cache.read(
        "public_keys",
        key,
        Effect.flatMap(holderBy("public_api_key", key), (current) =>
          current !== undefined ? Effect.succeed(current) : holderBy("previous_public_api_key", key)).pipe(Effect.orDie)
      ))
    if (holder === undefined) return yield* Effect.fail(unknown())
    if (holder.until !== undefined && Date.parse(holder.until) <= (yield* nowMillis)) return yield* Effect.fail(unknown())
    return { _tag: "PublicKey", organizationId: holder.organizationId } satisfies Principal
  })
