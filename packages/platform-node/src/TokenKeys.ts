import { nowIso, recordOperatorCommand, Storage, Tables } from "@cmp/core"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as crypto from "node:crypto"

/**
 * The keys access tokens and consent tokens are signed with (HS256), as a ring: one current key
 * signs, every key of the ring verifies, each token names its key (`kid`). A key is retired by a
 * rotation and kept for verifying until the last token it could have signed has expired, then
 * dropped. Two sources:
 *
 * - configured (`JWT_SECRET`, and its predecessor `JWT_SECRET_PREVIOUS` while tokens it signed
 *   live): the operator rotates by moving the old value to `JWT_SECRET_PREVIOUS`;
 * - kept in the settings table (no `JWT_SECRET`): one row holding the ring, made on first use
 *   (from the single key kept before rings, so its tokens still verify), rotated by the
 *   `rotate-token-key` command. Every server re-reads the ring at least once a minute, and at
 *   once (at most once a second) for a token naming a key it does not know, so a token signed
 *   by a server that already saw a rotation verifies everywhere.
 */

const RING_SETTING = "jwt_signing_keys"
/** The single key kept before rings: the first key of the ring made from it. */
const LEGACY_SETTING = "jwt_secret"

/** How long a server signs with the ring it read: a rotation reaches every server's signing within this. */
export const TOKEN_KEY_TTL_MS = 60_000
/** A token naming an unknown key makes the ring be read again, at most this often. */
const UNKNOWN_KID_RELOAD_MS = 1_000
/**
 * How long a retired key still verifies: the longest a token lives (a consent token, 31 days)
 * and a day's margin for clocks and tokens signed just before a rotation reached a server.
 */
export const RETIRED_KEY_LIFETIME_MS = 32 * 86_400_000

/** A key's id: the start of its SHA-256, which names it without telling anything of it. */
export const tokenKeyId = (bytes: Uint8Array): string =>
  `k${crypto.createHash("sha256").update(bytes).digest("base64url").slice(0, 16)}`

interface KeptTokenKey {
  readonly kid: string
  /** The key's 32 bytes, base64, as the single kept key was. */
  readonly value: string
  readonly created_at: string
  readonly retired_at?: string | undefined
}

interface KeptRing {
  readonly current: string
  readonly keys: ReadonlyArray<KeptTokenKey>
}

/** The keys as a server uses them. */
export interface TokenKeys {
  readonly kid: string
  readonly key: crypto.KeyObject
  /** Every key that verifies, by id, the current one included. */
  readonly verifying: ReadonlyMap<string, crypto.KeyObject>
}

const keyed = (value: string) => crypto.createSecretKey(Buffer.from(value, "base64"))

const keptKey = (bytes: Buffer, createdAt: string): KeptTokenKey => ({
  kid: tokenKeyId(bytes),
  value: bytes.toString("base64"),
  created_at: createdAt
})

const parseRing = (value: string): KeptRing => JSON.parse(value) as KeptRing

/** The kept ring, made when there is none (from the single kept key when there is one); a concurrent first use reads the winner's. */
const readRing = Effect.gen(function*() {
  const repo = (yield* Storage).repository(Tables.settings)
  const existing = yield* repo.get(RING_SETTING)
  if (Option.isSome(existing)) return parseRing(existing.value.value)
  const now = yield* nowIso
  const legacy = yield* repo.get(LEGACY_SETTING)
  const first = keptKey(Option.isSome(legacy) ? Buffer.from(legacy.value.value, "base64") : crypto.randomBytes(32), now)
  const ring: KeptRing = { current: first.kid, keys: [first] }
  return yield* repo.create({ id: RING_SETTING, value: JSON.stringify(ring), created_at: now, updated_at: now, version: 1 }).pipe(
    Effect.as(ring),
    Effect.catchTag("Conflict", () => Effect.map(repo.get(RING_SETTING), (o) => parseRing(Option.getOrThrow(o).value)))
  )
})

/** The keys of the kept ring that still verify at `now`. */
const usable = (ring: KeptRing, now: number): TokenKeys => {
  const current = ring.keys.find((k) => k.kid === ring.current) ?? ring.keys[0]!
  const key = keyed(current.value)
  const verifying = new Map<string, crypto.KeyObject>([[current.kid, key]])
  for (const k of ring.keys) {
    if (k.kid === current.kid || (k.retired_at !== undefined && Date.parse(k.retired_at) + RETIRED_KEY_LIFETIME_MS <= now)) continue
    verifying.set(k.kid, keyed(k.value))
  }
  return { kid: current.kid, key, verifying }
}

/**
 * Makes a new kept key current, retires the current one (it still verifies for
 * `RETIRED_KEY_LIFETIME_MS`) and drops the keys retired longer ago. Servers sign with the new key
 * within `TOKEN_KEY_TTL_MS` and verify its tokens at once. Answers the new key's id and those
 * still verifying beside it.
 */
export const rotateTokenKey: Effect.Effect<{ readonly kid: string; readonly verifying: ReadonlyArray<string> }, never, Storage> = Effect.gen(
  function*() {
    const repo = (yield* Storage).repository(Tables.settings)
    for (;;) {
      yield* readRing
      const row = Option.getOrThrow(yield* repo.get(RING_SETTING))
      const ring = parseRing(row.value)
      const now = yield* nowIso
      const at = Date.parse(now)
      const next = keptKey(crypto.randomBytes(32), now)
      const kept = ring.keys
        .map((k) => (k.retired_at === undefined ? { ...k, retired_at: now } : k))
        .filter((k) => Date.parse(k.retired_at!) + RETIRED_KEY_LIFETIME_MS > at)
      const rotated: KeptRing = { current: next.kid, keys: [next, ...kept] }
      // A rotation at once elsewhere moved the version: start again from its ring.
      const done = yield* repo.patch(RING_SETTING, { value: JSON.stringify(rotated), updated_at: now }, row.version).pipe(
        Effect.as(true),
        Effect.catchAll(() => Effect.succeed(false))
      )
      if (done) {
        yield* recordOperatorCommand("token-signing-keys", next.kid, "rotate-token-key", ["key"])
        return { kid: next.kid, verifying: kept.map((k) => k.kid) }
      }
    }
  }
)

/** A configured key (`JWT_SECRET`, `JWT_SECRET_PREVIOUS`): at least 32 characters, its bytes as given. */
const configuredBytes = (secret: string, name: string) =>
  secret.length < 32 ? Effect.dieMessage(`${name} must be at least 32 characters long`) : Effect.succeed(new TextEncoder().encode(secret))

/**
 * The keys a server signs and verifies with: `current` on each signing (the ring re-read once it
 * is `TOKEN_KEY_TTL_MS` old), `forKid` on each verification of a token naming a key (the ring
 * re-read for an unknown one).
 */
export interface TokenKeySource {
  readonly current: Effect.Effect<TokenKeys>
  readonly forKid: (kid: string) => Effect.Effect<crypto.KeyObject | undefined>
}

export const tokenKeySource = (
  options: { readonly secret?: string | undefined; readonly previous?: string | undefined }
): Effect.Effect<TokenKeySource, never, Storage> =>
  Effect.gen(function*() {
    if (options.secret !== undefined) {
      const bytes = yield* configuredBytes(options.secret, "JWT_SECRET")
      const verifying = new Map<string, crypto.KeyObject>()
      const kid = tokenKeyId(bytes)
      const key = crypto.createSecretKey(bytes)
      if (options.previous !== undefined && options.previous !== options.secret) {
        const previous = yield* configuredBytes(options.previous, "JWT_SECRET_PREVIOUS")
        verifying.set(tokenKeyId(previous), crypto.createSecretKey(previous))
      }
      verifying.set(kid, key)
      const keys: TokenKeys = { kid, key, verifying }
      return { current: Effect.succeed(keys), forKid: (k) => Effect.succeed(verifying.get(k)) }
    }
    const context = yield* Effect.context<Storage>()
    const load = (now: number) => Effect.map(Effect.provide(readRing, context), (ring) => usable(ring, now))
    let kept = { keys: yield* load(yield* Clock.currentTimeMillis), at: yield* Clock.currentTimeMillis }
    const fresh = (maxAgeMs: number) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        if (now - kept.at < maxAgeMs && now >= kept.at) return kept.keys
        kept = { keys: yield* load(now), at: now }
        return kept.keys
      })
    return {
      current: fresh(TOKEN_KEY_TTL_MS),
      forKid: (kid) =>
        Effect.gen(function*() {
          const known = (yield* fresh(TOKEN_KEY_TTL_MS)).verifying.get(kid)
          if (known !== undefined) return known
          return (yield* fresh(UNKNOWN_KID_RELOAD_MS)).verifying.get(kid)
        })
    }
  })
