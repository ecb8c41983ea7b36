import { type ConsentReceipt, nowIso, type ReceiptKey, ReceiptSigner, recordOperatorCommand, SecretBox, Storage, Tables } from "@cmp/core"
import canonicalize from "canonicalize"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { calculateJwkThumbprint, CompactSign } from "jose"
import * as crypto from "node:crypto"

/**
 * The receipt signing keys: Ed25519 pairs kept in the settings table as one row (the key ring),
 * the current key's private half sealed by the secret box, every retired key's public half
 * kept so receipts it signed still verify. Made on first use; the loser of two first uses at
 * once reads the winner's ring, so every server of one database signs with the same key.
 */

const RING_SETTING = "receipt_signing_keys"

/** How long a server keeps the ring it read: a rotation reaches every server within this. */
export const RECEIPT_KEY_TTL_MS = 60_000

interface KeptReceiptKey {
  readonly kid: string
  readonly jwk: { readonly kty: string; readonly crv: string; readonly x: string }
  /** The private key (PKCS #8 PEM), sealed; dropped when the key is retired, so nothing signs with it again. */
  readonly sealed?: string | undefined
  readonly created_at: string
  readonly retired_at?: string | undefined
}

/** The ring as kept: the current key first. */
interface KeyRing {
  readonly current: string
  readonly keys: ReadonlyArray<KeptReceiptKey>
}

const newKey = Effect.gen(function*() {
  const { privateKey, publicKey } = crypto.generateKeyPairSync("ed25519")
  const exported = publicKey.export({ format: "jwk" })
  const jwk = { kty: String(exported.kty), crv: String(exported.crv), x: String(exported.x) }
  const kid = yield* Effect.promise(() => calculateJwkThumbprint(jwk, "sha256"))
  const sealed = yield* Effect.flatMap(SecretBox, (box) => box.seal(String(privateKey.export({ format: "pem", type: "pkcs8" }))))
  return { kid, jwk, sealed, created_at: yield* nowIso } satisfies KeptReceiptKey
})

const parseRing = (value: string): KeyRing => JSON.parse(value) as KeyRing

/** The ring, made with its first key when there is none (a concurrent first use reads the winner's). */
const readRing = Effect.gen(function*() {
  const repo = (yield* Storage).repository(Tables.settings)
  const existing = yield* repo.get(RING_SETTING)
  if (Option.isSome(existing)) return parseRing(existing.value.value)
  const first = yield* newKey
  const ring: KeyRing = { current: first.kid, keys: [first] }
  const now = yield* nowIso
  return yield* repo.create({ id: RING_SETTING, value: JSON.stringify(ring), created_at: now, updated_at: now, version: 1 }).pipe(
    Effect.as(ring),
    Effect.catchTag("Conflict", () => Effect.map(repo.get(RING_SETTING), (o) => parseRing(Option.getOrThrow(o).value)))
  )
})

/**
 * Makes a new key current and retires the others (their public keys stay published, their
 * private keys are dropped). Servers sign with it within `RECEIPT_KEY_TTL_MS`. Answers the new
 * key's id and the retired ones'.
 */
export const rotateReceiptKey: Effect.Effect<{ readonly kid: string; readonly retired: ReadonlyArray<string> }, never, Storage | SecretBox> =
  Effect.gen(function*() {
    const repo = (yield* Storage).repository(Tables.settings)
    for (;;) {
      yield* readRing
      const row = Option.getOrThrow(yield* repo.get(RING_SETTING))
      const ring = parseRing(row.value)
      const next = yield* newKey
      const now = yield* nowIso
      const retired = ring.keys.map(({ sealed: _dropped, ...k }): KeptReceiptKey => ({ ...k, retired_at: k.retired_at ?? now }))
      const rotated: KeyRing = { current: next.kid, keys: [next, ...retired] }
      // A rotation at once elsewhere moved the version: start again from its ring.
      const done = yield* repo.patch(RING_SETTING, { value: JSON.stringify(rotated), updated_at: now }, row.version).pipe(
        Effect.as(true),
        Effect.catchAll(() => Effect.succeed(false))
      )
      if (done) {
        yield* recordOperatorCommand("receipt-signing-keys", next.kid, "rotate-receipt-key", ["key"])
        return { kid: next.kid, retired: retired.map((k) => k.kid) }
      }
    }
  })

/**
 * Re-seals the ring's private keys with `reseal` (what it answers `undefined` for stays as it
 * is), written only over the ring read (its version): a rotation at once elsewhere is never
 * written over, and the ring is read again. Answers the sealed values of the ring it re-sealed.
 */
export const resealReceiptKeys = (reseal: (sealed: string) => string | undefined): Effect.Effect<ReadonlyArray<string>, never, Storage> =>
  Effect.gen(function*() {
    const repo = (yield* Storage).repository(Tables.settings)
    for (;;) {
      const row = yield* repo.get(RING_SETTING)
      if (Option.isNone(row)) return []
      const ring = parseRing(row.value.value)
      const sealed = ring.keys.flatMap((k) => (k.sealed === undefined ? [] : [k.sealed]))
      let changed = false
      const keys = ring.keys.map((k) => {
        const next = k.sealed === undefined ? undefined : reseal(k.sealed)
        if (next === undefined) return k
        changed = true
        return { ...k, sealed: next }
      })
      if (!changed) return sealed
      const done = yield* repo.patch(RING_SETTING, { value: JSON.stringify({ ...ring, keys }), updated_at: yield* nowIso }, row.value.version).pipe(
        Effect.as(true),
        Effect.catchAll(() => Effect.succeed(false))
      )
      if (done) return sealed
    }
  })

const publicOf = (k: KeptReceiptKey): ReceiptKey => ({ ...k.jwk, kid: k.kid, alg: "EdDSA", use: "sig" })

/** The ring's current key, ready to sign, and every public key. */
interface Loaded {
  readonly kid: string
  readonly key: crypto.KeyObject
  readonly publicKeys: ReadonlyArray<ReceiptKey>
}

/**
 * `ReceiptSigner` on the kept ring. The ring is read at most once per `RECEIPT_KEY_TTL_MS` (on
 * the platform's clock) and its private key opened then, not at every receipt.
 */
export const ReceiptSignerLive: Layer.Layer<ReceiptSigner, never, Storage | SecretBox> = Layer.effect(
  ReceiptSigner,
  Effect.gen(function*() {
    const context = yield* Effect.context<Storage | SecretBox>()
    let kept: { readonly loaded: Loaded; readonly at: number } | undefined
    const load = Effect.gen(function*() {
      const ring = yield* readRing
      const current = ring.keys.find((k) => k.kid === ring.current && k.sealed !== undefined)
      if (current === undefined) return yield* Effect.dieMessage("The receipt key ring has no current private key")
      const pem = yield* Effect.flatMap(SecretBox, (box) => box.open(current.sealed!))
      return { kid: current.kid, key: crypto.createPrivateKey(pem), publicKeys: ring.keys.map(publicOf) } satisfies Loaded
    })
    const loaded = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      if (kept !== undefined && now - kept.at < RECEIPT_KEY_TTL_MS && now >= kept.at) return kept.loaded
      const fresh = yield* Effect.provide(load, context)
      kept = { loaded: fresh, at: now }
      return fresh
    })
    return {
      sign: (receipt: ConsentReceipt) =>
        Effect.flatMap(loaded, ({ key, kid }) =>
          Effect.promise(() =>
            new CompactSign(new TextEncoder().encode(canonicalize(receipt)!)).setProtectedHeader({ alg: "EdDSA", kid }).sign(key)
          )),
      publicKeys: Effect.map(loaded, (l) => l.publicKeys)
    }
  })
)
