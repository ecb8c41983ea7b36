import { SecretBox, Storage, Tables } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as crypto from "node:crypto"
import { keptKey } from "./KeptKey.js"

const BOX_SETTING = "secret_box_key"

/** A 32-byte key as configured (base64 or 64 hex characters), or a defect naming the variable. */
const parseKey = (configured: string, name: string) =>
  Effect.gen(function*() {
    const key = /^[0-9a-f]{64}$/i.test(configured) ? Buffer.from(configured, "hex") : Buffer.from(configured, "base64")
    if (key.length !== 32) return yield* Effect.dieMessage(`${name} must be 32 bytes, as base64 or 64 hex characters`)
    return key
  })

/**
 * A key's id in what it seals: the first 48 bits of its SHA-256, base64url. It tells which key
 * to open a value with; from a random 256-bit key it gives nothing away.
 */
export const secretBoxKeyId = (key: Uint8Array): string => crypto.createHash("sha256").update(key).digest().subarray(0, 6).toString("base64url")

/** The keys of a box: the one that seals, then every other one that still opens. */
export interface SecretBoxKeys {
  readonly current: Buffer
  readonly openers: ReadonlyArray<Buffer>
}

/**
 * The box's keys. `ENCRYPTION_KEY` seals, else the key kept in the database (made on first use).
 * `ENCRYPTION_KEY_PREVIOUS` also opens, and so does a kept key when `ENCRYPTION_KEY` is set:
 * moving from the generated key to an external one is a rotation too.
 */
export const secretBoxKeys = (encryptionKey?: string, encryptionKeyPrevious?: string) =>
  Effect.gen(function*() {
    const previous = encryptionKeyPrevious === undefined ? [] : [yield* parseKey(encryptionKeyPrevious, "ENCRYPTION_KEY_PREVIOUS")]
    if (encryptionKey === undefined) return { current: yield* keptKey(BOX_SETTING), openers: previous } satisfies SecretBoxKeys
    const current = yield* parseKey(encryptionKey, "ENCRYPTION_KEY")
    // Read, never made: a database that never had one needs none.
    const kept = yield* Effect.map(
      (yield* Storage).repository(Tables.settings).get(BOX_SETTING),
      Option.map((row) => Buffer.from(row.value as string, "base64"))
    )
    return { current, openers: [...previous, ...Option.toArray(kept)] } satisfies SecretBoxKeys
  })

const b64 = (b: Buffer) => b.toString("base64url")

const openWith = (key: Buffer, iv: string, tag: string, body: string) => {
  const decipher = crypto.createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"))
  decipher.setAuthTag(Buffer.from(tag, "base64url"))
  return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8")
}

/** Why a value does not open; never the value itself. */
const unopened = (detail: string) =>
  new Error(`A sealed secret could not be opened: ${detail}. Is ENCRYPTION_KEY (or ENCRYPTION_KEY_PREVIOUS) the key that sealed it?`)

/**
 * AES-256-GCM under several keys. Seals `v2.<kid>.<iv>.<tag>.<ciphertext>` (base64url) with
 * the current key; opens that with the key `kid` names, and the older `v1.<iv>.<tag>.<ciphertext>`
 * (no key named) by trying each key: GCM's tag refuses a wrong one. `isCurrent` tells a value
 * the current key sealed, which a re-seal leaves as it is.
 */
export const secretBoxOf = (keys: SecretBoxKeys) => {
  const currentKid = secretBoxKeyId(keys.current)
  const all = [keys.current, ...keys.openers.filter((k) => !k.equals(keys.current))]
  const byKid = new Map(all.map((k) => [secretBoxKeyId(k), k] as const))
  const seal = (plaintext: string) => {
    const iv = crypto.randomBytes(12)
    const cipher = crypto.createCipheriv("aes-256-gcm", keys.current, iv)
    const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
    return ["v2", currentKid, b64(iv), b64(cipher.getAuthTag()), b64(body)].join(".")
  }
  /** The plaintext, or an Error saying why not. */
  const open = (sealed: string): string | Error => {
    const parts = sealed.split(".")
    if (parts[0] === "v2" && parts.length === 5) {
      const [, kid, iv, tag, body] = parts as [string, string, string, string, string]
      const key = byKid.get(kid)
      if (key === undefined) return unopened(`it was sealed with key ${kid}, which is not among the keys given`)
      try {
        return openWith(key, iv, tag, body)
      } catch {
        return unopened(`key ${kid} does not open it (damaged?)`)
      }
    }
    if (parts[0] === "v1" && parts.length === 4) {
      const [, iv, tag, body] = parts as [string, string, string, string]
      for (const key of all) {
        try {
          return openWith(key, iv, tag, body)
        } catch {
          // Another key, or none: the tag tells.
        }
      }
      return unopened("none of the keys given opens it")
    }
    return unopened("not a sealed value")
  }
  const isCurrent = (sealed: string) => sealed.startsWith(`v2.${currentKid}.`)
  return { kid: currentKid, seal, open, isCurrent }
}

/**
 * `SecretBox` on `ENCRYPTION_KEY` (else the key kept in the database), opening also with
 * `ENCRYPTION_KEY_PREVIOUS` and a kept key (see `secretBoxKeys`). Webhook signing secrets and
 * OAuth client secrets must be usable later, so they are encrypted rather than hashed. A value
 * no key opens is a defect, as a wrong key is the operator's to fix.
 */
export const AesSecretBoxLive = (encryptionKey?: string, encryptionKeyPrevious?: string) =>
  Layer.effect(
    SecretBox,
    Effect.map(secretBoxKeys(encryptionKey, encryptionKeyPrevious), (keys) => {
      const box = secretBoxOf(keys)
      return {
        seal: (plaintext: string) => Effect.sync(() => box.seal(plaintext)),
        open: (sealed: string) =>
          Effect.suspend(() => {
            const opened = box.open(sealed)
            return typeof opened === "string" ? Effect.succeed(opened) : Effect.die(opened)
          })
      }
    })
  )
