import { CertificateValidator, Ids, NotAuthenticated, nowIso, SecretBox, SecretHasher, Storage, Tables, type TokenClaims, TokenIssuer, UrlSigner } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as crypto from "node:crypto"
import { jwtVerify, SignJWT } from "jose"

// ---------------------------------------------------------------- secrets and passwords

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

// ---------------------------------------------------------------- access tokens

/**
 * A random 32-byte key generated once and kept in the settings table, for keys the operator did
 * not configure. Two servers starting at once: the loser of the insert reads the winner's key.
 */
const keptKey = (id: string) =>
  Effect.gen(function*() {
    const repo = (yield* Storage).repository(Tables.settings)
    const existing = yield* repo.get(id)
    if (Option.isSome(existing)) return Buffer.from(existing.value.value as string, "base64")
    const now = yield* nowIso
    const value = crypto.randomBytes(32).toString("base64")
    const kept = yield* repo.create({ id, value, created_at: now, updated_at: now, version: 1 }).pipe(
      Effect.as(value),
      Effect.catchTag("Conflict", () => Effect.map(repo.get(id), (o) => Option.getOrThrow(o).value as string))
    )
    return Buffer.from(kept, "base64")
  })

const JWT_SETTING = "jwt_secret"

/** The configured signing key, or one generated once and kept in the database. */
const signingKey = (configured: string | undefined) =>
  Effect.gen(function*() {
    if (configured !== undefined) {
      if (configured.length < 32) return yield* Effect.dieMessage("JWT_SECRET must be at least 32 characters long")
      return new TextEncoder().encode(configured)
    }
    return yield* keptKey(JWT_SETTING)
  })

const kinds = new Set(["operator", "client", "member", "integration"])

/** HS256 tokens via `jose`; only HS256 is accepted, so `alg: none` and other algorithms fail. */
export const JoseTokensLive = (secret?: string) =>
  Layer.effect(
    TokenIssuer,
    Effect.gen(function*() {
      // A KeyObject made once: jose would otherwise import raw key bytes on every call.
      const key = crypto.createSecretKey(yield* signingKey(secret))
      const ids = yield* Ids
      const invalid = new NotAuthenticated({ message: "Invalid or expired access token" })
      /**
       * Tokens already verified, so a client's repeated calls skip the HMAC: the same bytes carry
       * the same valid signature. Time bounds are still checked on every call.
       */
      const verified = new Map<string, { claims: TokenClaims; nbf: number }>()
      return {
        issue: (claims: TokenClaims) =>
          Effect.flatMap(ids.next, (jti) =>
            Effect.promise(() =>
              new SignJWT({ kind: claims.kind, ...(claims.org ? { org: claims.org } : {}) })
                .setProtectedHeader({ alg: "HS256", typ: "JWT" })
                .setSubject(claims.sub)
                .setIssuedAt(claims.iat)
                .setNotBefore(claims.iat)
                .setExpirationTime(claims.exp)
                .setJti(jti)
                .sign(key)
            )),
        verify: (token: string, nowSeconds: number) => {
          const hit = verified.get(token)
          if (hit) {
            return hit.claims.exp > nowSeconds && hit.nbf <= nowSeconds ? Effect.succeed(hit.claims) : Effect.fail(invalid)
          }
          return Effect.tryPromise({
            try: () => jwtVerify(token, key, { algorithms: ["HS256"], currentDate: new Date(nowSeconds * 1000) }),
            catch: () => invalid
          }).pipe(
            Effect.flatMap(({ payload }) => {
              const { exp, iat, kind, org, sub } = payload as Record<string, unknown>
              if (
                typeof sub !== "string" || typeof exp !== "number" || typeof iat !== "number" ||
                typeof kind !== "string" || !kinds.has(kind) || (org !== undefined && typeof org !== "string")
              ) return Effect.fail(invalid)
              const claims = { sub, exp, iat, kind, org } as TokenClaims
              if (verified.size >= 10_000) verified.clear()
              verified.set(token, { claims, nbf: typeof payload.nbf === "number" ? payload.nbf : iat })
              return Effect.succeed(claims)
            })
          )
        }
      }
    })
  )

// ---------------------------------------------------------------- reversible secrets

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

// ---------------------------------------------------------------- signed URLs and certificates

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

export const HmacUrlSignerLive = (signingKey?: string) =>
  Layer.effect(
    UrlSigner,
    Effect.map(urlKey(signingKey), (key) => ({
      sign: (target: string, expiresAtSeconds: number) => Effect.sync(() => signUrlWith(key, target, expiresAtSeconds))
    }))
  )

/** Parses the PEM with node:crypto's X509Certificate; an expired certificate is refused too. */
export const checkCertificatePem = (pem: string, nowMillis: number): Option.Option<string> => {
  let cert: crypto.X509Certificate
  try {
    cert = new crypto.X509Certificate(pem)
  } catch {
    return Option.some("must be a valid PEM X.509 certificate")
  }
  if (Date.parse(cert.validTo) <= nowMillis) return Option.some(`the certificate expired on ${cert.validTo}`)
  return Option.none()
}

export const X509CertificateValidatorLive = Layer.succeed(CertificateValidator, {
  check: (pem: string, nowMillis: number) => Effect.sync(() => checkCertificatePem(pem, nowMillis))
})
