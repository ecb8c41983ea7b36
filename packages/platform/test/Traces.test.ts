import { DeliveriesTable, eq, Storage, tracingEnabled, UnitOfWork } from "@cmp/core"
import { postgres } from "@cmp/store-postgres"
import { sqlite } from "@cmp/store-sqlite"
import { createTestDatabase } from "@cmp/test-support/database"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { type ConsentPlatformApi, createPlatform, Platform, PlatformConfig, type PlatformOptions, type StoreLayer } from "../src/index.js"

/**
 * Traces at the composition, through the store's ports: the outbox row carries the trace context
 * of its write only while spans are recorded, and the OpenTelemetry variables turn the export to
 * a collector on. On SQLite, and on PostgreSQL where a server is named (`DATABASE_URL`) or
 * `CMP_TEST_STORE=postgres` asks for it.
 */

type StoreKind = "sqlite" | "postgres"
const stores: ReadonlyArray<StoreKind> = process.env.DATABASE_URL || process.env.CMP_TEST_STORE === "postgres"
  ? ["sqlite", "postgres"]
  : ["sqlite"]

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const database = async (kind: StoreKind): Promise<StoreLayer> => {
  if (kind === "sqlite") return sqlite({ filename: ":memory:" })
  const db = await createTestDatabase()
  cleanups.push(db.close)
  return postgres({ url: db.url, ...(db.maxConnections ? { maxConnections: db.maxConnections } : {}) })
}

const open = async (kind: StoreKind, overrides: Partial<PlatformOptions> = {}) => {
  const cmp = await createPlatform({ store: await database(kind), hashCost: 1024, logLevel: "None", dispatcher: false, ...overrides })
  cleanups.push(() => cmp.dispose())
  return cmp
}

/** An organization with a webhook (never called: no dispatcher) and a consent event: its outbox rows. */
const consentWithMessage = async (cmp: ConsentPlatformApi) => {
  const as = cmp.asOperator()
  const org = await cmp.organizations.create({ name: "Traced" }, { as })
  const flags = await cmp.premiumFeatures.find({ organization_id: org.id }, { as })
  await cmp.premiumFeatures.patch(flags.data[0]!.id, { consents_api: true, webhooks: true }, { as })
  await cmp.runtime.runPromise(cmp.effect.webhooks.create({
    organization_id: org.id,
    url: "https://receiver.example/hook",
    event_types: ["event.created"]
  }, { as }))
  await cmp.consents.events.create({
    organization_id: org.id,
    user: { organization_user_id: "u-1" },
    consents: { purposes: [{ id: "analytics", enabled: true }] }
  }, { as: cmp.asOrganization(org.id) })
  const rows = await cmp.runtime.runPromise(Effect.flatMap(Storage, (s) =>
    s.repository(DeliveriesTable).find({ count: false, where: [eq("organization_id", org.id)], sort: [], limit: 10, skip: 0 })))
  return { org, rows: rows.data }
}

describe.each(stores)("traces (%s)", (kind) => {
  it("writes the outbox write's trace context with the message while spans are recorded", async () => {
    const exporter = new InMemorySpanExporter()
    const cmp = await open(kind, { tracing: { spanProcessors: [new SimpleSpanProcessor(exporter)] } })
    const { rows } = await consentWithMessage(cmp)
    const outbox = exporter.getFinishedSpans().filter((s) => s.name === "outbox.enqueue" && s.attributes["outbox.messages"] === 1)
    expect(outbox).toHaveLength(1)
    const { spanId, traceId } = outbox[0]!.spanContext()
    expect(rows).toHaveLength(1)
    expect(rows[0]!.trace_context).toBe(`00-${traceId}-${spanId}-01`)
    // The write ran in a transaction's span (the SQL client's own spans in between).
    const spans = new Map(exporter.getFinishedSpans().map((s) => [s.spanContext().spanId, s]))
    const ancestors: Array<string> = []
    for (let at = spans.get(outbox[0]!.parentSpanContext?.spanId ?? ""); at; at = spans.get(at.parentSpanContext?.spanId ?? "")) {
      ancestors.push(at.name)
    }
    expect(ancestors).toContain("transaction")
  })

  it("records no span and writes no trace context when tracing is not configured", async () => {
    const cmp = await open(kind)
    expect(await cmp.runtime.runPromise(tracingEnabled)).toBe(false)
    const { rows } = await consentWithMessage(cmp)
    expect(rows).toHaveLength(1)
    expect(rows[0]!.trace_context).toBeNull()
  })
})

// ---------------------------------------------------------------- the OpenTelemetry variables

const fromEnv = (env: Record<string, string>) => ConfigProvider.fromMap(new Map(Object.entries(env)))

/** A local collector: the OTLP/HTTP posts it receives. */
const collector = async () => {
  const posts: Array<{ url: string; body: string }> = []
  const server = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      posts.push({ url: req.url ?? "", body: Buffer.concat(chunks).toString("utf8") })
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, posts }
}

describe("OTEL_EXPORTER_OTLP_ENDPOINT", () => {
  const transaction = Effect.flatMap(UnitOfWork, (uow) => uow.transaction(Effect.void))
  const runtimeOf = (env: Record<string, string>) =>
    ManagedRuntime.make(
      Platform.layerConfig({ store: sqlite({ filename: ":memory:" }), dispatcher: false, overrides: { hashCost: 1024 } }).pipe(
        Layer.provide(Layer.setConfigProvider(fromEnv({ LOG_LEVEL: "None", ...env })))
      )
    )

  it("exports the spans to the collector over OTLP/HTTP, flushed when the platform is disposed of", async () => {
    const otlp = await collector()
    const runtime = runtimeOf({ OTEL_EXPORTER_OTLP_ENDPOINT: `${otlp.url}/`, OTEL_SERVICE_NAME: "cmp-config" })
    await runtime.runPromise(transaction)
    await runtime.dispose()
    expect(otlp.posts.length).toBeGreaterThan(0)
    expect(otlp.posts.every((p) => p.url === "/v1/traces")).toBe(true)
    const sent = otlp.posts.map((p) => p.body).join("\n")
    expect(sent).toContain("cmp-config")
    expect(sent).toContain("\"transaction\"")
  })

  it("unset, exports nothing and records no span", async () => {
    const otlp = await collector()
    const runtime = runtimeOf({ OTEL_SERVICE_NAME: "cmp-config" })
    expect(await runtime.runPromise(tracingEnabled)).toBe(false)
    await runtime.runPromise(transaction)
    await runtime.dispose()
    expect(otlp.posts).toEqual([])
  })

  it("must be a web URL", () => {
    const r = Effect.runSync(Effect.either(PlatformConfig.platform).pipe(
      Effect.withConfigProvider(fromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }))
    ))
    expect(Either.isLeft(r) && PlatformConfig.describe(r.left)).toContain("OTEL_EXPORTER_OTLP_ENDPOINT must be an https:// or http:// URL")
  })
})
