import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { afterAll, describe, expect, it } from "vitest"
import {
  createEvent,
  createHook,
  deliveryOf,
  purposes,
  type Receiver,
  receiver,
  settled,
  storeKind,
  unique,
  useServer
} from "../helpers.js"

/**
 * OpenTelemetry traces through HTTP: with span processors handed in (as a collector's exporter
 * would be), a consent event's request, its transaction, its outbox write and the delivery
 * attempts of its messages form one trace. Tracing switched off is `Traces.test.ts` of the
 * platform package, which reads the outbox through the store's ports.
 */

const receivers: Array<Receiver> = []
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()))
})

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId
const idOf = (span: ReadableSpan) => span.spanContext().spanId
const traceOf = (span: ReadableSpan) => span.spanContext().traceId

/** Whether `span` descends from `ancestor` among `spans`. */
const descends = (spans: ReadonlyArray<ReadableSpan>, span: ReadableSpan, ancestor: ReadableSpan): boolean => {
  const byId = new Map(spans.map((s) => [idOf(s), s]))
  for (let at = byId.get(parentOf(span) ?? ""); at !== undefined; at = byId.get(parentOf(at) ?? "")) {
    if (at === ancestor) return true
  }
  return false
}

describe(`traces (${storeKind})`, () => {
  const exporter = new InMemorySpanExporter()
  const { op } = useServer({ tracing: { serviceName: "cmp-test", spanProcessors: [new SimpleSpanProcessor(exporter)] } })

  it("records a consent event's request, transaction and outbox write, and its delivery attempt, in one trace", async () => {
    const t = await op.tenant()
    const good = await receiver(204)
    receivers.push(good)
    const hook = await createHook(t, good.url, { event_types: ["event.created"] })
    exporter.reset()

    const user = unique("user")
    await createEvent(t, user, purposes(["analytics", true]))
    const [delivery] = await settled(t, hook.id, 1)
    // The attempt's span ends after its attempt is recorded, a moment after the delivery shows as delivered.
    await expect.poll(() => exporter.getFinishedSpans().some((s) => s.name === "webhook.attempt"), { timeout: 5000 }).toBe(true)

    const spans = exporter.getFinishedSpans()
    const request = spans.find((s) => s.name === "POST /v1/consents/events")!
    expect(request, spans.map((s) => s.name).join(", ")).toBeDefined()
    expect(request.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": "/v1/consents/events",
      "http.response.status_code": 201
    })
    expect(request.resource.attributes["service.name"]).toBe("cmp-test")
    const trace = spans.filter((s) => traceOf(s) === traceOf(request))
    const transaction = trace.find((s) => s.name === "transaction" && descends(trace, s, request))
    expect(transaction, trace.map((s) => s.name).join(", ")).toBeDefined()
    const outbox = trace.find((s) => s.name === "outbox.enqueue")!
    expect(outbox).toBeDefined()
    expect(descends(trace, outbox, transaction!)).toBe(true)
    expect(outbox.attributes["outbox.messages"]).toBe(1)

    // The attempt's parent is the outbox write; the receiver's call is its child.
    const attempt = trace.find((s) => s.name === "webhook.attempt")!
    expect(attempt).toBeDefined()
    expect(parentOf(attempt)).toBe(idOf(outbox))
    expect(attempt.attributes).toMatchObject({
      "webhook.event_type": "event.created",
      "webhook.attempt": 1,
      "webhook.outcome": "delivered"
    })
    const call = trace.find((s) => s.name === "POST" && parentOf(s) === idOf(attempt))!
    expect(call).toBeDefined()
    expect(call.attributes["http.response.status_code"]).toBe(204)

    // The SQL client's statements join the platform's spans but start no trace of their own
    // (the dispatcher polls the outbox every 50 ms here).
    expect(spans.filter((s) => s.name.startsWith("sql.") && s.parentSpanContext === undefined).map((s) => s.name)).toEqual([])
    expect(spans.some((s) => s.name === "sql.execute" && descends(spans, s, attempt))).toBe(true)

    // Bounded names and attributes: no span shows the user, the organization or the receiver's address.
    const shown = JSON.stringify(spans.map((s) => [s.name, s.attributes, s.events, s.status]))
    for (const secret of [user, t.org.id, good.url, String(good.port), t.token]) expect(shown).not.toContain(secret)

    // The trace context travels with the message but is never part of the API's answer.
    const stored = await deliveryOf(t, delivery.id)
    expect(stored).not.toHaveProperty("trace_context")
  })

  it("names a request's span by its route's template, never by its path", async () => {
    const t = await op.tenant()
    exporter.reset()
    const r = await t.call("GET", `/v1/organizations/${encodeURIComponent(t.org.id)}`)
    expect(r.status, r.text).toBe(200)
    const names = exporter.getFinishedSpans().filter((s) => s.kind === 1).map((s) => s.name)
    expect(names).toContain("GET /v1/organizations/:id")
    expect(names.join(" ")).not.toContain(t.org.id)
  })
})
