import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { KeptValues, readThrough } from "../Engine/KeptValues.js"

/**
 * The opened values of the Secrets that sign user ids, kept in memory for a moment: every public
 * write of a signed-in user checks one, and reading and opening it each time cost a query and
 * a decryption per write. A change of a Secret through this process drops it at once; one
 * through another server is seen within `ttlMs` (a second). Kept: its organization and value,
 * or none for a secret that does not exist or cannot sign.
 */
export interface SigningKey {
  readonly organizationId: string
  /** `null`: a secret made before secrets were sealed, which cannot sign. */
  readonly value: string | null
  /** The secret refuses signatures without an expiration (`require_expiration`). */
  readonly requireExpiration: boolean
}

export interface SigningKeysService {
  readonly read: <E, R>(secretId: string, load: Effect.Effect<SigningKey | undefined, E, R>) => Effect.Effect<SigningKey | undefined, E, R>
  readonly forget: (secretId: string) => Effect.Effect<void>
}

export class SigningKeys extends Context.Tag("@cmp/core/SigningKeys")<SigningKeys, SigningKeysService>() {
  static readonly layer = (ttlMs = 1000, now?: () => number): Layer.Layer<SigningKeys> =>
    Layer.sync(SigningKeys, () => {
      const kept = new KeptValues<SigningKey | undefined>(ttlMs, now)
      return {
        read: (secretId, load) => readThrough(kept, secretId, load),
        forget: (secretId) => Effect.sync(() => kept.forget(secretId))
      }
    })
}

export const forgetSigningKey = (secretId: unknown): Effect.Effect<void, never, SigningKeys> =>
  typeof secretId !== "string" ? Effect.void : Effect.flatMap(SigningKeys, (keys) => keys.forget(secretId))
