import { domainReleaseSuite, exportRunSuite, logVerifySuite, resourceServiceSuite } from "@cmp/test-support/engine"
import { SqliteStore } from "../src/index.js"

/** Core's engine (the generic use-cases, hooks, sessions, API usage, export runs, the consent log's verify, the release of unproven page hosts) on this store. */

resourceServiceSuite("sqlite :memory:", () => SqliteStore.layer({ filename: ":memory:" }))

exportRunSuite("sqlite :memory:", () => SqliteStore.layer({ filename: ":memory:" }))

logVerifySuite("sqlite :memory:", () => SqliteStore.layer({ filename: ":memory:" }))

domainReleaseSuite("sqlite :memory:", () => SqliteStore.layer({ filename: ":memory:" }))
