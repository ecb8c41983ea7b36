import { type ConsentTokenClaims, type ConsentTokenIssuer, Ids, NotAuthenticated, type TokenClaims, TokenIssuer } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { decodeJwt, decodeProtectedHeader, type JWTVerifyResult, jwtVerify, SignJWT } from "jose"
import type * as crypto from "node:crypto"
import { type TokenKeySource, tokenKeySource } from "./TokenKeys.js"

const kinds = new Set(["operator", "client", "member", "integration"])

/** The audience of consent tokens; access tokens carry none, so neither passes for the other. */
export const CONSENT_TOKEN_AUDIENCE = "urn:cmp:consent-token"

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const issuerKinds = new Set(["client", "operator", "integration", "member", "host"])

const isIssuer = (u: unknown): u is ConsentTokenIssuer =>
  isRecord(u) && typeof u.kind === "string" && issuerKinds.has(u.kind) && typeof u.id === "string"

/**
 * Verifies a token with the key its `kid` names; a token without one (signed before tokens named
 * their key) with each key that still verifies, the current one first.
 */
const verifyWith = (
  keys: TokenKeySource,
  token: string,
  verify: (key: crypto.KeyObject) => Promise<JWTVerifyResult>,
  invalid: NotAuthenticated
): Effect.Effect<JWTVerifyResult, NotAuthenticated> =>
  Effect.gen(function*() {
    const kid = yield* Effect.try({ try: () => decodeProtectedHeader(token).kid, catch: () => invalid })
    let candidates: ReadonlyArray<crypto.KeyObject> = []
    if (typeof kid === "string") {
      const named = yield* keys.forKid(kid)
      if (named !== undefined) candidates = [named]
    } else if (kid === undefined) {
      const ring = yield* keys.current
      candidates = [ring.key, ...[...ring.verifying.values()].filter((k) => k !== ring.key)]
    }
    for (const key of candidates) {
      const result = yield* Effect.promise(() => verify(key).then((r) => r, () => undefined))
      if (result !== undefined) return result
    }
    return yield* Effect.fail(invalid)
  })

/**
 * HS256 tokens via `jose`; only HS256 is accepted, so `alg: none` and other algorithms fail. Each
 * token names its signing key (`kid`): `JWT_SECRET` and `JWT_SECRET_PREVIOUS`, or the ring kept in
 * the database (`TokenKeys.ts`).
 */
/**
 * Whether a token names an audience, read without its signature: an access token never does, so
 * one that does is refused as an access token before the HMAC. Every write of an end user's app
 * is tried as an access token first (`authenticate`), and a refusal is not kept: its consent token
 * paid a whole verification, with its key's import, on each.
 */
const namesAudience = (token: string): boolean => {
  try {
    return decodeJwt(token).aud !== undefined
  } catch {
    return false
  }
}

const nbfOf = (payload: { readonly nbf?: unknown }, iat: number) => typeof payload.nbf === "number" ? payload.nbf : iat

/**
 * Tokens already verified, so a client's repeated calls skip the HMAC: the same bytes carry the
 * same valid signature. Time bounds are still checked on every call. `verify` runs on a miss only.
 */
const verifiedOnce = <C extends { readonly exp: number }>(invalid: NotAuthenticated) => {
  const kept = new Map<string, { readonly claims: C; readonly nbf: number }>()
  const check = (
    token: string,
    nowSeconds: number,
    verify: () => Effect.Effect<{ readonly claims: C; readonly nbf: number }, NotAuthenticated>
  ): Effect.Effect<C, NotAuthenticated> => {
    const hit = kept.get(token)
    if (hit) return hit.claims.exp > nowSeconds && hit.nbf <= nowSeconds ? Effect.succeed(hit.claims) : Effect.fail(invalid)
    return Effect.map(verify(), (verified) => {
      if (kept.size >= 10_000) kept.clear()
      kept.set(token, verified)
      return verified.claims
    })
  }
  /** Whether these bytes were verified once: their signature is good, whatever their time bounds now. */
  const holds = (token: string): boolean => kept.has(token)
  return { check, holds }
}

export const JoseTokensLive = (secret?: string, previous?: string) =>
  Layer.effect(
    TokenIssuer,
    Effect.gen(function*() {
      const keys = yield* tokenKeySource({ secret, previous })
      const ids = yield* Ids
      const invalid = new NotAuthenticated({ message: "Invalid or expired access token" })
      const invalidConsent = new NotAuthenticated({ message: "Invalid or expired consent token" })
      const verified = verifiedOnce<TokenClaims>(invalid)
      // An end user's app sends its consent token with every write.
      const verifiedConsent = verifiedOnce<ConsentTokenClaims>(invalidConsent)
      return {
        issueConsent: (claims: ConsentTokenClaims) =>
          Effect.flatMap(keys.current, ({ key, kid }) => Effect.promise(() =>
            new SignJWT({
              org: claims.org,
              ...(claims.issuer ? { issuer: claims.issuer } : {}),
              ...(claims.metadata ? { metadata: claims.metadata } : {}),
              ...(claims.delegate ? { delegate: claims.delegate } : {})
            })
              .setProtectedHeader({ alg: "HS256", typ: "JWT", kid })
              .setAudience(CONSENT_TOKEN_AUDIENCE)
              .setSubject(claims.sub)
              .setIssuedAt(claims.iat)
              .setNotBefore(claims.iat)
              .setExpirationTime(claims.exp)
              .setJti(claims.jti)
              .sign(key)
          )),
        verifyConsent: (token: string, nowSeconds: number) =>
          verifiedConsent.check(token, nowSeconds, () =>
            verifyWith(
              keys,
              token,
              (key) => jwtVerify(token, key, { algorithms: ["HS256"], audience: CONSENT_TOKEN_AUDIENCE, currentDate: new Date(nowSeconds * 1000) }),
              invalidConsent
            ).pipe(
              Effect.flatMap(({ payload }) => {
                const { delegate, exp, iat, issuer, jti, metadata, org, sub } = payload as Record<string, unknown>
                if (
                  typeof sub !== "string" || typeof org !== "string" || typeof jti !== "string" ||
                  typeof exp !== "number" || typeof iat !== "number" ||
                  (metadata !== undefined && !isRecord(metadata)) || (delegate !== undefined && !isRecord(delegate)) ||
                  (issuer !== undefined && !isIssuer(issuer))
                ) return Effect.fail(invalidConsent)
                // A token without an issuer was minted before tokens named one: the core refuses it.
                const named = issuer === undefined ? undefined : { kind: issuer.kind, id: issuer.id }
                const claims: ConsentTokenClaims = { jti, org, sub, iat, exp, metadata, delegate, issuer: named }
                return Effect.succeed({ claims, nbf: nbfOf(payload, iat) })
              })
            )),
        issue: (claims: TokenClaims) =>
          Effect.flatMap(Effect.zip(ids.next, keys.current), ([jti, { key, kid }]) =>
            Effect.promise(() =>
              new SignJWT({ kind: claims.kind, ...(claims.org ? { org: claims.org } : {}) })
                .setProtectedHeader({ alg: "HS256", typ: "JWT", kid })
                .setSubject(claims.sub)
                .setIssuedAt(claims.iat)
                .setNotBefore(claims.iat)
                .setExpirationTime(claims.exp)
                .setJti(jti)
                .sign(key)
            )),
        // A consent token already verified names the consent audience: no access token, and
        // not worth decoding again to find so on each of its writes.
        verify: (token: string, nowSeconds: number) =>
          verifiedConsent.holds(token) ? Effect.fail(invalid) : verified.check(token, nowSeconds, () =>
            namesAudience(token) ? Effect.fail(invalid) : verifyWith(
              keys,
              token,
              (key) => jwtVerify(token, key, { algorithms: ["HS256"], currentDate: new Date(nowSeconds * 1000) }),
              invalid
            ).pipe(
              Effect.flatMap(({ payload }) => {
                const { aud, exp, iat, kind, org, sub } = payload as Record<string, unknown>
                if (
                  aud !== undefined ||
                  typeof sub !== "string" || typeof exp !== "number" || typeof iat !== "number" ||
                  typeof kind !== "string" || !kinds.has(kind) || (org !== undefined && typeof org !== "string")
                ) return Effect.fail(invalid)
                const claims = { sub, exp, iat, kind, org } as TokenClaims
                return Effect.succeed({ claims, nbf: nbfOf(payload, iat) })
              })
            ))
      }
    })
  )
