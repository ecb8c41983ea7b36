import * as fs from "node:fs"
import * as path from "node:path"

/**
 * The Chromium the browser tests drive: `CHROMIUM_PATH`, else the first of these on PATH. CI
 * installs Debian's `chromium`; without one the tests fail rather than pass unseen.
 */
export const chromiumPath = (): string => {
  const named = process.env.CHROMIUM_PATH
  if (named !== undefined && named !== "") return named
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    for (const name of ["chromium", "chromium-browser", "google-chrome"]) {
      const candidate = path.join(dir, name)
      if (fs.existsSync(candidate)) return candidate
    }
  }
  throw new Error("no Chromium found: install it (Debian: apt-get install chromium; .ci/run does) or set CHROMIUM_PATH")
}
