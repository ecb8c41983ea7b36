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
  return taken(shown) ?? (shown instanceof Error ? shown.message : String(shown))
}

/**
 * A port already taken or not allowed: most often a server started earlier and still running,
 * which Node's own words (`listen EADDRINUSE`) do not say.
 */
const taken = (error: unknown): string | undefined => {
  if (!(error instanceof Error) || !("syscall" in error) || error.syscall !== "listen") return undefined
  const { address, code, port } = error as Error & { readonly address?: string; readonly code?: string; readonly port?: number }
  const where = `${address ?? "HOST"}:${port ?? "PORT"}`
  if (code === "EADDRINUSE") return `Cannot listen on ${where}: the address is in use, most likely by a server started earlier; stop it, or set PORT (or HOST) to another`
  if (code === "EACCES") return `Cannot listen on ${where}: not allowed (ports below 1024 need privileges); set PORT to another`
  return undefined
}

/**
 * Says on stdout, as `listening` said the start, that the process stopped and why (the signal,
 * or the error that ended it) with the code it exits with; then exits, once the line is written
 * (a pipe may be written asynchronously).
 */
const exitSaying = (why: { readonly signal: NodeJS.Signals } | { readonly error: string }, exitCode: number, more: Record<string, string> = {}) => {
  process.stdout.write(`${JSON.stringify({ message: "stopped", ...why, ...more, exitCode, pid: process.pid })}\n`, () => process.exit(exitCode))
}

/**
 * After the start, an error nothing handles ends the process: its stack on stderr for the bug
 * report, then the `stopped` line, rather than Node's stack alone.
 */
export const stopOnFatalError = () => {
  process.once("uncaughtException", (error) => {
    console.error(error)
    exitSaying({ error: `fatal error: ${describeFailure(error)}` }, 1)
  })
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
 * will not wait. Each says so on stdout: `stopping` at the first signal, `stopped` at the exit.
 */
export const stopOnSignal = (stop: () => Promise<void>) => {
  let firstAt: number | undefined
  const handler = (signal: NodeJS.Signals) => {
    if (firstAt !== undefined) {
      if (Date.now() - firstAt < SAME_REQUEST_MS) return
      return exitSaying({ signal }, signalled(signal), { drain: "cut short by a second signal" })
    }
    firstAt = Date.now()
    // A drain may take seconds (requests and webhook calls in flight): said at once.
    console.log(JSON.stringify({ message: "stopping", signal, pid: process.pid }))
    stop().then(() => exitSaying({ signal }, 0), (error) => {
      const reason = describeFailure(error)
      console.error(reason)
      exitSaying({ signal }, 1, { drain: `failed: ${reason}` })
    })
  }
  process.on("SIGINT", handler)
  process.on("SIGTERM", handler)
}
