import { Hmac, signedUserIdText, USER_ID_AUTH_ALGORITHM } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as crypto from "node:crypto"

/**
 * Signed user ids: how a backend vouches, to a page it renders, for the user id that page
 * records consent for through the public key, without handing it a credential.
 */

const digestOf = (key: string, message: string) => crypto.createHmac("sha256", key).update(message, "utf8").digest("hex")

export interface OrganizationUserIdAuthOptions {
  /** The id of one of the organization's Secrets. */
  readonly secretId: string
  /** That Secret's value, as shown once when it was created. */
  readonly secret: string
  readonly organizationUserId: string
  /** Any text without a newline, so that two signatures of one user id differ. */
  readonly salt?: string | undefined
  /** Unix seconds after which the signature is refused; `hmac-sha256-v2` signatures always carry one. */
  readonly expiration: number
}

/** What a page sends as `user.organization_user_id_auth` beside `user.organization_user_id`. */
export interface OrganizationUserIdAuth {
  readonly algorithm: typeof USER_ID_AUTH_ALGORITHM
  readonly secret_id: string
  readonly digest: string
  readonly salt?: string
  readonly expiration: number
}

/** Signs a user id (`hmac-sha256-v2`) for a page that records its user's consent through the public key. */
export const organizationUserIdAuth = (options: OrganizationUserIdAuthOptions): OrganizationUserIdAuth => {
  if (!Number.isInteger(options.expiration) || options.expiration < 0) {
    throw new TypeError("expiration must be a whole number of unix seconds")
  }
  if (options.organizationUserId.includes("\n") || options.salt?.includes("\n")) {
    throw new TypeError("the user id and the salt must not hold a newline")
  }
  const auth = { algorithm: USER_ID_AUTH_ALGORITHM, salt: options.salt, expiration: options.expiration }
  return {
    algorithm: USER_ID_AUTH_ALGORITHM,
    secret_id: options.secretId,
    digest: digestOf(options.secret, signedUserIdText(options.organizationUserId, auth)),
    ...(options.salt !== undefined ? { salt: options.salt } : {}),
    expiration: options.expiration
  }
}

/** The `Hmac` port on node:crypto; a digest of another length or not in lowercase hex never matches. */
export const NodeHmacLive = Layer.succeed(Hmac, {
  verifySha256Hex: (key, message, digest) =>
    Effect.sync(() => {
      if (!/^[0-9a-f]{64}$/.test(digest)) return false
      const expected = crypto.createHmac("sha256", key).update(message, "utf8").digest()
      return crypto.timingSafeEqual(expected, Buffer.from(digest, "hex"))
    })
})
