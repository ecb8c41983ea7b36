/**
 * The API on Node's own `http` server, without an Express app: the framework-neutral layer takes a
 * plain request and gives a plain response, so any framework hosts it the same way (the Node
 * request helpers come with the Express adapter). Listens on PORT (default 3003) and HOST
 * (default 127.0.0.1).
 *   pnpm --filter @cmp/examples node-http
 */
import { fromNodeRequest, makeHttpApi, writeNodeResponse } from "@cmp/http-express"
import { sqlite } from "@cmp/store-sqlite"
import * as http from "node:http"

const api = await makeHttpApi({
  store: sqlite({ filename: "./data/node-http.db" }),
  // The operator key, created on first start.
  admin: { key: "admin", secret: "change-me-to-a-long-secret" },
  // Development only: plain HTTP on localhost instead of a 301 to https.
  allowHttp: true,
  // Deliver webhooks from this process (leave it out when `pnpm worker` processes do).
  dispatcher: {}
})
const server = http.createServer((req, res) => {
  api.handle(fromNodeRequest(req)).then((response) => writeNodeResponse(res, response))
})
const port = Number(process.env.PORT || 3003)
const host = process.env.HOST || "127.0.0.1"
server.listen(port, host, () => console.log(`API on http://${host}:${port}/v1, docs on http://${host}:${port}/docs/`))
const stop = () => {
  server.close()
  void api.dispose().then(() => process.exit(0))
}
process.once("SIGINT", stop)
process.once("SIGTERM", stop)
