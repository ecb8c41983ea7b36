import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"

/**
 * Spans of the platform's own work (a request, a transaction, an outbox write, a delivery
 * attempt). Their names and attributes are bounded: a route's template, never a path, an id of
 * a user, a body or a token. A failed span says the error's kind (its `_tag`), never its
 * message, which may name a user. Whether spans are recorded is the composition's choice: with
 * the tracer disabled (no exporter configured) these helpers run the effect as it is.
 */

/** What a failed span records: the kind of error only. */
export class SpanFailure extends Error {
  constructor(kind: string) {
    super(kind)
    this.name = kind
  }
}

const kindOf = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const e = failure.value
    return typeof e === "object" && e !== null && "_tag" in e && typeof e._tag === "string" ? e._tag : "Error"
  }
  return "Defect"
}

/** The exit a span ends with: a failure reduced to its kind, an interruption kept as it is. */
const bounded = (exit: Exit.Exit<unknown, unknown>): Exit.Exit<unknown, unknown> =>
  Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause) ? exit : Exit.fail(new SpanFailure(kindOf(exit.cause)))

/** Whether spans are recorded in this fiber (the composition disables the tracer when none is configured). */
export const tracingEnabled: Effect.Effect<boolean> = FiberRef.get(FiberRef.currentTracerEnabled)

/**
 * Runs `self` in a span named `name` (a child of the current span, or of `options.parent`).
 * Unlike `Effect.withSpan`, a failure shows only its kind.
 */
export const traced = (name: string, options: Tracer.SpanOptions = {}) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(tracingEnabled, (on) =>
    on
      ? Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(Effect.makeSpan(name, { captureStackTrace: false, ...options }), (span) =>
          restore(Effect.withParentSpan(self, span)).pipe(
            Effect.onExit((exit) =>
              Effect.flatMap(Clock.currentTimeNanos, (now) => Effect.sync(() => span.end(now, bounded(exit)))))
          ))
      )
      : self)

/**
 * Runs the answering of a request in its span, named by the route's template
 * (`POST /v1/consents/events`); the span ends with the answer's status, failed from 500 up.
 */
export const tracedRequest = (method: string, route: string) =>
<A extends { readonly status: number }, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(tracingEnabled, (on) =>
    on
      ? Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(
          Effect.makeSpan(`${method} ${route}`, {
            kind: "server",
            captureStackTrace: false,
            attributes: { "http.request.method": method, "http.route": route }
          }),
          (span) =>
            restore(Effect.withParentSpan(self, span)).pipe(
              Effect.onExit((exit) =>
                Effect.flatMap(Clock.currentTimeNanos, (now) =>
                  Effect.sync(() => {
                    if (Exit.isSuccess(exit)) span.attribute("http.response.status_code", exit.value.status)
                    const failed = Exit.isSuccess(exit) && exit.value.status >= 500
                      ? Exit.fail(new SpanFailure(String(exit.value.status)))
                      : bounded(exit)
                    span.end(now, failed)
                  })))
            )
        )
      )
      : self)

// ---------------------------------------------------------------- W3C trace context

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/
const ZEROS = /^0+$/

/**
 * The W3C `traceparent` of the current span, none when no span is recorded: what a message
 * written now carries, so the work it causes later joins the same trace.
 */
export const currentTraceparent: Effect.Effect<Option.Option<string>> = Effect.flatMap(tracingEnabled, (on) =>
  // Without a tracer there is no span, and asking for one fails with an error whose stack trace
  // costs more than the rest of an outbox write.
  on
    ? Effect.map(
      Effect.option(Effect.currentPropagatedSpan),
      Option.flatMap((span) => {
        const value = `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`
        return TRACEPARENT.test(value) ? Option.some(value) : Option.none()
      })
    )
    : Effect.succeed(Option.none()))

/** Sets an attribute of the current span, when spans are recorded (`currentTraceparent` says why it asks first). */
export const annotateSpan = (key: string, value: unknown): Effect.Effect<void> =>
  Effect.flatMap(tracingEnabled, (on) => (on ? Effect.annotateCurrentSpan(key, value) : Effect.void))

/** The span a `traceparent` names, as a parent or a link of spans in this process; none when it is not one. */
export const spanOfTraceparent = (traceparent: string | null | undefined): Option.Option<Tracer.ExternalSpan> => {
  const m = traceparent ? TRACEPARENT.exec(traceparent) : null
  if (m === null || ZEROS.test(m[1]!) || ZEROS.test(m[2]!)) return Option.none()
  return Option.some(Tracer.externalSpan({ traceId: m[1]!, spanId: m[2]!, sampled: (parseInt(m[3]!, 16) & 1) === 1 }))
}
