import { traced, UnitOfWork } from "@cmp/core"
import type { SpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/**
 * Traces over OpenTelemetry: spans of requests, transactions, outbox writes and delivery
 * attempts, exported over OTLP/HTTP to a collector (`OTEL_EXPORTER_OTLP_ENDPOINT`) or handed to
 * span processors of the host's own. Without either, Effect's tracer is disabled: every span is
 * a no-op, no exporter exists and no message carries a trace context.
 */
export interface TracingOptions {
  /** `OTEL_SERVICE_NAME`: the `service.name` of every span (default `consent-platform`). */
  readonly serviceName?: string | undefined
  /**
   * `OTEL_EXPORTER_OTLP_ENDPOINT`: the collector's OTLP/HTTP base URL; spans are posted in
   * batches to `<endpoint>/v1/traces`.
   */
  readonly endpoint?: string | undefined
  /**
   * Span processors of the host's own, beside the endpoint's (a `SimpleSpanProcessor` over an
   * `InMemorySpanExporter` in tests). Disposing of the platform flushes and shuts them down.
   */
  readonly spanProcessors?: ReadonlyArray<SpanProcessor> | undefined
}

export const defaultServiceName = "consent-platform"

/** The collector's URL for traces, from the OTLP base endpoint as the OpenTelemetry variable gives it. */
export const tracesUrl = (endpoint: string) => `${endpoint.replace(/\/+$/, "")}/v1/traces`

/** Whether the options record spans at all. */
export const isTracing = (options: TracingOptions | undefined) =>
  Boolean(options?.endpoint) || (options?.spanProcessors?.length ?? 0) > 0

/**
 * The tracer of the platform's fibers: OpenTelemetry's when tracing is configured (its spans
 * flushed when the layer is released), else disabled. The SDK is imported only then: it is
 * several megabytes of code and heap that a server without traces would keep for nothing.
 */
export const layer = (options: TracingOptions | undefined): Layer.Layer<never> =>
  isTracing(options)
    ? Layer.unwrapEffect(Effect.map(Effect.promise(() => import("./OtelTracing.js")), (otel) =>
      otel.layer({
        serviceName: options?.serviceName ?? defaultServiceName,
        tracesUrl: options?.endpoint ? tracesUrl(options.endpoint) : undefined,
        spanProcessors: options?.spanProcessors ?? []
      })))
    : Layer.setTracerEnabled(false)

/** The store's transactions, each in a span (`transaction`), when spans are recorded. */
export const tracedTransactions: Layer.Layer<UnitOfWork, never, UnitOfWork> = Layer.effect(
  UnitOfWork,
  Effect.map(UnitOfWork, (uow) => UnitOfWork.of({ ...uow, transaction: (effect) => traced("transaction")(uow.transaction(effect)) }))
)
