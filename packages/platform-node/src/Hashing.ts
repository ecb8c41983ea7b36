import { SecretHasher } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as crypto from "node:crypto"

export interface ScryptOptions {
  /** CPU/memory cost; lower only in tests. */
  readonly cost?: number
}

const scrypt = (secret: string, salt: Buffer, N: number, keylen: number) =>
  Effect.async<Buffer>((resume) => {
    crypto.scrypt(secret, salt, keylen, { N, r: 8, p: 1, maxmem: 256 * N * 8 + 1024 * 1024 }, (err, key) => {
      resume(err ? Effect.die(err) : Effect.succeed(key))
    })
  })

/** scrypt hashes as `scrypt$N$salt$hash`, compared in constant time. */
export const ScryptHasherLive = (options: ScryptOptions = {}) =>
  Layer.succeed(SecretHasher, {
    hash: (secret) =>
      Effect.gen(function*() {
        const N = options.cost ?? 16384
        const salt = crypto.randomBytes(16)
        const key = yield* scrypt(secret, salt, N, 32)
        return `scrypt$${N}$${salt.toString("base64")}$${key.toString("base64")}`
      }),
    verify: (secret, stored) =>
      Effect.gen(function*() {
        const [scheme, n, salt, hash] = stored.split("$")
        const N = Number(n)
        if (scheme !== "scrypt" || !Number.isInteger(N) || N < 2 || N > 1 << 20 || !salt || !hash) return false
        const expected = Buffer.from(hash, "base64")
        const key = yield* scrypt(secret, Buffer.from(salt, "base64"), N, expected.length)
        return key.length === expected.length && crypto.timingSafeEqual(key, expected)
      })
  })
