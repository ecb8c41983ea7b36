import * as fs from "node:fs"

/**
 * The log of every server the API suites start, in one file for the run: a check after the run
 * (`../run-log-check.ts`, a `globalSetup` teardown) reads it and fails the run on any personal
 * data in a log line. The servers log at Debug level to Effect's JSON logger, which writes with
 * `console.log`; this module takes those lines off the console into the file.
 */

/** Where the run's log is: set by the global setup, read by the suites' processes. */
export const RUN_LOG_ENV = "CMP_TEST_RUN_LOG"

export const runLogPath = (): string | undefined => process.env[RUN_LOG_ENV] || undefined

/**
 * Personal values the suites send on purpose, so the check knows them when they leak: an
 * end user's id, a client address and a consent's metadata value. E-mail addresses need no
 * canary: every one matches the pattern below.
 */
export const CANARY = {
  organizationUserId: "pd-canary-ouid-5c1e",
  ip: "198.51.100.203",
  metadata: "pd-canary-metadata-9b47"
} as const

const EMAIL = /[A-Za-z0-9._%+-]+(?:@|%40)[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g

/** What a line of Effect's JSON logger looks like. */
const isLogLine = (s: string) => s.startsWith("{") && s.includes("\"logLevel\"") && s.includes("\"fiberId\"")

/** The personal data found in the log's lines: which line, and what kind of value (never the value). */
export const personalDataIn = (text: string): ReadonlyArray<{ readonly line: number; readonly kind: string }> => {
  const found: Array<{ line: number; kind: string }> = []
  text.split("\n").forEach((line, i) => {
    if (line.match(EMAIL)) found.push({ line: i + 1, kind: "an e-mail address" })
    for (const [kind, value] of Object.entries(CANARY)) if (line.includes(value)) found.push({ line: i + 1, kind })
  })
  return found
}

/** How many lines of the log are the servers' own (the check fails a run whose servers wrote none). */
export const logLinesIn = (text: string) => text.split("\n").filter(isLogLine).length

/** Marks that a server of the suites started, so a run whose log stays empty is seen. */
export const markServerStart = () => {
  const file = runLogPath()
  if (file !== undefined) fs.appendFileSync(file, `# server started (pid ${process.pid})\n`)
}

const installed = Symbol.for("cmp.test.runLog")

/**
 * Sends the servers' log lines to the run's log instead of the console (once per process).
 * `TEST_LOG_LEVEL` set (debugging): they are shown as well.
 */
export const captureRunLog = () => {
  const file = runLogPath()
  const g = globalThis as { [installed]?: boolean }
  if (file === undefined || g[installed]) return
  g[installed] = true
  const original = console.log.bind(console)
  console.log = (...args: Array<unknown>) => {
    const text = args.length === 1 && typeof args[0] === "string" ? args[0] : undefined
    if (text === undefined || !isLogLine(text)) return original(...args)
    fs.appendFileSync(file, `${text}\n`)
    if (process.env.TEST_LOG_LEVEL) original(...args)
  }
}
