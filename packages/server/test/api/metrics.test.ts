import { describe, expect, it } from "vitest"
import { call, storeKind, unique } from "./helpers.js"
import { useServer } from "./fixture.js"
import { family, labelValues, scrape, series, valueOf } from "./scrape.js"

/**
 * What `/metrics` counts, read as Prometheus reads it: requests by route template (never an id or
 * a raw path), consent writes and their limits, consent tokens, the `api_requests` quota, the
 * webhook outbox and consent-log verifications.
 */

const METRICS_TOKEN = "metrics-token-0123456789abcdef"
const FEATURES = { consents_api: true, store_cmp_consents: true, store_guest_cmp_consents: true, webhooks: true }

const fixture = useServer(
  { metricsToken: METRICS_TOKEN, publicRateLimit: { perKey: 1_000, perAddress: 1 }, webhookAllowHosts: ["127.0.0.1"] },
  { tenants: [FEATURES] }
)
const { op, server, tenants: [t] } = fixture
const metrics = () => scrape(server.url, METRICS_TOKEN)

const event = (organizationId: string, extra: Record<string, unknown> = {}) => ({
  organization_id: organizationId,
  user: { id: unique("device") },
  consents: { purposes: [{ id: "analytics", enabled: true }] },
  ...extra
})

describe("GET /metrics", () => {
  it("counts requests by service (route template), method and status, with their latency; never ids, raw paths or probes", async () => {
    const secretPath = `/v1/no-such-service/${unique("secret")}`
    expect((await t!.call("GET", `/v1/organizations/${t!.org.id}`)).status).toBe(200)
    expect((await t!.call("GET", secretPath)).status).toBe(404)
    for (let i = 0; i < 3; i++) expect((await call(server.url, "GET", "/healthz")).status).toBe(200)
    await metrics()

    const m = await metrics()
    expect(valueOf(m, "cmp_requests_total", { service: "/v1/organizations/:id", method: "GET", status: "200" })).toBeGreaterThanOrEqual(1)
    expect(valueOf(m, "cmp_requests_total", { service: "(unknown)", method: "GET", status: "404" })).toBeGreaterThanOrEqual(1)
    const latency = series(m, "cmp_request_duration_seconds", { service: "/v1/organizations/:id", method: "GET" })
    expect(latency).toHaveLength(1)
    expect(latency[0]!.value).toBeGreaterThanOrEqual(1)
    expect(family(m, "cmp_request_duration_seconds").type).toBe("histogram")

    const labels = labelValues(m)
    expect(labels.filter((v) => v.includes(t!.org.id) || v.includes(secretPath.split("/").pop()!))).toEqual([])
    const services = new Set(series(m, "cmp_requests_total").map((s) => s.labels?.service))
    for (const probe of ["/healthz", "/readyz", "/metrics"]) expect(services.has(probe), probe).toBe(false)
  })

  it("counts consent events ingested, public writes by outcome, rate-limit rejections and consent-token requests", async () => {
    const before = await metrics()
    const publicWrite = () =>
      call(server.url, "POST", "/v1/consents/events", { body: event(t!.org.id), headers: { "x-public-api-key": t!.org.public_api_key } })
    server.clock.advance(61_000)
    expect((await t!.call("POST", "/v1/consents/events", { body: event(t!.org.id) })).status).toBe(201)
    expect((await publicWrite()).status).toBe(201)
    // One write a minute per address here: the second is refused.
    expect((await publicWrite()).status).toBe(429)
    expect((await t!.call("POST", "/v1/consents/tokens", { body: { organization_id: t!.org.id, organization_user_id: "u-1" } })).status).toBe(201)
    expect((await t!.call("POST", "/v1/consents/tokens", { body: { organization_id: t!.org.id } })).status).toBe(400)
    const after = await metrics()

    const grew = (name: string, labels: Record<string, string> = {}) => valueOf(after, name, labels) - valueOf(before, name, labels)
    expect(grew("cmp_consent_events_ingested_total")).toBe(2)
    expect(grew("cmp_public_writes_total", { outcome: "ok" })).toBe(1)
    expect(grew("cmp_public_writes_total", { outcome: "rate-limited" })).toBe(1)
    expect(grew("cmp_public_rate_limit_rejections_total")).toBe(1)
    expect(grew("cmp_consent_token_requests_total", { outcome: "ok" })).toBe(1)
    expect(grew("cmp_consent_token_requests_total", { outcome: "rejected" })).toBe(1)
    expect(grew("cmp_api_requests_quota_rejections_total")).toBe(0)
  })

  it("counts requests refused by the api_requests quota", async () => {
    const limited = await fixture.tenant()
    const quota = await op.quotaOf(limited.org.id)
    expect((await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { api_requests: 2 } })).status).toBe(200)
    const before = valueOf(await metrics(), "cmp_api_requests_quota_rejections_total")
    expect((await limited.call("GET", "/v1/keys")).status).toBe(200)
    expect((await limited.call("GET", "/v1/keys")).status).toBe(200)
    expect((await limited.call("GET", "/v1/keys")).status).toBe(429)
    expect(valueOf(await metrics(), "cmp_api_requests_quota_rejections_total") - before).toBe(1)
  })

  it("reads the webhook outbox's backlog and the age of its oldest message at each scrape", async () => {
    const hook = await t!.call("POST", "/v1/webhooks", { body: { organization_id: t!.org.id, url: "http://127.0.0.1:9/hook", event_types: ["event.created"] } })
    expect(hook.status, hook.text).toBe(201)
    expect(family(await metrics(), "cmp_webhook_outbox_pending").type).toBe("gauge")
    const before = valueOf(await metrics(), "cmp_webhook_outbox_pending")
    // Nothing delivers in this server: the message stays pending.
    expect((await t!.call("POST", "/v1/consents/events", { body: event(t!.org.id) })).status).toBe(201)
    expect(valueOf(await metrics(), "cmp_webhook_outbox_pending")).toBe(before + 1)
    server.clock.advance(600_000)
    expect(valueOf(await metrics(), "cmp_webhook_outbox_oldest_age_seconds")).toBeGreaterThanOrEqual(600)
  })

  it("counts consent-log verifications by result", async () => {
    const before = valueOf(await metrics(), "cmp_consent_log_verifications_total", { result: "valid" })
    const r = await t!.call("GET", `/v1/consents/log/verify?organization_id=${t!.org.id}`)
    expect(r.status, r.text).toBe(200)
    expect(r.body.valid).toBe(true)
    expect(valueOf(await metrics(), "cmp_consent_log_verifications_total", { result: "valid" }) - before).toBe(1)
  })

  it("shows the platform's connections at the database by state (PostgreSQL), none on SQLite", async () => {
    const m = await metrics()
    const byState = series(m, "cmp_database_connections")
    if (storeKind === "sqlite") expect(byState).toEqual([])
    // The scrape's own query runs on one of them.
    else expect(valueOf(m, "cmp_database_connections", { state: "active" })).toBeGreaterThanOrEqual(1)
  })
})
