import { canonicalJson, Digests } from "@cmp/core"
import * as Layer from "effect/Layer"
import * as crypto from "node:crypto"

/**
 * SHA-256 as lowercase hex; a string is hashed as its UTF-8. Node's one-shot `crypto.hash`
 * (20.12 and later) where there is one: every consent write takes several digests of short texts,
 * and it does without a `Hash` object for each.
 */
const oneShot = (crypto as { hash?: (algorithm: string, data: Uint8Array | string, encoding: "hex") => string }).hash
const sha256 = (data: Uint8Array | string): string =>
  oneShot ? oneShot("sha256", data, "hex") : crypto.createHash("sha256").update(data).digest("hex")

/** Node's SHA-256 over core's canonical JSON, the one encoder of every digest. */
export const DigestsLive: Layer.Layer<Digests> = Layer.succeed(Digests, { sha256, canonicalJson })
