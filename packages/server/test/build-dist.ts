import { execFileSync } from "node:child_process"
import * as path from "node:path"

/** vitest globalSetup: `node build.mjs`, as `pnpm start` runs it. */
export default function setup() {
  execFileSync(process.execPath, [path.join(import.meta.dirname, "..", "build.mjs")], { stdio: "inherit" })
}
