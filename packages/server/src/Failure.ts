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

/** Stops on SIGINT and SIGTERM with `stop`, then exits. */
export const stopOnSignal = (stop: () => Promise<void>) => {
  const handler = () => {
    stop().then(() => process.exit(0), () => process.exit(1))
  }
  process.once("SIGINT", handler)
  process.once("SIGTERM", handler)
}
