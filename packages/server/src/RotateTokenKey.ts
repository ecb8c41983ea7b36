import { PlatformConfig, rotateTokenSigningKey } from "@cmp/platform"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as StoreConfig from "./StoreConfig.js"

/**
 * `pnpm rotate-token-key`: a new signing key for access tokens and consent tokens, made current
 * on the database the environment names (`DATABASE_URL`, else `SQLITE_PATH`). Prints the new
 * key's id and those still verifying; running servers sign with it within a minute and verify
 * its tokens at once, and the previous key keeps verifying for 32 days (the longest a consent
 * token lives, and a day). With `JWT_SECRET` set the keys are not the database's: the command
 * says how to rotate them instead.
 */
export const rotateTokenKeyCommand = async (args: ReadonlyArray<string>) => {
  if (args.length > 0) {
    console.error("usage: rotate-token-key")
    process.exitCode = 2
    return
  }
  const configured = await Effect.runPromise(Config.option(Config.string("JWT_SECRET")))
  if (Option.isSome(configured)) {
    console.error(
      "JWT_SECRET is set: the signing key is yours, not the database's. Rotate it by starting the servers with the new key in " +
        "JWT_SECRET and the old one in JWT_SECRET_PREVIOUS; drop JWT_SECRET_PREVIOUS 32 days later."
    )
    process.exitCode = 2
    return
  }
  const rotated = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const store = yield* StoreConfig.fromConfig
    return yield* rotateTokenSigningKey(store)
  })))
  process.stdout.write(`${JSON.stringify(rotated)}\n`)
}
