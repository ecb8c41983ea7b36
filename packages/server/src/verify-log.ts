#!/usr/bin/env node
import { describeFailure } from "./Failure.js"

/** The `cmp-verify-log` command: `verify-log` of the server's commands, as a bin of its own. */
import("./VerifyLog.js").then((m) => m.verifyLogCommand(process.argv.slice(2))).catch((error) => {
  console.error(describeFailure(error))
  process.exit(1)
})
