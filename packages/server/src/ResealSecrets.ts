import { PlatformConfig, resealSecrets } from "@cmp/platform"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as StoreConfig from "./StoreConfig.js"

/**
 * `pnpm reseal-secrets`: every sealed value of the database the environment names
 * (`DATABASE_URL`, else `SQLITE_PATH`) sealed again with `ENCRYPTION_KEY`, opened with it,
 * `ENCRYPTION_KEY_PREVIOUS` or the key kept in the database, while the servers run. Prints the
 * counts as JSON (`resealed`, `already_current`, `unopened`, and by table); exits 1 when some
 * value no key opened, as the previous key cannot be dropped then.
 */
export const resealSecretsCommand = async (args: ReadonlyArray<string>) => {
  if (args.length > 0) {
    console.error("usage: reseal-secrets")
    process.exitCode = 2
    return
  }
  const report = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const store = yield* StoreConfig.fromConfig
    const encryptionKey = yield* PlatformConfig.encryptionKey
    const encryptionKeyPrevious = yield* PlatformConfig.encryptionKeyPrevious
    return yield* resealSecrets(store, { encryptionKey, encryptionKeyPrevious })
    // Progress on stderr, as JSON lines: stdout holds the counts alone.
  }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.jsonLogger))))))
  process.stdout.write(`${JSON.stringify(report)}\n`)
  if (report.unopened > 0) {
    console.error(`${report.unopened} sealed value(s) opened with none of the keys given: keep the key that sealed them`)
    process.exitCode = 1
  }
}
