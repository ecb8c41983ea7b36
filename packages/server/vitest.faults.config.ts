import { defineConfig } from "vitest/config"

/**
 * `pnpm test:faults`: the slower tests that break processes on purpose. One file at a time:
 * each runs several server and worker processes, and on a small machine files running side by
 * side would starve each other's processes (and stretch leases and timeouts).
 */
export default defineConfig({
  test: { include: ["test-faults/**/*.fault.ts"], testTimeout: 120_000, hookTimeout: 120_000, fileParallelism: false }
})
