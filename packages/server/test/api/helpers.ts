import { type RunningServer, type ServerOptions, startServer } from "@cmp/http-express"
import type { StoreLayer } from "@cmp/platform"
import { PgStore } from "@cmp/store-postgres"
import { SqliteStore } from "@cmp/store-sqlite"
import { ManualClock } from "@cmp/test-support/clock"
import { createTestDatabase } from "@cmp/test-support/database"
import { ADMIN, START } from "@cmp/test-support/http"

/**
 * The server of the API suites: the real Express server (what `pnpm start` serves) over a fresh
 * database of the store under test, with a hand-moved clock.
 */

export * from "@cmp/test-support/http"
export { ManualClock }

export interface TestServer extends RunningServer {
  readonly clock: ManualClock
}

/** Which store the suite runs on: `pnpm test` runs it once per store. */
export const storeKind = process.env.CMP_TEST_STORE === "postgres" ? "postgres" : "sqlite"

/** A fresh store for one test server, and how to dispose of it after the server. */
export const testStore = async (): Promise<{ layer: StoreLayer; close: () => Promise<void> }> => {
  if (storeKind === "sqlite") return { layer: SqliteStore.layer({ filename: ":memory:" }), close: async () => {} }
  const db = await createTestDatabase()
  return { layer: PgStore.layer({ url: db.url, maxConnections: db.maxConnections }), close: db.close }
}

/** A real listening server on a random port over a fresh database of the store under test. */
export const start = async (overrides: Partial<ServerOptions> = {}): Promise<TestServer> => {
  const clock = (overrides.clock as ManualClock | undefined) ?? new ManualClock(START)
  const store = await testStore()
  const server = await startServer({
    store: store.layer,
    port: 0,
    allowHttp: true,
    hashCost: 1024,
    clock,
    admin: ADMIN,
    // TEST_LOG_LEVEL=Error shows the server's logs (the cause of a 500) while debugging.
    logLevel: (process.env.TEST_LOG_LEVEL as ServerOptions["logLevel"]) ?? "None",
    ...overrides
  })
  return {
    ...server,
    clock,
    close: async () => {
      await server.close()
      await store.close()
    }
  }
}
