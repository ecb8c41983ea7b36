/**
 * Adds the API to an existing Express app, next to the host's own routes, with one app.use.
 * Listens on PORT (default 3002) and HOST (default 127.0.0.1).
 *   pnpm --filter @cmp/examples mount
 */
import { createApi } from "@cmp/http-express"
import { sqlite } from "@cmp/store-sqlite"
import express from "express"

const app = express()

// The host's own routes and middleware stay as they are.
app.get("/health", (_req, res) => {
  res.json({ ok: true })
})

const api = await createApi({
  store: sqlite({ filename: "./data/mounted.db" }),
  allowHttp: true,
  admin: { key: "admin", secret: "change-me-to-a-long-secret" }
})
// The API parses its own bodies; mounted after a global express.json() it takes what that parsed.
app.use("/consent-api", api.router)

app.use(express.json())
app.post("/host/echo", (req, res) => {
  res.json(req.body)
})

const port = Number(process.env.PORT || 3002)
const host = process.env.HOST || "127.0.0.1"
const server = app.listen(port, host, () => {
  console.log(`host app on http://${host}:${port} — API under /consent-api/v1, docs under /consent-api/docs/`)
})
const stop = () => {
  server.close()
  void api.dispose().then(() => process.exit(0))
}
process.once("SIGINT", stop)
process.once("SIGTERM", stop)
