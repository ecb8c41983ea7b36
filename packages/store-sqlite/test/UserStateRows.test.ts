import { userStateRowsSuite } from "@cmp/test-support/user-state-rows"
import { SqliteStore } from "../src/index.js"

/** The rows of users' states this store keeps follow every write of a user's states. */
userStateRowsSuite("sqlite :memory:", () => SqliteStore.layer({ filename: ":memory:" }))
