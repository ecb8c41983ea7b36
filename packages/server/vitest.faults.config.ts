import { defineConfig } from "vitest/config"

/** `pnpm test:faults`: the slower tests that break processes on purpose. */
export default defineConfig({
  test: { include: ["test-faults/**/*.fault.ts"], testTimeout: 120_000, hookTimeout: 120_000 }
})
