import { Ids, SecretBox, Storage, Tables } from "@cmp/core"
import { SqliteStore } from "@cmp/store-sqlite"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as crypto from "node:crypto"
import { AesSecretBoxLive, secretBoxKeyId } from "../src/index.js"

/**
 * The secret box across a change of key: what it seals names its key (`v2.<kid>.…`), a new key
 * seals while the previous one (or a key kept in the database) still opens, `v1` values (which
 * name no key) open with whichever key sealed them, and a value no key given opens is a defect
 * that says so.
 */

const A = crypto.randomBytes(32)
const B = crypto.randomBytes(32)
const hexOf = (k: Buffer) => k.toString("hex")

const defectOf = <X, E>(exit: Exit.Exit<X, E>) => (Exit.isFailure(exit) ? Option.getOrUndefined(Cause.dieOption(exit.cause)) : undefined)

/** The boxes of one store, as servers of one database with different settings. */
const withStore = <X>(f: (boxOf: (key?: string, previous?: string) => Effect.Effect<SecretBox["Type"]>) => Effect.Effect<X, unknown, Storage>) =>
  Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(Layer.merge(SqliteStore.layer({ filename: ":memory:" }), Ids.Live))
    const boxOf = (key?: string, previous?: string) =>
      Effect.provide(SecretBox, AesSecretBoxLive(key, previous).pipe(Layer.provide(Layer.succeedContext(context)))).pipe(Effect.orDie)
    return yield* Effect.provide(f(boxOf), context)
  }))

/** A value sealed as before keys were named: `v1.<iv>.<tag>.<ciphertext>`. */
const sealV1 = (key: Buffer, plaintext: string) => {
  const iv = crypto.randomBytes(12)
  const cipher = crypto.createCipheriv("aes-256-gcm", key, iv)
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
  return ["v1", iv, cipher.getAuthTag(), body].map((p) => (typeof p === "string" ? p : p.toString("base64url"))).join(".")
}

describe("secret box keys", () => {
  it.effect("seals v2.<kid>.<iv>.<tag>.<ciphertext>, the kid a short digest of the key, the same for hex and base64", () =>
    withStore((boxOf) =>
      Effect.gen(function*() {
        const box = yield* boxOf(hexOf(A))
        const sealed = yield* box.seal("whsec_abc")
        const parts = sealed.split(".")
        assert.strictEqual(parts.length, 5)
        assert.strictEqual(parts[0], "v2")
        assert.strictEqual(parts[1], secretBoxKeyId(A))
        assert.match(parts[1]!, /^[\w-]{8}$/)
        assert.strictEqual(parts[1], crypto.createHash("sha256").update(A).digest().subarray(0, 6).toString("base64url"))
        assert.notStrictEqual(secretBoxKeyId(A), secretBoxKeyId(B))
        assert.notInclude(sealed, "whsec_abc")
        assert.strictEqual(yield* box.open(sealed), "whsec_abc")
        // The same key written in base64 is the same key.
        const base64 = yield* boxOf(A.toString("base64"))
        assert.strictEqual(yield* base64.open(sealed), "whsec_abc")
        assert.strictEqual((yield* base64.seal("x")).split(".")[1], secretBoxKeyId(A))
      })))

  it.effect("a new key seals, the previous one still opens; each alone opens only its own", () =>
    withStore((boxOf) =>
      Effect.gen(function*() {
        const onlyA = yield* boxOf(hexOf(A))
        const underA = yield* onlyA.seal("secret-a")
        const rotated = yield* boxOf(hexOf(B), hexOf(A))
        assert.strictEqual(yield* rotated.open(underA), "secret-a")
        const underB = yield* rotated.seal("secret-b")
        assert.strictEqual(underB.split(".")[1], secretBoxKeyId(B))
        assert.strictEqual(yield* rotated.open(underB), "secret-b")
        const onlyB = yield* boxOf(hexOf(B))
        assert.strictEqual(yield* onlyB.open(underB), "secret-b")
        // A value of a key not given: a defect naming that key's id, never the value.
        const missing = String(defectOf(yield* Effect.exit(onlyB.open(underA))))
        assert.include(missing, "could not be opened")
        assert.include(missing, secretBoxKeyId(A))
        assert.include(missing, "ENCRYPTION_KEY")
        assert.match(String(defectOf(yield* Effect.exit(onlyA.open(underB)))), /could not be opened/)
        // The previous key given the other way round opens too (the first step of a rotation on several servers).
        const openerB = yield* boxOf(hexOf(A), hexOf(B))
        assert.strictEqual(yield* openerB.open(underB), "secret-b")
        assert.strictEqual((yield* openerB.seal("x")).split(".")[1], secretBoxKeyId(A))
      })))

  it.effect("v1 values open by trying each key: GCM's tag refuses the wrong one", () =>
    withStore((boxOf) =>
      Effect.gen(function*() {
        const oldA = sealV1(A, "from-a")
        const oldB = sealV1(B, "from-b")
        const both = yield* boxOf(hexOf(B), hexOf(A))
        assert.strictEqual(yield* both.open(oldA), "from-a")
        assert.strictEqual(yield* both.open(oldB), "from-b")
        assert.strictEqual(yield* (yield* boxOf(hexOf(A))).open(oldA), "from-a")
        assert.match(String(defectOf(yield* Effect.exit((yield* boxOf(hexOf(B))).open(oldA)))), /none of the keys given opens it/)
      })))

  it.effect("a tampered value, a kid changed to another known key's, or no sealed value at all does not open", () =>
    withStore((boxOf) =>
      Effect.gen(function*() {
        const box = yield* boxOf(hexOf(B), hexOf(A))
        const sealed = yield* box.seal("whsec_abc")
        const parts = sealed.split(".")
        const tampered = [...parts.slice(0, 4), Buffer.from("x").toString("base64url")].join(".")
        assert.isDefined(defectOf(yield* Effect.exit(box.open(tampered))))
        const otherKid = [parts[0], secretBoxKeyId(A), ...parts.slice(2)].join(".")
        assert.isDefined(defectOf(yield* Effect.exit(box.open(otherKid))))
        assert.match(String(defectOf(yield* Effect.exit(box.open("whsec_abc")))), /not a sealed value/)
        assert.match(String(defectOf(yield* Effect.exit(box.open("v3.a.b.c.d")))), /not a sealed value/)
      })))

  it.effect("the key kept in the database (no ENCRYPTION_KEY) still opens once ENCRYPTION_KEY is set; a database without one gets none", () =>
    withStore((boxOf) =>
      Effect.gen(function*() {
        const settings = (yield* Storage).repository(Tables.settings)
        const external = yield* boxOf(hexOf(B))
        yield* external.seal("x")
        assert.isTrue(Option.isNone(yield* settings.get("secret_box_key")))
        const kept = yield* boxOf()
        const underKept = yield* kept.seal("kept-secret")
        const keptKey = Buffer.from((Option.getOrThrow(yield* settings.get("secret_box_key"))).value as string, "base64")
        assert.strictEqual(underKept.split(".")[1], secretBoxKeyId(keptKey))
        assert.strictEqual(yield* (yield* boxOf(hexOf(B))).open(underKept), "kept-secret")
        assert.strictEqual(yield* (yield* boxOf(hexOf(B))).open(sealV1(keptKey, "older")), "older")
      })))

  it.effect("ENCRYPTION_KEY_PREVIOUS of the wrong length is refused at start, naming it", () =>
    withStore((boxOf) =>
      Effect.gen(function*() {
        const exit = yield* Effect.exit(boxOf(hexOf(B), "too-short"))
        assert.match(String(defectOf(exit)), /ENCRYPTION_KEY_PREVIOUS must be 32 bytes/)
      })))
})
