import { rotateTokenKey } from "@cmp/platform-node"
import * as Effect from "effect/Effect"
import type { StoreLayer } from "./Options.js"

/**
 * Makes a new token signing key current on a store, without the platform: what the operator's
 * `rotate-token-key` command runs, for servers without `JWT_SECRET` (which keep their keys in the
 * database). Running servers sign with it within a minute and verify its tokens at once; the
 * previous key verifies the tokens it signed until they have all expired (32 days). With
 * `JWT_SECRET` the keys are the operator's: set the new one and move the old to
 * `JWT_SECRET_PREVIOUS`.
 */
export const rotateTokenSigningKey = (
  store: StoreLayer
): Effect.Effect<{ readonly kid: string; readonly verifying: ReadonlyArray<string> }, unknown> => Effect.provide(rotateTokenKey, store)
