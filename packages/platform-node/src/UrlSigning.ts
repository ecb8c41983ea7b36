import { UrlSigner } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as crypto from "node:crypto"
import { keptKey } from "./KeptKey.js"

const URL_KEY_SETTING = "url_signing_key"

/** The configured URL signing key (at least 32 characters), or one generated once and kept in the database. */
const urlKey = (configured: string | undefined) =>
  Effect.gen(function*() {
    if (configured !== undefined) {
      if (configured.length < 32) return yield* Effect.dieMessage("URL_SIGNING_KEY must be at least 32 characters long")
      return Buffer.from(configured, "utf8")
    }
    return yield* keptKey(URL_KEY_SETTING)
  })

/**
 * Appends `expires` (Unix seconds) and `signature` to a URL: the signature is
 * base64url(HMAC-SHA256(key, <the URL with expires>)), which the dashboard host recomputes.
 */
export const signUrlWith = (key: Buffer | string, target: string, expiresAtSeconds: number): string => {
  const url = new URL(target)
  url.searchParams.delete("signature")
  url.searchParams.set("expires", String(expiresAtSeconds))
  const signature = crypto.createHmac("sha256", key).update(url.toString()).digest("base64url")
  url.searchParams.set("signature", signature)
  return url.toString()
}

/** Checks a URL signed by `signUrlWith`: the signature matches and `expires` is not past. */
export const verifySignedUrl = (key: Buffer | string, signed: string, nowSeconds: number): boolean => {
  const url = new URL(signed)
  const signature = url.searchParams.get("signature") ?? ""
  const expires = Number(url.searchParams.get("expires"))
  url.searchParams.delete("signature")
  const expected = crypto.createHmac("sha256", key).update(url.toString()).digest()
  const given = Buffer.from(signature, "base64url")
  return given.length === expected.length && crypto.timingSafeEqual(given, expected) &&
    Number.isInteger(expires) && expires > nowSeconds
}

/**
 * HMAC-SHA256 of `data` under a key derived for `purpose` from the URL signing key, so a check
 * value of one purpose is not one of another, nor a URL signature.
 */
export const macWith = (key: Buffer | string, purpose: string, data: string): string => {
  const purposeKey = crypto.createHmac("sha256", key).update(`purpose:${purpose}`).digest()
  return crypto.createHmac("sha256", purposeKey).update(data).digest("base64url")
}

export const HmacUrlSignerLive = (signingKey?: string) =>
  Layer.effect(
    UrlSigner,
    Effect.map(urlKey(signingKey), (key) => ({
      sign: (target: string, expiresAtSeconds: number) => Effect.sync(() => signUrlWith(key, target, expiresAtSeconds)),
      mac: (purpose: string, data: string) => Effect.sync(() => macWith(key, purpose, data))
    }))
  )
