import { createTestDatabase, type TestDatabase } from "@cmp/test-support/database"
import { queryPlanSuite } from "@cmp/test-support/query-plans"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { afterAll, beforeAll } from "vitest"
import { PgStore } from "../src/index.js"

/** The hot reads and writes use their indexes on PostgreSQL, planned after `ANALYZE`. */
let db: TestDatabase

beforeAll(async () => {
  db = await createTestDatabase()
}, 60_000)
afterAll(() => db?.close())

queryPlanSuite(
  `postgres (${process.env.DATABASE_URL ? "DATABASE_URL" : "PGlite"})`,
  () =>
    Layer.unwrapEffect(
      Effect.promise(() => db.reset()).pipe(Effect.as(PgStore.layer({ url: db.url, maxConnections: db.maxConnections })))
    )
)
