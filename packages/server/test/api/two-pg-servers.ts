import { type RunningServer, type ServerOptions, startServer } from "@cmp/http-express"
import { PgStore } from "@cmp/store-postgres"
import { createTestDatabase, type TestDatabase } from "@cmp/test-support/database"
import { afterAll, beforeAll } from "vitest"
import { ADMIN } from "./helpers.js"

/**
 * Two API servers on one fresh PostgreSQL database, started before the describe block's tests
 * and closed after them: what one server changes, the other must honour within its bound.
 */
export const useTwoPgServers = (
  overrides: Partial<ServerOptions> = {},
  /** What the first and the second server each get beside `overrides`. */
  each: readonly [Partial<ServerOptions>, Partial<ServerOptions>] = [{}, {}]
): ReadonlyArray<RunningServer> => {
  let db: TestDatabase
  const servers: Array<RunningServer> = []
  const open = (own: Partial<ServerOptions>) =>
    startServer({
      store: PgStore.layer({ url: db.url, maxConnections: db.maxConnections }),
      port: 0,
      allowHttp: true,
      hashCost: 1024,
      admin: ADMIN,
      dispatcher: false,
      logLevel: (process.env.TEST_LOG_LEVEL as ServerOptions["logLevel"]) ?? "None",
      ...overrides,
      ...own
    })
  beforeAll(async () => {
    db = await createTestDatabase({ clients: 2 })
    servers.push(await open(each[0]))
    servers.push(await open(each[1]))
  }, 60_000)
  afterAll(async () => {
    for (const s of servers) await s.close()
    await db?.close()
  })
  return servers
}

/** Polls until `refused` holds and answers how long that took; fails when it still does not after `limitMs`. */
export const refusedWithin = async (limitMs: number, refused: () => Promise<boolean>): Promise<number> => {
  const started = performance.now()
  for (;;) {
    if (await refused()) return performance.now() - started
    if (performance.now() - started > limitMs) throw new Error(`still accepted after ${limitMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}
