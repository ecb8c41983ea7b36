import {
  canonicalJson,
  ConsentStringDecoder,
  type ConsentTokenClaims,
  Digests,
  engineServices,
  MediaTypes,
  ReportPdf,
  Hmac,
  Ids,
  Metrics,
  NotAuthenticated,
  DeliveryHandOff,
  OutboxSignal,
  SecretBox,
  SecretComparer,
  SecretHasher,
  type SettingsShape,
  type StorePorts,
  type TokenClaims,
  TokenIssuer
} from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as crypto from "node:crypto"

/**
 * Core's services composed as the platform composes them (core's `engineServices`), on a real
 * store that the caller hands in (each store package runs the engine suites on itself; core
 * cannot depend on a store): the real relations between tables (a removal cascades as in
 * production), caches and consent log, no dispatcher to wake, and the host's ports replaced by
 * transparent doubles: tests can predict ids, read a hash and decode a token. The digests are
 * production's, so the consent log is hashed as a host hashes it.
 */

/** The storage ports a store layer provides to the engine. */
export type EngineStore = StorePorts

/** Predictable ids in creation order: id-0001, id-0002, ... (they sort like creation order). */
export const idsLayer = Layer.sync(Ids, () => {
  let n = 0
  return { next: Effect.sync(() => `id-${String(++n).padStart(4, "0")}`) }
})

export const FAKE_HASH_PREFIX = "h:"

/** Hashing costs nothing here, and a test can tell which secret a stored hash is of. */
export const hasherLayer = Layer.succeed(SecretHasher, {
  hash: (secret) => Effect.succeed(FAKE_HASH_PREFIX + secret),
  verify: (secret, hash) => Effect.succeed(hash === FAKE_HASH_PREFIX + secret)
})

/** Secrets compared as they are: timing is not what a test looks at. */
export const secretComparerLayer = Layer.succeed(SecretComparer, {
  equals: (given, expected) => Effect.succeed(given === expected)
})

/** Token = the JSON of its claims, so a test can read them; verify parses it and checks `exp`. */
export const tokenLayer = Layer.succeed(TokenIssuer, {
  issue: (claims) => Effect.succeed(JSON.stringify(claims)),
  verify: (token, nowSeconds) =>
    Effect.suspend(() => {
      let claims: TokenClaims
      try {
        claims = JSON.parse(token) as TokenClaims
      } catch {
        return Effect.fail(new NotAuthenticated({ message: "Malformed token" }))
      }
      if (typeof claims !== "object" || claims === null || typeof claims.exp !== "number") {
        return Effect.fail(new NotAuthenticated({ message: "Malformed token" }))
      }
      if (claims.exp <= nowSeconds) return Effect.fail(new NotAuthenticated({ message: "The token has expired" }))
      if ("aud" in claims) return Effect.fail(new NotAuthenticated({ message: "Not an access token" }))
      return Effect.succeed(claims)
    }),
  issueConsent: (claims) => Effect.succeed(JSON.stringify({ ...claims, aud: "consent" })),
  verifyConsent: (token, nowSeconds) =>
    Effect.suspend(() => {
      let claims: ConsentTokenClaims & { aud?: string }
      try {
        claims = JSON.parse(token) as ConsentTokenClaims & { aud?: string }
      } catch {
        return Effect.fail(new NotAuthenticated({ message: "Malformed token" }))
      }
      if (typeof claims !== "object" || claims === null || claims.aud !== "consent" || typeof claims.exp !== "number") {
        return Effect.fail(new NotAuthenticated({ message: "Not a consent token" }))
      }
      if (claims.exp <= nowSeconds) return Effect.fail(new NotAuthenticated({ message: "The token has expired" }))
      return Effect.succeed(claims)
    })
})

/** A transparent "HMAC": the digest of `message` under `key` is `key|message`, so tests can make one. */
export const hmacLayer = Layer.succeed(Hmac, {
  verifySha256Hex: (key, message, digest) => Effect.succeed(digest === `${key}|${message}`)
})

/** A transparent "encryption": sealing is visible, so tests can see it happened. */
export const secretBoxLayer = Layer.succeed(SecretBox, {
  seal: (plaintext: string) => Effect.succeed(`sealed:${plaintext}`),
  open: (sealed: string) => Effect.succeed(sealed.replace(/^sealed:/, ""))
})

/** Production's canonical JSON (core's, the one every host encodes with) and real SHA-256. */
export const digestsLayer = Layer.succeed(Digests, {
  sha256: (data) => crypto.createHash("sha256").update(data).digest("hex"),
  canonicalJson
})

/** A file's type from its first bytes, for the types a test sends. */
export const mediaTypesLayer = Layer.succeed(MediaTypes, {
  detect: (bytes) => {
    const head = new TextDecoder("latin1").decode(bytes.subarray(0, 8))
    if (head.startsWith("%PDF")) return Effect.succeed("application/pdf" as const)
    if (bytes[0] === 0x89 && head.slice(1, 4) === "PNG") return Effect.succeed("image/png" as const)
    if (head.startsWith("GIF8")) return Effect.succeed("image/gif" as const)
    if (bytes[0] === 0xff && bytes[1] === 0xd8) return Effect.succeed("image/jpeg" as const)
    return Effect.succeed(undefined)
  }
})

/** A "PDF" that is the report's JSON, so a test can read what it says. */
export const reportPdfLayer = Layer.succeed(ReportPdf, {
  render: (report) => Effect.succeed(new TextEncoder().encode(JSON.stringify(report)))
})

/**
 * Consent strings decode as long as they are not empty, a GPP string's sections being its
 * `~`-separated parts after the first, numbered from 1 (the IAB libraries are a Node adapter's,
 * tested in platform-node).
 */
export const consentStringDecoderLayer = Layer.succeed(ConsentStringDecoder, {
  decodeGpp: (gpp) =>
    Effect.succeed(gpp === "" ?
      { _tag: "Undecodable" as const, reason: "empty" } :
      { _tag: "Decoded" as const, sectionIds: gpp.split("~").slice(1).map((_, i) => i + 1) }),
  decodeTc: (tcfcs) => Effect.succeed(tcfcs === "" ? { _tag: "Undecodable" as const, reason: "empty" } : { _tag: "Decoded" as const })
})

/** A fresh world on `store` (which must itself be fresh: an empty, migrated database), its consent writes logged. */
export const engineLayer = (store: Layer.Layer<EngineStore>, settings: Partial<SettingsShape> = {}) =>
  engineServices({
    store,
    ids: idsLayer,
    settings,
    adapters: Layer.mergeAll(
      hmacLayer,
      OutboxSignal.None,
      DeliveryHandOff.None,
      Metrics.none,
      hasherLayer,
      secretComparerLayer,
      tokenLayer,
      secretBoxLayer,
      digestsLayer,
      mediaTypesLayer,
      reportPdfLayer,
      consentStringDecoderLayer
    )
  })
