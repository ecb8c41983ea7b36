import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { nowSeconds } from "../Engine/Clock.js"
import { type OrganizationUserIdAuth } from "../Domain/Consent.js"
import { Forbidden, InvalidInput } from "../Domain/Errors.js"
import { Hmac, Storage } from "../Engine/Ports.js"
import { SecretsResource } from "../Accounts/Secrets.js"
import { SecretBox } from "../Engine/Secrets.js"
import { SigningKeys } from "../Accounts/SigningKeys.js"

/**
 * A page that records a known user's consent through the public key shows that the
 * organization vouches for the user id: its backend signed the id with one of the
 * organization's Secrets (`organization_user_id_auth`). Every refusal is the same 403 but
 * for what it names, so a caller learns nothing about other organizations' secrets.
 */

const refused = (why: string) => new Forbidden({ message: `The user id is not vouched for: ${why}` })

/**
 * The signed text. `hmac-sha256` (the reference SDK's): the user id, the salt and the expiration
 * concatenated. `hmac-sha256-v2`: the same three joined by a newline, which neither the id nor
 * the salt may hold, so no value can move into its neighbour.
 */
export const signedUserIdText = (
  organizationUserId: string,
  auth: Pick<OrganizationUserIdAuth, "algorithm" | "salt" | "expiration">
) => {
  const parts = [organizationUserId, auth.salt ?? "", auth.expiration === undefined ? "" : String(auth.expiration)]
  return parts.join(auth.algorithm === "hmac-sha256-v2" ? "\n" : "")
}

/** A v2 text splits at its newlines: a value holding one would make it ambiguous again. */
const newlineIn = (organizationUserId: string, auth: OrganizationUserIdAuth) => {
  const errors: Record<string, string> = {}
  if (organizationUserId.includes("\n")) errors["user.organization_user_id"] = "must not hold a newline when signed with hmac-sha256-v2"
  if (auth.salt?.includes("\n")) errors["user.organization_user_id_auth.salt"] = "must not hold a newline when signed with hmac-sha256-v2"
  return Object.keys(errors).length === 0
    ? undefined
    : new InvalidInput({ message: "Invalid organization_user_id_auth: a newline in a value signed with hmac-sha256-v2", errors })
}

export const verifyUserIdAuth = (organizationId: string, organizationUserId: string, auth: OrganizationUserIdAuth | undefined) =>
  Effect.gen(function*() {
    if (auth === undefined) {
      return yield* Effect.fail(refused("send user.organization_user_id_auth, signed with one of the organization's secrets"))
    }
    const v2 = auth.algorithm === "hmac-sha256-v2"
    if (v2) {
      const invalid = newlineIn(organizationUserId, auth)
      if (invalid !== undefined) return yield* Effect.fail(invalid)
      if (auth.expiration === undefined) return yield* Effect.fail(refused("hmac-sha256-v2 signatures carry an expiration"))
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
          return { organizationId: secret.value.organization_id, value, requireExpiration: secret.value.require_expiration === true }
        })
      ))
    if (key === undefined || key.organizationId !== organizationId) return yield* Effect.fail(refused("no such secret in this organization"))
    if (key.value === null) {
      return yield* Effect.fail(refused("this secret was made before secrets could sign user ids: create a new one"))
    }
    // The concatenated form is ambiguous without an expiration: a secret may refuse it then.
    if (key.requireExpiration && auth.expiration === undefined) {
      return yield* Effect.fail(refused("this secret signs only with an expiration"))
    }
    const ok = yield* Effect.flatMap(Hmac, (hmac) => hmac.verifySha256Hex(key.value!, signedUserIdText(organizationUserId, auth), auth.digest))
    if (!ok) return yield* Effect.fail(refused("the digest does not match"))
  })
