import { exportRunSuite, resourceServiceSuite } from "@cmp/test-support/engine"
import { SqliteStore } from "../src/index.js"

/** Core's engine (the generic use-cases, hooks, sessions, API usage, export runs) on this store. */

resourceServiceSuite("sqlite :memory:", () => SqliteStore.layer({ filename: ":memory:" }))

exportRunSuite("sqlite :memory:", () => SqliteStore.layer({ filename: ":memory:" }))
