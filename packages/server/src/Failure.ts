import { PlatformConfig } from "@cmp/platform"
import * as Cause from "effect/Cause"
import * as ConfigError from "effect/ConfigError"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"

/** A start that fails says why in one line: a configuration mistake names its variables. */
export const describeFailure = (error: unknown): string => {
  const cause = Runtime.isFiberFailure(error) ? error[Runtime.FiberFailureCauseId] : undefined
  const failure = cause ? Option.getOrUndefined(Cause.failureOption(cause)) : error
  if (ConfigError.isConfigError(failure)) return `Configuration error: ${PlatformConfig.describe(failure)}`
  const defect = cause ? Option.getOrUndefined(Cause.dieOption(cause)) : undefined
  const shown = defect ?? failure ?? error
  return shown instanceof Error ? shown.message : String(shown)
}

/** The shell's code for a process ended by a signal: 128 + the signal's number. */
const signalled = (signal: NodeJS.Signals) => 128 + (signal === "SIGINT" ? 2 : 15)

/**
 * A Ctrl-C reaches every process of the terminal's foreground group, and `pnpm start` passes it
 * on once more: signals this close to the first are the same request.
 */
const SAME_REQUEST_MS = 1000

/**
 * The first SIGINT or SIGTERM stops the process with `stop` (a drain) and exits 0 once it is
 * done, 1 when it fails: a requested stop is not an error. Another signal while draining (after
 * `SAME_REQUEST_MS`) exits at once with the shell's code for it (130, 143), for an operator who
 * will not wait.
 */
export const stopOnSignal = (stop: () => Promise<void>) => {
  let firstAt: number | undefined
  const handler = (signal: NodeJS.Signals) => {
    if (firstAt !== undefined) {
      if (Date.now() - firstAt >= SAME_REQUEST_MS) process.exit(signalled(signal))
      return
    }
    firstAt = Date.now()
    stop().then(() => process.exit(0), (error) => {
      console.error(describeFailure(error))
      process.exit(1)
    })
  }
  process.on("SIGINT", handler)
  process.on("SIGTERM", handler)
}
