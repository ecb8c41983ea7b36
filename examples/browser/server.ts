/**
 * Consent collection in the browser: a shop's page (index.html) shows a consent banner that
 * records the visitor's choice straight to the API with the organization's public key. For a
 * signed-in visitor the page carries the visitor's id signed by this backend, and a preference
 * center reads and changes that visitor's consents with a consent token this backend mints.
 * The API is mounted in the same Express app: a consent platform of its own, on a fresh
 * in-memory database each start, with its own operator key (not the server of `pnpm start`).
 * Listens on PORT (default 3005) and HOST (default 127.0.0.1).
 *   pnpm --filter @cmp/examples browser
 * then open http://localhost:3005/ (a guest) or http://localhost:3005/?user=u-42 (signed in):
 * localhost, the shop property's website, is the only origin whose pages may record consents.
 */
import { createApiFromRuntime } from "@cmp/http-express"
import { createPlatform, organizationUserIdAuth } from "@cmp/platform"
import { sqlite } from "@cmp/store-sqlite"
import express from "express"
import * as fs from "node:fs"
import * as path from "node:path"

const port = Number(process.env.PORT || 3005)
const host = process.env.HOST || "127.0.0.1"
// Where visitors open the page: its origin must be one of the organization's (a property's website).
const site = `http://localhost:${port}`

// The operator key, for a look through the API (printed at start).
const admin = { key: "admin", secret: "change-me-to-a-long-secret" }
const cmp = await createPlatform({ store: sqlite({ filename: ":memory:" }), admin, logLevel: "Warning" })
// Development only: plain HTTP, which also lets http://localhost pages of the organization in.
// No hosted privacy center here (`pages: false`): the pages on this origin are the shop's, held
// to the organization's origins like any page, not trusted as pages the API served.
const api = await createApiFromRuntime(cmp.runtime, { allowHttp: true, pages: false })

// The shop's organization: consents of guests and of signed-in users from its pages, and consent tokens.
const operator = { as: cmp.asOperator() }
const org = await cmp.organizations.create({ name: "Shop" }, operator)
const flags = await cmp.premiumFeatures.find({ organization_id: org.id }, operator)
await cmp.premiumFeatures.patch(
  flags.data[0]!.id,
  { store_guest_cmp_consents: true, store_cmp_consents: true, consents_api: true },
  operator
)
const shop = cmp.forOrganization(org.id)
await shop.properties.create({ organization_id: org.id, name: "Shop", website: site })
// Signs the ids of signed-in visitors. Its value is shown this once: a real backend keeps it in its secret store.
// Its signatures (hmac-sha256-v2, from organizationUserIdAuth) always carry an expiration;
// `require_expiration` makes the secret refuse the reference SDK's form without one too.
const signing = await shop.secrets.create({ organization_id: org.id, name: "signed user ids", require_expiration: true })

/** The signed-in visitor: a stand-in for the host's own sign-in (a cookie it checks). */
const signedIn = (req: express.Request) => (typeof req.query.user === "string" && req.query.user !== "" ? req.query.user : undefined)

const app = express()
app.use("/consent-api", api.router)

const page = fs.readFileSync(path.join(import.meta.dirname, "index.html"), "utf8")
app.get("/", (req, res) => {
  const user = signedIn(req)
  const settings = {
    api: "/consent-api",
    // The origin the organization allows: a page opened at another (127.0.0.1) says to open this one.
    site,
    publicKey: org.public_api_key,
    organizationId: org.id,
    // The page may record for this user id, and only this one, for the next hour.
    user: user === undefined ? null : {
      id: user,
      auth: organizationUserIdAuth({
        secretId: signing.id,
        secret: signing.secret!,
        organizationUserId: user,
        expiration: Math.floor(Date.now() / 1000) + 3600
      })
    }
  }
  // `<` escaped: a user id cannot close the script element.
  const script = `<script>window.CMP = ${JSON.stringify(settings).replace(/</g, "\\u003c")}</script>`
  res.type("html").send(page.replace("<script>window.CMP = null</script>", script))
})

// The preference center's credential: this user's consents, read and written, for 15 minutes.
app.post("/preferences/token", async (req, res) => {
  const user = signedIn(req)
  if (user === undefined) return void res.status(401).json({ message: "sign in first" })
  const token = await shop.consents.tokens.create({ organization_id: org.id, organization_user_id: user, lifetime: 900 })
  res.status(201).set("cache-control", "no-store").json({ id_token: token.id_token, expires_at: token.expires_at })
})

/** A shell command that prints the organization's consent events, as the operator reads them. */
const whatWasRecorded = () => {
  const login = JSON.stringify({ type: "api-key", ...admin })
  const token = `$(curl -s -X POST ${site}/consent-api/v1/sessions -H 'content-type: application/json' -d '${login}'` +
    ` | node -pe 'JSON.parse(require("fs").readFileSync(0)).access_token')`
  return `curl -s "${site}/consent-api/v1/consents/events?organization_id=${org.id}" -H "authorization: Bearer ${token}"`
}

const server = app.listen(port, host, () => {
  console.log([
    `shop on ${site}/ (a guest) and ${site}/?user=u-42 (signed in); API under ${site}/consent-api/v1`,
    "This example runs a consent platform of its own, in memory (emptied when it stops), not the server of `pnpm start`.",
    `Its operator key: ${admin.key}, secret ${admin.secret}; the shop's organization: ${org.id}.`,
    "What the shop's pages recorded:",
    `  ${whatWasRecorded()}`
  ].join("\n"))
})
const stop = () => {
  server.close()
  void cmp.dispose().then(() => process.exit(0))
}
process.once("SIGINT", stop)
process.once("SIGTERM", stop)
