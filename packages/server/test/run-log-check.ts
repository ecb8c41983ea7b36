import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { logLinesIn, personalDataIn, RUN_LOG_ENV } from "./api/run-log.js"

/**
 * vitest globalSetup: a file for the log of every server the API suites start, and after the run
 * a check that no line holds personal data (an e-mail address, a canary the suites send). A run
 * whose servers started but wrote no line fails too: the check would see nothing.
 */
export default function setup() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-run-log-"))
  const file = path.join(dir, "servers.log")
  fs.writeFileSync(file, "")
  process.env[RUN_LOG_ENV] = file
  return () => {
    const text = fs.readFileSync(file, "utf8")
    const started = text.includes("# server started")
    const lines = logLinesIn(text)
    const found = personalDataIn(text)
    if (found.length === 0) fs.rmSync(dir, { recursive: true, force: true })
    if (started && lines === 0) throw new Error(`the servers' log (${file}) holds no line: the personal-data check saw nothing`)
    if (found.length > 0) {
      throw new Error(
        `personal data in the servers' log (${file}): ${found.slice(0, 20).map((f) => `line ${f.line}: ${f.kind}`).join("; ")}`
      )
    }
  }
}
