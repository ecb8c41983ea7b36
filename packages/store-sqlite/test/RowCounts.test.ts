import { rowCountSuite } from "@cmp/test-support/row-counts"
import { SqliteStore } from "../src/index.js"

/** The row counts this store keeps are exact, through core's use-cases and the store's ports. */
rowCountSuite("sqlite :memory:", () => SqliteStore.layer({ filename: ":memory:" }))
