import { type ConsentReceipt, ReceiptSigner, SecretBox, Storage, Tables } from "@cmp/core"
import { SqliteStore } from "@cmp/store-sqlite"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { decodeProtectedHeader } from "jose"
import { AesSecretBoxLive, ReceiptSignerLive, rotateReceiptKey, verifyReceipt } from "../src/index.js"

/** The receipt key ring on a store: made once for every server of it, sealed, rotated; and the offline check. */

const receipt = {
  schema_version: "urn:cmp:consent-receipt:1",
  receipt_id: "r-1",
  record_id: "00000000-0000-8000-8000-000000000000",
  created_at: "2026-01-01T00:00:00.000Z",
  pii_principal_id: "u-1",
  controller: { id: "o-1", name: "Acme" },
  jurisdiction: "gdpr",
  consent_state: "given",
  processing: [{ purpose_id: "analytics", legal_basis: "consent", state: "given" }],
  vendors: { enabled: [], disabled: [], enabled_li: [], disabled_li: [] },
  events: [],
  events_complete: true,
  log_head: "0".repeat(64)
} satisfies ConsentReceipt

/** Two servers' signers on one store, and its secret box. */
const twoServers = Effect.gen(function*() {
  const context = yield* Layer.build(AesSecretBoxLive().pipe(Layer.provideMerge(SqliteStore.layer({ filename: ":memory:" }))))
  const signer = () => Effect.map(Layer.build(ReceiptSignerLive.pipe(Layer.provide(Layer.succeedContext(context)))), (c) => Context.get(c, ReceiptSigner))
  return { context, a: yield* signer(), b: yield* signer() }
})

describe("receipt signing keys", () => {
  it.scoped("two servers' first receipts at once are signed with one key, kept sealed", () =>
    Effect.gen(function*() {
      const { a, b, context } = yield* twoServers
      const [ja, jb] = yield* Effect.all([a.sign(receipt), b.sign(receipt)], { concurrency: 2 })
      assert.strictEqual(decodeProtectedHeader(ja).kid, decodeProtectedHeader(jb).kid)
      const keys = yield* a.publicKeys
      assert.strictEqual(keys.length, 1)
      assert.deepStrictEqual(yield* b.publicKeys, keys)
      const row = yield* Effect.provide(Effect.flatMap(Storage, (s) => s.repository(Tables.settings).get("receipt_signing_keys")), context)
      const ring = JSON.parse(Option.getOrThrow(row).value)
      assert.notInclude(Option.getOrThrow(row).value, "PRIVATE KEY")
      const opened = yield* Effect.provide(Effect.flatMap(SecretBox, (box) => box.open(ring.keys[0].sealed)), context)
      assert.match(opened, /^-----BEGIN PRIVATE KEY-----/)
      const verified = yield* Effect.promise(() => verifyReceipt({ receipt, jws: ja }, { keys: [...keys] }))
      assert.isTrue(verified.valid)
    }))

  it.scoped("a rotation retires the key: its private half is dropped, its public key stays", () =>
    Effect.gen(function*() {
      const { a, context } = yield* twoServers
      const before = yield* a.sign(receipt)
      const rotated = yield* Effect.provide(rotateReceiptKey, context)
      assert.deepStrictEqual(rotated.retired, [decodeProtectedHeader(before).kid!])
      const row = yield* Effect.provide(Effect.flatMap(Storage, (s) => s.repository(Tables.settings).get("receipt_signing_keys")), context)
      const ring = JSON.parse(Option.getOrThrow(row).value)
      assert.strictEqual(ring.current, rotated.kid)
      assert.deepStrictEqual(ring.keys.map((k: { sealed?: string }) => k.sealed !== undefined), [true, false])
      // A signer made after the rotation signs with the new key; both verify against the ring.
      const after = yield* Effect.map(Layer.build(ReceiptSignerLive.pipe(Layer.provide(Layer.succeedContext(context)))), (c) => Context.get(c, ReceiptSigner))
      const signed = yield* after.sign(receipt)
      assert.strictEqual(decodeProtectedHeader(signed).kid, rotated.kid)
      const keys = { keys: [...(yield* after.publicKeys)] }
      for (const jws of [before, signed]) assert.isTrue((yield* Effect.promise(() => verifyReceipt({ receipt, jws }, keys))).valid)
    }))
})

describe("verifyReceipt", () => {
  it.scoped("refuses another key's signature, a changed receipt, and what is not a JWS", () =>
    Effect.gen(function*() {
      const { a } = yield* twoServers
      const { a: other } = yield* twoServers
      const jws = yield* a.sign(receipt)
      const keys = { keys: [...(yield* a.publicKeys)] }
      const check = (input: unknown, set = keys) => Effect.promise(() => verifyReceipt(input, set))
      assert.isTrue((yield* check(jws)).valid)
      const unknownKey = yield* check(yield* other.sign(receipt))
      assert.isFalse(unknownKey.valid)
      assert.match(unknownKey.valid ? "" : unknownKey.reason, /^no key .* in the key set/)
      const changed = yield* check({ receipt: { ...receipt, consent_state: "refused" }, jws })
      assert.deepInclude(changed, { valid: false, reason: "the receipt differs from what the JWS signs" })
      // Another key set under the same kid: the signature does not verify.
      const swapped = { keys: [{ ...(yield* other.publicKeys)[0]!, kid: keys.keys[0]!.kid }] }
      assert.deepInclude(yield* check(jws, swapped), { valid: false, reason: "the signature does not verify" })
      assert.deepInclude(yield* check({ nothing: true }), { valid: false })
      assert.deepInclude(yield* check("not.a.jws"), { valid: false })
    }))
})
