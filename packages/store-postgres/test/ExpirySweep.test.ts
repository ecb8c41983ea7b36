import { createTestDatabase, type TestDatabase } from "@cmp/test-support/database"
import { expirySweepSuite } from "@cmp/test-support/expiry-sweep"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { afterAll, beforeAll } from "vitest"
import { PgStore } from "../src/index.js"

/** The expiry sweep over this store: what it remembers between sweeps, and its rescan. */
let db: TestDatabase

beforeAll(async () => {
  db = await createTestDatabase()
}, 60_000)
afterAll(() => db?.close())

expirySweepSuite(
  `postgres (${process.env.DATABASE_URL ? "DATABASE_URL" : "PGlite"})`,
  () => Layer.unwrapEffect(Effect.promise(() => db.reset()).pipe(Effect.as(PgStore.layer({ url: db.url, maxConnections: db.maxConnections }))))
)
