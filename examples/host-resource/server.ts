/**
 * A host's own resource beside the platform's (`./loyalty-preferences.ts`): served under
 * /consent-api/v1/loyalty-preferences with the rest of the API, documented in its OpenAPI
 * document, and called in-process through the typed host API. Listens on PORT (default 3006)
 * and HOST (default 127.0.0.1).
 *   pnpm --filter @cmp/examples host-resource
 */
import { createApiFromRuntime } from "@cmp/http-express"
import { createPlatform } from "@cmp/platform"
import { sqlite } from "@cmp/store-sqlite"
import express from "express"
import { LoyaltyPreferences, migrations } from "./loyalty-preferences.js"

const cmp = await createPlatform({
  store: sqlite({ filename: "./data/host-resource.db" }),
  admin: { key: "admin", secret: "change-me-to-a-long-secret" },
  // The host's declarations and its table's migrations, beside the platform's own.
  resources: [LoyaltyPreferences],
  migrations
})

// In-process, typed from the declaration as the platform's resources are: `cmp.loyaltyPreferences`.
const operator = { as: cmp.asOperator() }
const shop = (await cmp.organizations.find({ name: "Loyal Shop" }, operator)).data[0] ??
  (await cmp.organizations.create({ name: "Loyal Shop" }, operator))
const asShop = cmp.forOrganization(shop.id)
const [mine] = (await asShop.loyaltyPreferences.find({ member_id: "member-1", channel: "email" })).data
const preference = await asShop.loyaltyPreferences.patch(
  (mine ?? await asShop.loyaltyPreferences.create({ organization_id: shop.id, member_id: "member-1", channel: "email" })).id,
  { opted_in: true }
)
console.log(`member-1 hears about the loyalty programme by ${preference.channel}: ${preference.opted_in}`)

const api = await createApiFromRuntime(cmp.runtime, { allowHttp: true }) // allowHttp: development only
const app = express()
app.use("/consent-api", api.router)
const port = Number(process.env.PORT || 3006)
const host = process.env.HOST || "127.0.0.1"
const server = app.listen(port, host, () => {
  console.log(`API on http://${host}:${port}/consent-api/v1 (GET /v1/loyalty-preferences), docs on http://${host}:${port}/consent-api/docs/`)
})
const stop = () => {
  server.close()
  void cmp.dispose().then(() => process.exit(0))
}
process.once("SIGINT", stop)
process.once("SIGTERM", stop)
