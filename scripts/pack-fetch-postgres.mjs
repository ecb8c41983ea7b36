/**
 * The host that `scripts/pack-check.mjs` runs in a second plain npm project, where only
 * `@cmp/http-fetch` and `@cmp/store-postgres` were installed (and `pg`, to make a database of its
 * own): the fetch handler on PostgreSQL, called as a web-standard runtime (Deno, Bun, an edge host)
 * calls it, a `Request` in and a `Response` out, with no Node request or response object. It
 * works in a fresh database on the server at `DATABASE_URL` and drops it at the end. Exits 0 when
 * all of it worked.
 */
import { createFetchHandler } from "@cmp/http-fetch"
import { postgres } from "@cmp/store-postgres"
import pg from "pg"

const check = (ok, message, detail = "") => {
  if (!ok) throw new Error(`${message}: ${detail}`)
  console.log(`fetch-postgres: ok: ${message}`)
}

const server = process.env.DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres"
const name = `cmp_pack_${process.pid}_${Date.now().toString(36)}`
const admin = async (statement) => {
  const client = new pg.Client({ connectionString: server })
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}
const url = new URL(server)
url.pathname = `/${name}`

await admin(`CREATE DATABASE "${name}"`)
let api
try {
  const key = { key: "admin", secret: "a-long-operator-secret-for-the-fetch-check" }
  api = await createFetchHandler({
    store: postgres({ url: url.toString(), maxConnections: 2 }),
    admin: key,
    dispatcher: false,
    // The start-up warnings (keys kept in the database, no mailer) are not what is checked here.
    logLevel: "Error"
  })
  const origin = "https://cmp.example"
  const session = await api.fetch(new Request(`${origin}/v1/sessions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ type: "api-key", ...key })
  }))
  check(session instanceof Response, "POST /v1/sessions answers a web Response")
  check(session.status === 201, "POST /v1/sessions answers 201", `${session.status} ${await session.clone().text()}`)
  const { access_token } = await session.json()
  check(typeof access_token === "string", "the session has an access token")
  const organizations = await api.fetch(new Request(`${origin}/v1/organizations`, { headers: { authorization: `Bearer ${access_token}` } }))
  check(organizations instanceof Response, "GET /v1/organizations answers a web Response")
  check(organizations.status === 200, "GET /v1/organizations answers 200", `${organizations.status} ${await organizations.clone().text()}`)
  const page = await organizations.json()
  check(Array.isArray(page.data) && page.total >= 1, "GET /v1/organizations lists the operator organization", JSON.stringify(page))
} finally {
  await api?.close()
  await admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
}
