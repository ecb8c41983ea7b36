import { verifyConsentLog } from "@cmp/platform"
import * as Effect from "effect/Effect"
import * as StoreConfig from "./StoreConfig.js"

/**
 * `pnpm verify-log --organization <id>`: an auditor's check of one organization's consent log,
 * read straight from the database the environment names (`DATABASE_URL`, else `SQLITE_PATH`),
 * without a server. Prints what `GET /v1/consents/log/verify` answers; exits 0 when the log is
 * valid, 1 when it is not, 2 when asked wrongly.
 */

const usage = "usage: verify-log --organization <organization id>"

const organizationArg = (args: ReadonlyArray<string>): string | undefined => {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!
    if (a === "--organization" || a === "-o") return args[i + 1]
    if (a.startsWith("--organization=")) return a.slice("--organization=".length)
  }
  return undefined
}

export const verifyLogCommand = async (args: ReadonlyArray<string>) => {
  const organizationId = organizationArg(args)
  if (organizationId === undefined || organizationId === "") {
    console.error(usage)
    process.exitCode = 2
    return
  }
  const answer = await Effect.runPromise(Effect.scoped(Effect.flatMap(StoreConfig.fromConfig, (store) => verifyConsentLog(store, organizationId))))
  process.stdout.write(`${JSON.stringify(answer)}\n`)
  process.exitCode = answer.valid ? 0 : 1
}
