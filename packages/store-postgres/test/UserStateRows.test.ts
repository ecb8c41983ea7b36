import { createTestDatabase, type TestDatabase } from "@cmp/test-support/database"
import { userStateRowsSuite } from "@cmp/test-support/user-state-rows"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { afterAll, beforeAll } from "vitest"
import { PgStore } from "../src/index.js"

/** The rows of users' states this store keeps follow every write of a user's states. */
let db: TestDatabase

beforeAll(async () => {
  db = await createTestDatabase()
}, 60_000)
afterAll(() => db?.close())

userStateRowsSuite(
  `postgres (${process.env.DATABASE_URL ? "DATABASE_URL" : "PGlite"})`,
  () => Layer.unwrapEffect(Effect.promise(() => db.reset()).pipe(Effect.as(PgStore.layer({ url: db.url, maxConnections: db.maxConnections }))))
)
