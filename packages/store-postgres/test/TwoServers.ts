import { createTestDatabase, type TestDatabase } from "@cmp/test-support/database"
import * as Layer from "effect/Layer"
import { afterAll, beforeAll } from "vitest"
import { PgStore } from "../src/index.js"

/**
 * One database of the machine's server (`DATABASE_URL`) for the file's tests, and a store on it
 * as each of two servers has its own (`store()`, built in the test's scope). PGlite's socket
 * serves one connection, so without `DATABASE_URL` there is no database and the file's suites
 * skip themselves.
 */
export const twoServers = () => {
  let db: TestDatabase | undefined
  beforeAll(async () => {
    if (process.env.DATABASE_URL) db = await createTestDatabase({ clients: 2 })
  }, 60_000)
  afterAll(() => db?.close())
  return { store: () => Layer.build(PgStore.layer({ url: db!.url, maxConnections: 2 })) }
}
