import { SecretBox } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as crypto from "node:crypto"
import { keptKey } from "./KeptKey.js"

const BOX_SETTING = "secret_box_key"

/** A 32-byte key from configuration (base64 or 64 hex characters), or one kept in the database. */
const boxKey = (configured: string | undefined) =>
  Effect.gen(function*() {
    if (configured !== undefined) {
      const key = /^[0-9a-f]{64}$/i.test(configured) ? Buffer.from(configured, "hex") : Buffer.from(configured, "base64")
      if (key.length !== 32) return yield* Effect.dieMessage("ENCRYPTION_KEY must be 32 bytes, as base64 or 64 hex characters")
      return key
    }
    return yield* keptKey(BOX_SETTING)
  })

/**
 * AES-256-GCM: `v1.<iv>.<tag>.<ciphertext>` in base64url. Webhook signing secrets and OAuth
 * client secrets must be usable later, so they are encrypted rather than hashed.
 */
export const AesSecretBoxLive = (encryptionKey?: string) =>
  Layer.effect(
    SecretBox,
    Effect.map(boxKey(encryptionKey), (key) => ({
      seal: (plaintext: string) =>
        Effect.sync(() => {
          const iv = crypto.randomBytes(12)
          const cipher = crypto.createCipheriv("aes-256-gcm", key, iv)
          const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
          return ["v1", iv, cipher.getAuthTag(), body].map((p) => (typeof p === "string" ? p : p.toString("base64url"))).join(".")
        }),
      open: (sealed: string) =>
        Effect.try({
          try: () => {
            const [v, iv, tag, body] = sealed.split(".")
            if (v !== "v1" || !iv || !tag || body === undefined) throw new Error("not a sealed value")
            const decipher = crypto.createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"))
            decipher.setAuthTag(Buffer.from(tag, "base64url"))
            return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8")
          },
          catch: (e) => e
        }).pipe(Effect.orDieWith(() => new Error("A sealed secret could not be opened: wrong ENCRYPTION_KEY?")))
    }))
  )
