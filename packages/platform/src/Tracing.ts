import { traced, UnitOfWork } from "@cmp/core"
import * as Resource from "@effect/opentelemetry/Resource"
import * as OtelTracer from "@effect/opentelemetry/Tracer"
import * as OtelApi from "@opentelemetry/api"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type Sampler,
  SamplingDecision,
  type SpanProcessor
} from "@opentelemetry/sdk-trace-base"
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

const processorsOf = (options: TracingOptions | undefined): ReadonlyArray<SpanProcessor> => [
  ...(options?.endpoint ? [new BatchSpanProcessor(new OTLPTraceExporter({ url: tracesUrl(options.endpoint) }))] : []),
  ...(options?.spanProcessors ?? [])
]

/**
 * Only the platform's own work starts a trace; a span below another follows its parent. The SQL
 * client's statements outside any (a dispatcher's polls, every few hundred milliseconds) would
 * otherwise each be a trace of their own.
 */
const sampler: Sampler = {
  shouldSample: (context, _traceId, name) => {
    const parent = OtelApi.trace.getSpanContext(context)
    const sampled = parent !== undefined && OtelApi.isSpanContextValid(parent)
      ? (parent.traceFlags & OtelApi.TraceFlags.SAMPLED) === OtelApi.TraceFlags.SAMPLED
      : !name.startsWith("sql.")
    return { decision: sampled ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD }
  },
  toString: () => "PlatformWorkSampler"
}

/** Whether the options record spans at all. */
export const isTracing = (options: TracingOptions | undefined) =>
  Boolean(options?.endpoint) || (options?.spanProcessors?.length ?? 0) > 0

/**
 * The tracer of the platform's fibers: OpenTelemetry's when tracing is configured (its spans
 * flushed when the layer is released), else disabled.
 */
export const layer = (options: TracingOptions | undefined): Layer.Layer<never> => {
  if (!isTracing(options)) return Layer.setTracerEnabled(false)
  const provider = Layer.scoped(
    OtelTracer.OtelTracerProvider,
    Effect.flatMap(Resource.Resource, (resource) =>
      Effect.acquireRelease(
        Effect.sync(() => new BasicTracerProvider({ resource, sampler, spanProcessors: [...processorsOf(options)] })),
        // A collector that is down must not hold the shutdown: what is not sent in time is lost.
        (p) =>
          Effect.tryPromise(() => p.forceFlush().then(() => p.shutdown())).pipe(
            Effect.timeoutOption("3 seconds"),
            Effect.ignore
          )
      ))
  )
  return Layer.discard(OtelTracer.layer).pipe(
    Layer.provide(provider),
    Layer.provide(Resource.layer({ serviceName: options?.serviceName ?? defaultServiceName }))
  )
}

/** The store's transactions, each in a span (`transaction`), when spans are recorded. */
export const tracedTransactions: Layer.Layer<UnitOfWork, never, UnitOfWork> = Layer.effect(
  UnitOfWork,
  Effect.map(UnitOfWork, (uow) => UnitOfWork.of({ ...uow, transaction: (effect) => traced("transaction")(uow.transaction(effect)) }))
)
