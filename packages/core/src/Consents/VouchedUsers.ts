import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { nowSeconds } from "../Clock.js"
import { type OrganizationUserIdAuth } from "../Domain/Consent.js"
import { Forbidden } from "../Domain/Errors.js"
import { Hmac, Storage } from "../Ports.js"
import { SecretsResource } from "../Resources/Account.js"
import { SecretBox } from "../Webhooks/Ports.js"
import { SigningKeys } from "./SigningKeys.js"

/**
 * A page that records a known user's consent through the public key shows that the
 * organization vouches for the user id: its backend signed the id with one of the
 * organization's Secrets (`organization_user_id_auth`). Every refusal is the same 403 but
 * for what it names, so a caller learns nothing about other organizations' secrets.
 */

const refused = (why: string) => new Forbidden({ message: `The user id is not vouched for: ${why}` })

/** The signed text: the user id, then the salt, then the expiration in decimal, with no separator. */
export const signedUserIdText = (organizationUserId: string, auth: Pick<OrganizationUserIdAuth, "salt" | "expiration">) =>
  `${organizationUserId}${auth.salt ?? ""}${auth.expiration === undefined ? "" : String(auth.expiration)}`

export const verifyUserIdAuth = (organizationId: string, organizationUserId: string, auth: OrganizationUserIdAuth | undefined) =>
  Effect.gen(function*() {
    if (auth === undefined) {
      return yield* Effect.fail(refused("send user.organization_user_id_auth, signed with one of the organization's secrets"))
    }
    if (auth.expiration !== undefined && auth.expiration <= (yield* nowSeconds)) return yield* Effect.fail(refused("the signature has expired"))
    const key = yield* Effect.flatMap(SigningKeys, (keys) =>
      keys.read(
        auth.secret_id,
        Effect.gen(function*() {
          const secret = yield* Effect.orDie((yield* Storage).repository(SecretsResource.tableDef).get(auth.secret_id))
          if (Option.isNone(secret)) return undefined
          const sealed = secret.value.secret_sealed
          const value = sealed === null ? null : yield* Effect.flatMap(SecretBox, (box) => box.open(sealed))
          return { organizationId: secret.value.organization_id, value }
        })
      ))
    if (key === undefined || key.organizationId !== organizationId) return yield* Effect.fail(refused("no such secret in this organization"))
    if (key.value === null) {
      return yield* Effect.fail(refused("this secret was made before secrets could sign user ids: create a new one"))
    }
    const ok = yield* Effect.flatMap(Hmac, (hmac) => hmac.verifySha256Hex(key.value!, signedUserIdText(organizationUserId, auth), auth.digest))
    if (!ok) return yield* Effect.fail(refused("the digest does not match"))
  })
