/**
 * The API as a web-standard fetch handler, `(request: Request) => Promise<Response>`, mounted
 * under `/consent-api` and served here on Node's own `http` server. The same `api.fetch` is what
 * Hono (`app.mount("/consent-api", api.fetch)`), a Next.js route handler
 * (`export const GET = api.fetch`, for each method), `Bun.serve({ fetch: api.fetch })` or
 * `Deno.serve(api.fetch)` take. Listens on PORT (default 3004) and HOST (default 127.0.0.1).
 *   pnpm --filter @cmp/examples fetch-handler
 */
import { createFetchHandler, serveNode } from "@cmp/http-fetch"
import { sqlite } from "@cmp/store-sqlite"

const api = await createFetchHandler({
  store: sqlite({ filename: "./data/fetch-handler.db" }),
  // The operator key, created on first start.
  admin: { key: "admin", secret: "change-me-to-a-long-secret" },
  // Development only: plain HTTP on localhost instead of a 301 to https.
  allowHttp: true,
  // Requests outside it answer 404.
  basePath: "/consent-api"
})
// Without `serveNode`, an existing `node:http` server takes `nodeListener(api.fetch)` as its
// request listener: it builds the `Request` from the request target alone and refuses the
// targets a URL parser would rewrite (dot segments, backslashes), as the API does on Express.
const server = serveNode(api.fetch)
const port = Number(process.env.PORT || 3004)
const host = process.env.HOST || "127.0.0.1"
server.listen(port, host, () => console.log(`API on http://${host}:${port}/consent-api/v1, docs on http://${host}:${port}/consent-api/docs/`))
const stop = () => {
  server.close()
  void api.close().then(() => process.exit(0))
}
process.once("SIGINT", stop)
process.once("SIGTERM", stop)
