import { Digests } from "@cmp/core"
import canonicalize from "canonicalize"
import * as Layer from "effect/Layer"
import * as crypto from "node:crypto"

// Lone surrogates cannot be written as UTF-8: a stored string comes back with U+FFFD in their
// place, so the digest is taken over that same text or a row would never verify again.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g
const wellFormed = (s: string) => s.replace(LONE_SURROGATE, "\uFFFD")

const hasLoneSurrogate = (s: string) => {
  LONE_SURROGATE.lastIndex = 0
  return LONE_SURROGATE.test(s)
}

const revive = (_key: string, value: unknown): unknown => {
  if (typeof value === "string") return wellFormed(value)
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    const keys = Object.keys(value)
    if (keys.some(hasLoneSurrogate)) {
      return Object.fromEntries(keys.map((k) => [wellFormed(k), (value as Record<string, unknown>)[k]]))
    }
  }
  return value
}

/**
 * The value as JSON sees it (`toJSON` applied, undefined and functions dropped, non-finite
 * numbers null), so that the canonical form of a value equals that of its stored JSON.
 */
const asJson = (value: unknown): unknown => {
  const json = JSON.stringify(value)
  return json === undefined ? null : JSON.parse(json, revive)
}

/**
 * RFC 8785 canonical JSON of any value; `null` for what JSON cannot show (undefined, a function).
 * A stored row is plain JSON already and is encoded as it is (every consent write digests two
 * rows); only a value `canonicalize` refuses (a lone surrogate, a number JSON has no form for)
 * goes through `asJson` first.
 */
const canonicalJson = (value: unknown): string => {
  try {
    const direct = canonicalize(value)
    // A function's place reads `undefined`: rare enough that any such text takes the long way.
    if (direct !== undefined && !direct.includes("undefined")) return direct
  } catch {
    // refused as it is: made JSON first, below
  }
  return canonicalize(asJson(value)) ?? "null"
}

/**
 * SHA-256 as lowercase hex; a string is hashed as its UTF-8. Node's one-shot `crypto.hash`
 * (20.12 and later) where there is one: every consent write takes several digests of short texts,
 * and it does without a `Hash` object for each.
 */
const oneShot = (crypto as { hash?: (algorithm: string, data: Uint8Array | string, encoding: "hex") => string }).hash
const sha256 = (data: Uint8Array | string): string =>
  oneShot ? oneShot("sha256", data, "hex") : crypto.createHash("sha256").update(data).digest("hex")

export const DigestsLive: Layer.Layer<Digests> = Layer.succeed(Digests, { sha256, canonicalJson })
