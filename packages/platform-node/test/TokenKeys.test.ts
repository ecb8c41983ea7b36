import { Ids, nowIso, Storage, Tables, type TokenClaims, TokenIssuer } from "@cmp/core"
import { SqliteStore } from "@cmp/store-sqlite"
import { assert, describe, it } from "@effect/vitest"
import { vi } from "vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { decodeProtectedHeader, SignJWT } from "jose"
import * as crypto from "node:crypto"
import { JoseTokensLive, RETIRED_KEY_LIFETIME_MS, rotateTokenKey, TOKEN_KEY_TTL_MS, tokenKeyId } from "../src/index.js"

/**
 * The token signing keys: every token names its key, every server of one database signs with the
 * ring's current key and verifies with each key still in it, a rotation reaches them all, a
 * retired key verifies for as long as a token it signed may live, and the configured keys rotate
 * through `JWT_SECRET_PREVIOUS`.
 */

const day = 86_400

/** One database, and a server's token issuer on it (as many as asked, each with its own memory). */
const database = Effect.gen(function*() {
  const context = yield* Layer.build(Layer.merge(SqliteStore.layer({ filename: ":memory:" }), Ids.Live))
  const server = (secret?: string, previous?: string) =>
    Effect.map(Layer.build(JoseTokensLive(secret, previous).pipe(Layer.provide(Layer.succeedContext(context)))), (c) => Context.get(c, TokenIssuer))
  return { context, server }
})

const nowSeconds = Effect.map(nowIso, (iso) => Math.floor(Date.parse(iso) / 1000))

/** An access token's claims from now on, for `lifetime` seconds. */
const claims = (lifetime = 3600) => Effect.map(nowSeconds, (iat): TokenClaims => ({ sub: "key-1", kind: "client", org: "org-1", iat, exp: iat + lifetime }))

const kidOf = (token: string) => decodeProtectedHeader(token).kid

describe("token signing keys kept in the database", () => {
  it.scoped("every server of one database signs with one key, which each token names; each verifies the others' tokens", () =>
    Effect.gen(function*() {
      const { server } = yield* database
      const [a, b] = yield* Effect.all([server(), server()], { concurrency: 2 })
      const [ta, tb] = yield* Effect.all([Effect.flatMap(claims(), a.issue), Effect.flatMap(claims(), b.issue)], { concurrency: 2 })
      assert.match(kidOf(ta)!, /^k[\w-]{16}$/)
      assert.strictEqual(kidOf(ta), kidOf(tb))
      const now = yield* nowSeconds
      assert.strictEqual((yield* b.verify(ta, now)).sub, "key-1")
      assert.strictEqual((yield* a.verify(tb, now)).sub, "key-1")
    }))

  it.scoped("a rotation: new tokens name the new key within a minute, old ones still verify, and a server that has not read the ring yet verifies the new key's tokens at once", () =>
    Effect.gen(function*() {
      const { context, server } = yield* database
      const a = yield* server()
      const b = yield* server()
      const before = yield* Effect.flatMap(claims(), a.issue)
      const consentBefore = yield* Effect.flatMap(nowSeconds, (iat) =>
        a.issueConsent({ jti: "t-1", org: "org-1", sub: "u-1", iat, exp: iat + 31 * day, issuer: { kind: "client", id: "key-1" } }))
      const rotated = yield* Effect.provide(rotateTokenKey, context)
      assert.deepStrictEqual(rotated.verifying, [kidOf(before)!])
      assert.notStrictEqual(rotated.kid, kidOf(before))
      // A server started after the rotation signs with the new key at once.
      const c = yield* server()
      const fromC = yield* Effect.flatMap(claims(), c.issue)
      assert.strictEqual(kidOf(fromC), rotated.kid)
      // The others read the ring a minute at most after they last did: until then they sign with the old key...
      yield* TestClock.adjust(TOKEN_KEY_TTL_MS / 2)
      assert.strictEqual(kidOf(yield* Effect.flatMap(claims(), a.issue)), kidOf(before))
      // ...and verify a token of the new key at once.
      const now = yield* nowSeconds
      assert.strictEqual((yield* b.verify(fromC, now)).sub, "key-1")
      yield* TestClock.adjust(TOKEN_KEY_TTL_MS)
      assert.strictEqual(kidOf(yield* Effect.flatMap(claims(), a.issue)), rotated.kid)
      // Tokens of the retired key keep verifying everywhere while they live, a consent token's 31 days too.
      for (const s of [a, b, c]) {
        assert.strictEqual((yield* s.verify(before, yield* nowSeconds)).sub, "key-1")
      }
      yield* TestClock.adjust(30 * day * 1000)
      for (const s of [a, b, c]) {
        assert.strictEqual((yield* s.verifyConsent(consentBefore, yield* nowSeconds)).sub, "u-1")
      }
    }))

  it.scoped("a retired key is dropped once every token it signed has expired: then nothing it signed verifies", () =>
    Effect.gen(function*() {
      const { context, server } = yield* database
      const a = yield* server()
      // Longer-lived than any token the platform makes, to show the key itself is gone.
      const longLived = yield* Effect.flatMap(claims(40 * day), a.issue)
      const stillFresh = yield* Effect.flatMap(claims(40 * day), a.issue)
      yield* Effect.provide(rotateTokenKey, context)
      yield* TestClock.adjust(RETIRED_KEY_LIFETIME_MS - 60_000 - TOKEN_KEY_TTL_MS)
      assert.strictEqual((yield* a.verify(stillFresh, yield* nowSeconds)).sub, "key-1")
      yield* TestClock.adjust(TOKEN_KEY_TTL_MS + 120_000)
      const refused = yield* Effect.flip(a.verify(longLived, yield* nowSeconds))
      assert.strictEqual(refused._tag, "NotAuthenticated")
      // The next rotation removes it from the ring for good.
      const next = yield* Effect.provide(rotateTokenKey, context)
      assert.strictEqual(next.verifying.length, 1)
    }))

  it.scoped("the single key kept before rings becomes the ring's first key: tokens it signed, naming no key, still verify", () =>
    Effect.gen(function*() {
      const { context, server } = yield* database
      const legacy = crypto.randomBytes(32)
      const now = yield* nowIso
      yield* Effect.provide(
        Effect.flatMap(Storage, (s) =>
          s.repository(Tables.settings).create({ id: "jwt_secret", value: legacy.toString("base64"), created_at: now, updated_at: now, version: 1 })),
        context
      )
      const iat = yield* nowSeconds
      const old = yield* Effect.promise(() =>
        new SignJWT({ kind: "client", org: "org-1" }).setProtectedHeader({ alg: "HS256", typ: "JWT" }).setSubject("key-1").setIssuedAt(iat)
          .setNotBefore(iat).setExpirationTime(iat + 3600).setJti("j-1").sign(legacy))
      const a = yield* server()
      assert.strictEqual((yield* a.verify(old, iat)).sub, "key-1")
      assert.strictEqual(kidOf(yield* Effect.flatMap(claims(), a.issue)), tokenKeyId(legacy))
      // Still after a rotation: a token naming no key is tried with each key that verifies.
      yield* Effect.provide(rotateTokenKey, context)
      const b = yield* server()
      assert.strictEqual((yield* b.verify(old, iat)).sub, "key-1")
      const row = yield* Effect.provide(Effect.flatMap(Storage, (s) => s.repository(Tables.settings).get("jwt_signing_keys")), context)
      assert.isTrue(Option.isSome(row))
    }))

  it.scoped("a consent token verified once is still refused outside its lifetime, and a copy with another signature is refused", () =>
    Effect.gen(function*() {
      const { server } = yield* database
      const a = yield* server()
      const iat = yield* nowSeconds
      const token = yield* a.issueConsent({ jti: "j-1", org: "org-1", sub: "u-1", iat, exp: iat + 60, issuer: { kind: "client", id: "key-1" } })
      assert.strictEqual((yield* a.verifyConsent(token, iat)).sub, "u-1")
      // The second call is answered from what the first verified: the same bounds hold.
      assert.strictEqual((yield* a.verifyConsent(token, iat + 59)).sub, "u-1")
      assert.strictEqual((yield* Effect.flip(a.verifyConsent(token, iat + 60)))._tag, "NotAuthenticated")
      assert.strictEqual((yield* Effect.flip(a.verifyConsent(token, iat - 1)))._tag, "NotAuthenticated")
      const [header, payload, signature] = token.split(".")
      const other = `${header}.${payload}.${signature!.startsWith("A") ? "B" : "A"}${signature!.slice(1)}`
      assert.strictEqual((yield* Effect.flip(a.verifyConsent(other, iat)))._tag, "NotAuthenticated")
    }))

  it.scoped("a consent token offered as an access token is refused without checking its signature", () =>
    Effect.gen(function*() {
      const { server } = yield* database
      const a = yield* server()
      const iat = yield* nowSeconds
      const token = yield* a.issueConsent({ jti: "j-2", org: "org-1", sub: "u-2", iat, exp: iat + 60, issuer: { kind: "client", id: "key-1" } })
      const access = yield* a.issue(yield* claims())
      const spy = vi.spyOn(globalThis.crypto.subtle, "verify")
      yield* Effect.addFinalizer(() => Effect.sync(() => spy.mockRestore()))
      // An end user's app sends its consent token with every write; each is tried as an access token first.
      for (let i = 0; i < 3; i++) assert.strictEqual((yield* Effect.flip(a.verify(token, iat)))._tag, "NotAuthenticated")
      assert.strictEqual(spy.mock.calls.length, 0)
      // An access token is still verified (once), and a consent token as what it is.
      assert.strictEqual((yield* a.verify(access, iat)).sub, "key-1")
      assert.strictEqual((yield* a.verifyConsent(token, iat)).sub, "u-2")
      assert.strictEqual(spy.mock.calls.length, 2)
    }))

  it.scoped("a token naming an unknown key, signed with another key, or with alg none is refused", () =>
    Effect.gen(function*() {
      const { server } = yield* database
      const a = yield* server()
      const iat = yield* nowSeconds
      const sign = (kid: string | undefined, key: Uint8Array) =>
        Effect.promise(() =>
          new SignJWT({ kind: "client", org: "org-1" }).setProtectedHeader({ alg: "HS256", typ: "JWT", ...(kid ? { kid } : {}) })
            .setSubject("key-1").setIssuedAt(iat).setExpirationTime(iat + 3600).sign(key))
      const good = yield* Effect.flatMap(claims(), a.issue)
      const forged = [
        yield* sign(kidOf(good), crypto.randomBytes(32)),
        yield* sign("k-unknown-key-0000", crypto.randomBytes(32)),
        yield* sign(undefined, crypto.randomBytes(32)),
        `${Buffer.from(JSON.stringify({ alg: "none", kid: kidOf(good) })).toString("base64url")}.${good.split(".")[1]}.`,
        "not a token"
      ]
      for (const token of forged) {
        assert.strictEqual((yield* Effect.flip(a.verify(token, iat)))._tag, "NotAuthenticated", token)
      }
    }))
})

describe("configured token signing keys", () => {
  const first = "first-signing-secret-0123456789-abcdef"
  const second = "second-signing-secret-0123456789-abcdef"

  it.scoped("JWT_SECRET_PREVIOUS verifies the tokens of the key JWT_SECRET replaced; without it they are refused", () =>
    Effect.gen(function*() {
      const { server } = yield* database
      const before = yield* server(first)
      const token = yield* Effect.flatMap(claims(), before.issue)
      assert.strictEqual(kidOf(token), tokenKeyId(new TextEncoder().encode(first)))
      const rotated = yield* server(second, first)
      const now = yield* nowSeconds
      assert.strictEqual((yield* rotated.verify(token, now)).sub, "key-1")
      const fresh = yield* Effect.flatMap(claims(), rotated.issue)
      assert.strictEqual(kidOf(fresh), tokenKeyId(new TextEncoder().encode(second)))
      // A server still on the old key verifies nothing of the new one; one without the previous key nothing of the old.
      assert.strictEqual((yield* Effect.flip(before.verify(fresh, now)))._tag, "NotAuthenticated")
      const dropped = yield* server(second)
      assert.strictEqual((yield* Effect.flip(dropped.verify(token, now)))._tag, "NotAuthenticated")
      assert.strictEqual((yield* dropped.verify(fresh, now)).sub, "key-1")
    }))
})
