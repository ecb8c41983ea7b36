import * as Resource from "@effect/opentelemetry/Resource"
import * as OtelTracer from "@effect/opentelemetry/Tracer"
import * as OtelApi from "@opentelemetry/api"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { BasicTracerProvider, BatchSpanProcessor, type Sampler, SamplingDecision, type SpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/**
 * OpenTelemetry's tracer, exporter and span processors: loaded by `Tracing.layer` only when
 * tracing is configured, so a server that records no spans never loads (or keeps in memory) the
 * OpenTelemetry SDK.
 */

/** What `Tracing.layer` hands over: the collector's URL for traces, when one is configured. */
export interface OtelSettings {
  readonly serviceName: string
  readonly tracesUrl: string | undefined
  readonly spanProcessors: ReadonlyArray<SpanProcessor>
}

const processorsOf = (settings: OtelSettings): ReadonlyArray<SpanProcessor> => [
  ...(settings.tracesUrl ? [new BatchSpanProcessor(new OTLPTraceExporter({ url: settings.tracesUrl }))] : []),
  ...settings.spanProcessors
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

/** OpenTelemetry's tracer for the platform's fibers, its spans flushed when the layer is released. */
export const layer = (settings: OtelSettings): Layer.Layer<never> => {
  const provider = Layer.scoped(
    OtelTracer.OtelTracerProvider,
    Effect.flatMap(Resource.Resource, (resource) =>
      Effect.acquireRelease(
        Effect.sync(() => new BasicTracerProvider({ resource, sampler, spanProcessors: [...processorsOf(settings)] })),
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
    Layer.provide(Resource.layer({ serviceName: settings.serviceName }))
  )
}

