import { AesSecretBoxLive, rotateReceiptKey } from "@cmp/platform-node"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { StoreLayer } from "./Options.js"

/**
 * Makes a new receipt signing key current on a store, without the platform: what the operator's
 * `rotate-receipt-key` command runs. The retired keys stay published (`GET
 * /v1/consents/receipts/jwks`); running servers sign with the new key within a minute. The
 * private key is sealed with `encryptionKey` (`ENCRYPTION_KEY`), or with the key kept in the
 * database when the servers run without one.
 */
export const rotateReceiptSigningKey = (
  store: StoreLayer,
  options: { readonly encryptionKey?: string | undefined } = {}
): Effect.Effect<{ readonly kid: string; readonly retired: ReadonlyArray<string> }, unknown> =>
  Effect.provide(rotateReceiptKey, AesSecretBoxLive(options.encryptionKey).pipe(Layer.provideMerge(store)))
