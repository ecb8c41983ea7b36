import { type ResealReport, resealSecrets as reseal } from "@cmp/platform-node"
import * as Effect from "effect/Effect"
import type { StoreLayer } from "./Options.js"

/**
 * Re-seals every sealed value of a store with `encryptionKey` (`ENCRYPTION_KEY`, else the key
 * kept in the database), without the platform: what the operator's `reseal-secrets` command
 * runs, beside the running servers. What `encryptionKeyPrevious` (`ENCRYPTION_KEY_PREVIOUS`) or
 * a kept key sealed is opened and sealed again, in batches of a hundred rows, each row written
 * only if no other write changed it since it was read. Once it answered no `unopened` value,
 * the previous key can be dropped. Idempotent, and safe to stop at any moment.
 */
export const resealSecrets = (
  store: StoreLayer,
  options: { readonly encryptionKey?: string | undefined; readonly encryptionKeyPrevious?: string | undefined } = {}
): Effect.Effect<ResealReport, unknown> => Effect.provide(reseal(options), store)
