import { Metrics, type MetricsService, StoreProbe } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Prometheus from "prom-client"

/** Longest wait for the store's gauges: a scrape answers within Prometheus's usual 10 s timeout. */
const READ_TIMEOUT_MS = 2_000

/** Request and delivery latencies, from a cache hit to a webhook call near its timeout. */
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

/**
 * The platform's metrics in a Prometheus registry of their own: never prom-client's global one,
 * so two platforms in one process (two hosts, two tests) count apart. The outbox gauges (and,
 * on PostgreSQL, the connection counts) are read from the store at each scrape.
 */
export const make = Effect.gen(function*() {
  const probe = yield* StoreProbe
  const registry = new Prometheus.Registry()
  const registers = [registry]
  const requests = new Prometheus.Counter({
    name: "cmp_requests_total",
    help: "Requests answered, by service (route template), method and status",
    labelNames: ["service", "method", "status"] as const,
    registers
  })
  const requestSeconds = new Prometheus.Histogram({
    name: "cmp_request_duration_seconds",
    help: "Time to answer a request, by service (route template) and method",
    labelNames: ["service", "method"] as const,
    buckets: SECONDS,
    registers
  })
  const ingested = new Prometheus.Counter({
    name: "cmp_consent_events_ingested_total",
    help: "Consent events written",
    registers
  })
  const pending = new Prometheus.Gauge({
    name: "cmp_webhook_outbox_pending",
    help: "Webhook messages waiting for delivery (pending or being delivered)",
    registers
  })
  const oldest = new Prometheus.Gauge({
    name: "cmp_webhook_outbox_oldest_age_seconds",
    help: "Age of the oldest webhook message waiting for delivery (0 when none waits)",
    registers
  })
  const connections = new Prometheus.Gauge({
    name: "cmp_database_connections",
    help: "The platform's connections at the database (every process), by state: active ones run a statement (PostgreSQL only)",
    labelNames: ["state"] as const,
    registers
  })
  const attempts = new Prometheus.Counter({
    name: "cmp_webhook_delivery_attempts_total",
    help: "Webhook delivery attempts, by where they left the message: delivered, retry or failed",
    labelNames: ["outcome"] as const,
    registers
  })
  const attemptSeconds = new Prometheus.Histogram({
    name: "cmp_webhook_delivery_duration_seconds",
    help: "Time of one delivery attempt, by outcome",
    labelNames: ["outcome"] as const,
    buckets: SECONDS,
    registers
  })
  const failed = new Prometheus.Counter({
    name: "cmp_webhook_deliveries_failed_total",
    help: "Webhook messages given up (moved to failed)",
    registers
  })
  const mails = new Prometheus.Counter({
    name: "cmp_invitation_mail_attempts_total",
    help: "Attempts to send an invitation's mail, by where they left it: sent, retry or failed (given up)",
    labelNames: ["outcome"] as const,
    registers
  })
  const quotaRejections = new Prometheus.Counter({
    name: "cmp_api_requests_quota_rejections_total",
    help: "Requests refused because the organization's api_requests quota was spent",
    registers
  })
  const rateLimited = new Prometheus.Counter({
    name: "cmp_public_rate_limit_rejections_total",
    help: "End users' consent writes (a public key's, a consent token's) refused by the per-organization or per-address rate limit",
    registers
  })
  const publicWrites = new Prometheus.Counter({
    name: "cmp_public_writes_total",
    help: "Public consent writes (with a public key), by outcome",
    labelNames: ["outcome"] as const,
    registers
  })
  const tokenRequests = new Prometheus.Counter({
    name: "cmp_consent_token_requests_total",
    help: "Consent-token requests, by outcome",
    labelNames: ["outcome"] as const,
    registers
  })
  const verifications = new Prometheus.Counter({
    name: "cmp_consent_log_verifications_total",
    help: "Consent-log verifications, by result: valid or invalid",
    labelNames: ["result"] as const,
    registers
  })
  // Every counter shows from the first scrape, at zero, so an alert's `rate()` has a series.
  for (const outcome of ["delivered", "retry", "failed"]) attempts.labels(outcome).inc(0)
  for (const outcome of ["sent", "retry", "failed"]) mails.labels(outcome).inc(0)
  for (const outcome of ["ok", "rejected", "rate-limited", "error"]) {
    publicWrites.labels(outcome).inc(0)
    tokenRequests.labels(outcome).inc(0)
  }
  for (const result of ["valid", "invalid"]) verifications.labels(result).inc(0)

  const service: MetricsService = {
    request: (route, method, status, seconds) =>
      Effect.sync(() => {
        requests.labels(route, method, String(status)).inc()
        requestSeconds.labels(route, method).observe(seconds)
      }),
    consentEventsIngested: (count) => Effect.sync(() => ingested.inc(count)),
    deliveryAttempt: (outcome, seconds) =>
      Effect.sync(() => {
        attempts.labels(outcome).inc()
        attemptSeconds.labels(outcome).observe(seconds)
        if (outcome === "failed") failed.inc()
      }),
    mailAttempt: (outcome) => Effect.sync(() => mails.labels(outcome).inc()),
    quotaRejected: Effect.sync(() => quotaRejections.inc()),
    publicRateLimited: Effect.sync(() => rateLimited.inc()),
    publicWrite: (outcome) => Effect.sync(() => publicWrites.labels(outcome).inc()),
    consentTokenRequest: (outcome) => Effect.sync(() => tokenRequests.labels(outcome).inc()),
    logVerified: (valid) => Effect.sync(() => verifications.labels(valid ? "valid" : "invalid").inc()),
    scrape: Effect.gen(function*() {
      // A store that cannot answer (soon) leaves the gauges as last read: the scrape itself still answers.
      const read = <A>(effect: Effect.Effect<A>) =>
        Effect.either(Effect.timeoutFail(Effect.catchAllDefect(effect, Effect.fail), {
          duration: READ_TIMEOUT_MS,
          onTimeout: () => "timed out"
        }))
      const backlog = yield* read(probe.outbox)
      if (backlog._tag === "Right") {
        pending.set(backlog.right.pending)
        oldest.set(backlog.right.oldestAgeSeconds)
      }
      const use = yield* read(probe.connections)
      if (use._tag === "Right") {
        connections.reset()
        for (const { count, state } of use.right) connections.labels(state).set(count)
      }
      const text = yield* Effect.promise(() => registry.metrics())
      return { contentType: registry.contentType, text }
    })
  }
  return service
})

export const layer: Layer.Layer<Metrics, never, StoreProbe> = Layer.effect(Metrics, make)
