import * as Logger from "effect/Logger"

/**
 * The platform's log: Effect's JSON lines (`Logger.json`'s format, one object a line on the
 * console), written together once per turn of the event loop instead of one write each. With the
 * request log on, a write per line was a system call per request: a keyed read cost 0.19 ms of
 * CPU with its line and 0.10 ms without (docs/benchmarks.md). Lines still pending are written
 * when the process exits; a process killed outright loses at most the lines of its last turn.
 */

/** The lines of this turn: a flush is scheduled whenever there are any. */
const pending: Array<string> = []
let hooked = false

const flush = () => {
  if (pending.length === 0) return
  const text = pending.join("\n")
  pending.length = 0
  console.log(text)
}

const lines = Logger.make<unknown, void>((options) => {
  // The first line of a turn schedules its flush.
  if (pending.push(Logger.jsonLogger.log(options)) > 1) return
  setImmediate(flush)
  if (!hooked) {
    hooked = true
    process.once("exit", flush)
  }
})

/** Replaces Effect's default logger with the batched JSON lines. */
export const layer = Logger.replace(Logger.defaultLogger, lines)
