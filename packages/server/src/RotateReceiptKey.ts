import { PlatformConfig, rotateReceiptSigningKey } from "@cmp/platform"
import * as Effect from "effect/Effect"
import * as StoreConfig from "./StoreConfig.js"

/**
 * `pnpm rotate-receipt-key`: a new consent receipt signing key, made current on the database the
 * environment names (`DATABASE_URL`, else `SQLITE_PATH`) and sealed with `ENCRYPTION_KEY` as
 * the servers seal it. Prints the new key's id and the retired ones'; running servers sign with
 * the new key within a minute, and the retired keys stay in `GET /v1/consents/receipts/jwks`.
 */
export const rotateReceiptKeyCommand = async (args: ReadonlyArray<string>) => {
  if (args.length > 0) {
    console.error("usage: rotate-receipt-key")
    process.exitCode = 2
    return
  }
  const rotated = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const store = yield* StoreConfig.fromConfig
    const encryptionKey = yield* PlatformConfig.encryptionKey
    return yield* rotateReceiptSigningKey(store, { encryptionKey })
  })))
  process.stdout.write(`${JSON.stringify(rotated)}\n`)
}
