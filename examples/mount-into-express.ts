/**
 * Adds the API to an existing Express app, next to the host's own routes, with one app.use.
 *   pnpm --filter @cmp/examples mount
 */
import { createApi } from "@cmp/http-express"
import { SqliteStore } from "@cmp/store-sqlite"
import express from "express"

const app = express()

// The host's own routes and middleware stay as they are.
app.get("/health", (_req, res) => {
  res.json({ ok: true })
})

const api = await createApi({
  store: SqliteStore.layer({ filename: "./data/mounted.db" }),
  allowHttp: true,
  admin: { key: "admin", secret: "change-me-to-a-long-secret" }
})
// The API parses its own bodies; mounted after a global express.json() it takes what that parsed.
app.use("/consent-api", api.router)

app.use(express.json())
app.post("/host/echo", (req, res) => {
  res.json(req.body)
})

const server = app.listen(3002, "127.0.0.1", () => {
  console.log("host app on http://127.0.0.1:3002 — API under /consent-api/v1, docs under /consent-api/docs/")
})
process.once("SIGINT", () => {
  server.close()
  void api.dispose().then(() => process.exit(0))
})
