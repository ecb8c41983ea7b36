import { type DeliveryRecord, spanOfTraceparent, subscriberOf, traced, tracingEnabled } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/**
 * The span of one delivery attempt. Its parent is the outbox write that caused the message (the
 * `traceparent` the message carries), so the attempts, retries too, sit in the trace of the
 * request that made the change; a message written while no trace was recorded starts its own.
 * Its attributes name the kind of message, never its ids or payload. Without a tracer, nothing
 * of it is computed: the dispatcher runs this for every message.
 */
export const attemptSpan = (message: DeliveryRecord) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(tracingEnabled, (on) =>
    on
      ? traced("webhook.attempt", {
        kind: "producer",
        ...Option.match(spanOfTraceparent(message.trace_context), { onNone: () => ({ root: true }), onSome: (parent) => ({ parent }) }),
        attributes: {
          "webhook.event_type": message.event_type,
          "webhook.attempt": message.attempts_count + 1,
          "webhook.target": subscriberOf(message.webhook_id) === undefined ? "webhook" : "subscriber"
        }
      })(self)
      : self)
