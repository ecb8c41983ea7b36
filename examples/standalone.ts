/**
 * A standalone server on SQLite, configured in code rather than by the environment.
 *   pnpm --filter @cmp/examples standalone
 */
import { startServer } from "@cmp/http-express"
import { SqliteStore } from "@cmp/store-sqlite"

const running = await startServer({
  store: SqliteStore.layer({ filename: "./data/standalone.db" }),
  port: 3001,
  // Development only: serve plain HTTP on localhost instead of redirecting to https.
  allowHttp: true,
  admin: { key: "admin", secret: "change-me-to-a-long-secret" }
})
console.log(`API on ${running.url}/v1, docs on ${running.url}/docs/`)
process.once("SIGINT", () => void running.close().then(() => process.exit(0)))
