import { describe, expect, it } from "vitest"
import { ADMIN, call, client, unique } from "./helpers.js"
import { consoleLines } from "./console-lines.js"
import { useServer } from "./fixture.js"

/**
 * Every secret the platform hands out (key secrets, public keys, webhook signing and OAuth
 * client secrets, signing secrets, integration tokens, access and consent tokens), made and
 * rotated through the API, then looked for in the three places an operator reads without
 * being shown a secret: the server's log lines, `/metrics`, and the audit trail. Each must hold
 * none of them, and the audit trail must still name what changed.
 */

const METRICS_TOKEN = "metrics-token-secrets-never-shown-0123"
// Registered before the server's hooks: the spy is on before it starts, and off after it stops.
const lines = consoleLines()

const FEATURES = { consents_api: true, store_cmp_consents: true, store_guest_cmp_consents: true, webhooks: true }
const { op, server, tenant } = useServer({ logLevel: "Debug", metricsToken: METRICS_TOKEN, webhookAllowHosts: ["127.0.0.1"] })

describe("secrets are never shown after they were handed out", () => {
  it("neither the logs, nor /metrics, nor the audit trail hold a secret made or rotated through the API", async () => {
    const t = await tenant(FEATURES)
    const secrets: Array<[string, string]> = []
    const keep = (what: string, value: unknown) => {
      expect(typeof value, what).toBe("string")
      secrets.push([what, value as string])
    }
    keep("a tenant's public key", t.org.public_api_key)
    keep("a tenant's access token", t.token)

    const key = await op.call("POST", "/v1/keys", { body: { organization_id: t.org.id, name: "rotated" } })
    expect(key.status, key.text).toBe(201)
    keep("an API key's secret", key.body.secret)
    const rotatedKey = await op.call("POST", `/v1/keys/${key.body.id}/rotate-secret`, { body: {} })
    expect(rotatedKey.status, rotatedKey.text).toBe(200)
    keep("an API key's rotated secret", rotatedKey.body.secret)
    keep("a session of the rotated key", await client(server.url).login(key.body.id, rotatedKey.body.secret))

    const renewed = await op.call("POST", `/v1/organizations/${t.org.id}/rotate-public-key`, { body: {} })
    expect(renewed.status, renewed.text).toBe(200)
    keep("a rotated public key", renewed.body.public_api_key)

    const clientSecret = unique("oauth-client-secret")
    keep("a webhook's OAuth client secret", clientSecret)
    const hook = await t.call("POST", "/v1/webhooks", {
      body: {
        organization_id: t.org.id,
        url: "http://127.0.0.1:9/hook",
        auth: { token_url: "http://127.0.0.1:9/token", client_id: "cid", client_secret: clientSecret }
      }
    })
    expect(hook.status, hook.text).toBe(201)
    keep("a webhook's signing secret", hook.body.signing_secret)
    const rotatedHook = await t.call("POST", `/v1/webhooks/${hook.body.id}/rotate-secret`, { body: { overlap_s: 60 } })
    expect(rotatedHook.status, rotatedHook.text).toBe(200)
    keep("a webhook's rotated signing secret", rotatedHook.body.signing_secret)
    const newClientSecret = unique("oauth-client-secret")
    keep("a webhook's replaced OAuth client secret", newClientSecret)
    const patched = await t.call("PATCH", `/v1/webhooks/${hook.body.id}`, {
      body: { auth: { token_url: "http://127.0.0.1:9/token", client_id: "cid", client_secret: newClientSecret } }
    })
    expect(patched.status, patched.text).toBe(200)

    const signing = await t.call("POST", "/v1/secrets", { body: { organization_id: t.org.id, name: "signing" } })
    expect(signing.status, signing.text).toBe(201)
    keep("a signing secret", signing.body.secret)

    const integration = await op.call("POST", "/v1/platform-integrations", { body: { name: "Shop plugin", organization_id: t.org.id } })
    expect(integration.status, integration.text).toBe(201)
    keep("a platform integration's token", integration.body.token)
    const session = await call(server.url, "POST", "/v1/platform-integrations/sessions", {
      headers: { "x-platform-authorization": integration.body.token }
    })
    expect(session.status, session.text).toBe(201)
    keep("an integration's access token", session.body.access_token)

    const person = unique("user")
    const consentToken = await t.call("POST", "/v1/consents/tokens", { body: { organization_id: t.org.id, organization_user_id: person } })
    expect(consentToken.status, consentToken.text).toBe(201)
    keep("a consent token", consentToken.body.id_token)
    keep("the operator's secret", ADMIN.secret)
    keep("the operator's access token", op.token)

    // Requests that use the secrets, so that their routes and principals are logged and counted.
    expect((await call(server.url, "POST", "/v1/consents/events", {
      body: { organization_id: t.org.id, user: { id: unique("device") }, consents: { purposes: [{ id: "analytics", enabled: true }] } },
      headers: { "x-public-api-key": renewed.body.public_api_key }
    })).status).toBe(201)
    const own = await call(server.url, "GET", `/v1/consents/users/${person}?$by_organization_user_id=true`, { token: consentToken.body.id_token })
    expect(own.status, own.text).toBeLessThan(500)

    const audit = await op.call("GET", `/v1/audit-logs?organization_id=${t.org.id}&$limit=200`)
    expect(audit.status, audit.text).toBe(200)
    const actions = (audit.body.data as Array<{ action: string; resource: string }>).map((e) => `${e.action} ${e.resource}`)
    for (const done of ["rotate keys", "rotate organizations", "create webhooks", "rotate webhooks", "patch webhooks", "create secrets"]) {
      expect(actions, done).toContain(done)
    }
    const scraped = await call(server.url, "GET", "/metrics", { token: METRICS_TOKEN })
    expect(scraped.status).toBe(200)
    const metrics = scraped.text
    await new Promise((resolve) => setTimeout(resolve, 50))
    const logs = lines.join("\n")
    expect(logs.length).toBeGreaterThan(0)

    for (const [what, value] of secrets) {
      expect(logs.includes(value), `${what} in the logs`).toBe(false)
      expect(metrics.includes(value), `${what} in /metrics`).toBe(false)
      expect(audit.text.includes(value), `${what} in the audit trail`).toBe(false)
    }
  })
})
