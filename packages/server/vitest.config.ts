import { defineConfig } from "vitest/config"

/**
 * `dist/` is built once, before any test file starts: the files that run the bundle (the command
 * line, shutdown and README tests) run side by side, and a build of one would delete the bundle
 * another is running. The API suites' servers write their log to one file for the run, which
 * `run-log-check.ts` searches for personal data once every file has run.
 */
export default defineConfig({
  test: { globalSetup: ["test/build-dist.ts", "test/run-log-check.ts"] }
})
