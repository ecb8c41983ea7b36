/**
 * The API on Node's own `http` server, without Express: the framework-neutral layer takes a plain
 * request and gives a plain response, so any framework hosts it the same way.
 *   pnpm --filter @cmp/examples node-http
 */
import { fromNodeRequest, makeHttpApi, writeNodeResponse } from "@cmp/http"
import { sqlite } from "@cmp/platform"
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
const port = Number(process.env.PORT ?? 3003)
server.listen(port, "127.0.0.1", () => console.log(`API on http://127.0.0.1:${port}/v1, docs on http://127.0.0.1:${port}/docs/`))
process.once("SIGINT", () => {
  server.close()
  void api.dispose().then(() => process.exit(0))
})
