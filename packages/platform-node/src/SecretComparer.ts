import { SecretComparer } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as crypto from "node:crypto"

/**
 * `crypto.timingSafeEqual` over the SHA-256 of each side: digests are always 32 bytes, so
 * secrets of any lengths are compared in the same time, and the expected one's length is not
 * told by an early answer.
 */
const digest = (s: string) => crypto.createHash("sha256").update(s, "utf8").digest()

export const NodeSecretComparerLive: Layer.Layer<SecretComparer> = Layer.succeed(SecretComparer, {
  equals: (given, expected) => Effect.sync(() => crypto.timingSafeEqual(digest(given), digest(expected)))
})
