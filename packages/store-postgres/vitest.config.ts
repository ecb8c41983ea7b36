import { defineConfig } from "vitest/config"

/**
 * Each contract test empties its database and migrates it again (every migration, its triggers
 * and functions too), which on a busy 2-core machine has taken over five seconds, vitest's
 * default limit. The limit is for a test that hangs, not a budget.
 */
export default defineConfig({
  test: { testTimeout: 30_000, hookTimeout: 60_000 }
})
