import { queryPlanSuite } from "@cmp/test-support/query-plans"
import { SqliteStore } from "../src/index.js"

/** The hot reads and writes use their indexes on SQLite (no statistics: as a store runs). */
queryPlanSuite("sqlite", () => SqliteStore.layer({ filename: ":memory:" }))
