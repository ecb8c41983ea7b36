/**
 * A standalone server on SQLite, configured in code rather than by the environment (except where
 * it listens: PORT, default 3001, and HOST, default 127.0.0.1).
 *   pnpm --filter @cmp/examples standalone
 */
import { startServer } from "@cmp/http-express"
import { sqlite } from "@cmp/store-sqlite"

const running = await startServer({
  store: sqlite({ filename: "./data/standalone.db" }),
  port: Number(process.env.PORT || 3001),
  host: process.env.HOST || "127.0.0.1",
  // Development only: serve plain HTTP on localhost instead of redirecting to https.
  allowHttp: true,
  admin: { key: "admin", secret: "change-me-to-a-long-secret" }
})
console.log(`API on ${running.url}/v1, docs on ${running.url}/docs/`)
// Requests in flight get their answers before the process exits.
const stop = () => void running.close().then(() => process.exit(0))
process.once("SIGINT", stop)
process.once("SIGTERM", stop)
