import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as http from "node:http"
import * as https from "node:https"
import {
  DEFAULT_MAX_RESPONSE_BYTES,
  errorMessage,
  responseReader,
  type SendResult,
  timeoutMessage,
  withRetryAfter
} from "./Answer.js"
import { type Checked, prepare, requestOptions, type SendRequest, type Target } from "./Destination.js"

/** A body written chunk by chunk (an export destination), on a connection of its own. */

/** A call that can't be made at all (bad URL or header, refused address, failed resolution): no socket was opened. */
export class SendRefused extends Data.TaggedError("SendRefused")<{ readonly message: string }> {}

/** A streamed call that failed while the body was being written (connection error, timeout, an early answer). */
export class StreamFailed extends Data.TaggedError("StreamFailed")<{
  readonly message: string
  /** The receiver's status when it answered before the body was complete, else null. */
  readonly status: number | null
}> {}

/** What `send` takes, but the body, which is written chunk by chunk (always chunked: framing headers are ours). */
export interface StreamRequest extends Omit<SendRequest, "body" | "timeoutMs"> {
  /**
   * Bounds each wait on the receiver, not the whole call (which lasts as long as the caller
   * has data): the resolution, a write waiting for the connection to drain, and the answer
   * once the body has ended.
   */
  readonly timeoutMs: number
}

/** An open streamed request: the body is written chunk by chunk, then `end` awaits the answer. */
export interface StreamingCall {
  /** Sends one chunk; waits while the connection's buffer is full (back-pressure). */
  readonly write: (chunk: string | Uint8Array) => Effect.Effect<void, StreamFailed>
  /**
   * Ends the body and answers as `send` does: a 3xx (never followed) or any other non-2xx is
   * a status for the caller to treat as a failure; transport problems are in `error`.
   */
  readonly end: Effect.Effect<SendResult>
  /** Drops the connection; a later `end` answers the aborted result. */
  readonly abort: Effect.Effect<void>
}

/** `prepare` within the timeout, as an Effect: refusals come back before any socket is opened. */
const prepareWithin = (request: Checked & { readonly timeoutMs: number }) =>
  Effect.async<Target, SendRefused>((resume) => {
    let settled = false
    const done = (outcome: Target | string) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resume(typeof outcome === "string" ? Effect.fail(new SendRefused({ message: outcome })) : Effect.succeed(outcome))
    }
    const timer = setTimeout(() => done(timeoutMessage(request.timeoutMs, null)), Math.max(0, request.timeoutMs))
    prepare(request).then(done, (e) => done(errorMessage(e)))
    return Effect.sync(() => {
      settled = true
      clearTimeout(timer)
    })
  })

/** Framing is ours: a caller's length would contradict the chunked body. */
const framingHeaders = new Set(["content-length", "transfer-encoding"])

const startStream = (target: Target, request: StreamRequest, nowMs: number, started: number): StreamingCall => {
  const reader = responseReader(request.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES, nowMs)
  let result: SendResult | undefined
  let ended = false
  let answeredEarly = false
  let timer: ReturnType<typeof setTimeout> | undefined
  // Whoever waits (a write for drain, `end` for the answer) hears when the call settles.
  const onSettle = new Set<() => void>()

  const headers: Record<string, string> = { "transfer-encoding": "chunked" }
  for (const [name, value] of Object.entries(request.headers)) {
    if (!framingHeaders.has(name.toLowerCase())) headers[name] = value
  }
  // A fresh connection (no kept-alive agent): a long body holds its socket, and nothing is
  // gained by keeping it for a next export minutes later.
  const req = (target.secure ? https : http).request(requestOptions(target, request, headers, false))

  const settle = (error: string | null) => {
    if (result) return
    stopTimer()
    // The receiver answered before it had the whole body: whatever it said, it did not take it.
    const early = answeredEarly && error === null ? `answered ${reader.status} before the body was complete` : error
    result = withRetryAfter(
      { status: reader.status, error: early, responseExcerpt: reader.excerpt() },
      Math.round(performance.now() - started),
      reader.retryAfter
    )
    req.destroy()
    for (const listener of [...onSettle]) listener()
    onSettle.clear()
  }
  function stopTimer() {
    clearTimeout(timer)
    timer = undefined
  }
  const startTimer = () => {
    if (timer !== undefined) return
    timer = setTimeout(() => settle(timeoutMessage(request.timeoutMs, reader.status)), Math.max(0, request.timeoutMs))
  }
  const failedOf = (r: SendResult) =>
    new StreamFailed({ message: r.error ?? `answered ${r.status}`, status: r.status })

  req.on("response", (res) => {
    answeredEarly = !ended
    reader.read(res, (error) => settle(error))
  })
  req.on("error", (e) => settle(errorMessage(e)))

  const write = (chunk: string | Uint8Array) =>
    Effect.async<void, StreamFailed>((resume) => {
      if (result) return resume(Effect.fail(failedOf(result)))
      if (ended) return resume(Effect.fail(new StreamFailed({ message: "the body has already ended", status: null })))
      if (req.write(chunk)) return resume(Effect.void)
      const onDrain = () => {
        cleanup()
        if (!ended) stopTimer()
        resume(Effect.void)
      }
      const settled = () => {
        cleanup()
        resume(Effect.fail(failedOf(result!)))
      }
      const cleanup = () => {
        req.off("drain", onDrain)
        onSettle.delete(settled)
      }
      req.once("drain", onDrain)
      onSettle.add(settled)
      startTimer()
      return Effect.sync(cleanup)
    })

  const end = Effect.async<SendResult>((resume) => {
    if (result) return resume(Effect.succeed(result))
    const settled = () => resume(Effect.succeed(result!))
    onSettle.add(settled)
    if (!ended) {
      ended = true
      // A fresh budget for the receiver's answer, not what is left of a drain wait.
      stopTimer()
      req.end()
    }
    startTimer()
    // Interrupted while waiting for the answer: the call is dropped, as `send` drops its own.
    return Effect.sync(() => {
      onSettle.delete(settled)
      settle("interrupted")
    })
  })

  return { write, end, abort: Effect.sync(() => settle("aborted")) }
}

/**
 * Opens a request whose body is streamed: resolved and vetted exactly as `send` is (the
 * refusals fail with `SendRefused` before any socket is opened), connected to the vetted
 * addresses only, bound to `localAddress`, never redirected, chunked, on its own connection.
 * Connection problems after that show in `write` (as `StreamFailed`) and in `end`'s result.
 */
export const openStream = (request: StreamRequest): Effect.Effect<StreamingCall, SendRefused> =>
  Effect.flatMap(Clock.currentTimeMillis, (nowMs) => {
    const started = performance.now()
    return Effect.flatMap(prepareWithin(request), (target) => Effect.sync(() => startStream(target, request, nowMs, started)))
  })
