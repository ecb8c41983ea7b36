import { defineConfig } from "vitest/config"

/**
 * `dist/` is built once, before any test file starts: the files that run the bundle (the command
 * line, shutdown and README tests) run side by side, and a build of one would delete the bundle
 * another is running.
 */
export default defineConfig({
  test: { globalSetup: ["test/build-dist.ts"] }
})
