import { expirySweepSuite } from "@cmp/test-support/expiry-sweep"
import { SqliteStore } from "../src/index.js"

/** The expiry sweep over this store: what it remembers between sweeps, and its rescan. */
expirySweepSuite("sqlite :memory:", () => SqliteStore.layer({ filename: ":memory:" }))
