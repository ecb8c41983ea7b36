import { annotateSpan, traced, tracingEnabled } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as http from "node:http"
import * as https from "node:https"
import {
  DEFAULT_MAX_RESPONSE_BYTES,
  errorMessage,
  noResponse,
  type Outcome,
  responseReader,
  type SendResult,
  timeoutMessage,
  withRetryAfter
} from "./Answer.js"
import { prepare, requestOptions, type SendRequest } from "./Destination.js"

/** One body in one call (a webhook, a token request), on kept-alive connections. */

/**
 * Connections are kept open per checked destination (scheme, name, port, vetted addresses and
 * source address), so a busy receiver is not paid a TCP and TLS handshake per message. A socket
 * is only ever reused for the same vetted addresses, so reuse cannot bypass the address rules.
 * Idle sockets are closed after 4 s, before common servers' own keep-alive timeouts (Node's is 5 s).
 */
const agents = new Map<string, http.Agent>()
const MAX_AGENTS = 256
const agentFor = (key: string, secure: boolean): http.Agent => {
  let agent = agents.get(key)
  if (!agent) {
    if (agents.size >= MAX_AGENTS) {
      for (const a of agents.values()) a.destroy()
      agents.clear()
    }
    const options = { keepAlive: true, maxSockets: 64, maxFreeSockets: 64, timeout: 4000, scheduling: "lifo" as const }
    agent = secure ? new https.Agent(options) : new http.Agent(options)
    agents.set(key, agent)
  }
  return agent
}

/** Errors of a kept-alive socket the server had already closed: the request never reached it. */
const staleSocket = (e: unknown) => {
  const code = (e as NodeJS.ErrnoException)?.code
  return code === "ECONNRESET" || code === "EPIPE" || (e instanceof Error && e.message === "socket hang up")
}

/**
 * Sends one request. Never fails: every problem (refused address, bad header, connection
 * error, timeout, non-2xx) is described in the result, which is what the attempt log records.
 *
 * The timeout is a real timer, not Effect's Clock: it bounds real network time, and a test
 * clock must not fire it (or keep it from firing). `durationMs` is measured the same way.
 */
export const send = (request: SendRequest): Effect.Effect<SendResult> =>
  // Every webhook message takes this path: without a tracer, the call alone.
  Effect.flatMap(tracingEnabled, (on) =>
    on
      ? exchange(request).pipe(
        Effect.tap((result) => (result.status === null ? Effect.void : annotateSpan("http.response.status_code", result.status))),
        // The method only: the URL may carry credentials or ids in its path or query.
        traced(request.method ?? "POST", { kind: "client", attributes: { "http.request.method": request.method ?? "POST" } })
      )
      : exchange(request))

const exchange = (request: SendRequest): Effect.Effect<SendResult> =>
  Effect.clockWith((clock) =>
    Effect.async<SendResult>((resume) => {
      const nowMs = clock.unsafeCurrentTimeMillis()
      const started = performance.now()
      const reader = responseReader(request.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES, nowMs)
      let settled = false
      let req: http.ClientRequest | undefined

      const finish = (outcome: Outcome, keepSocket = false) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        // A complete answer leaves the socket to its agent for the next message.
        if (!keepSocket) req?.destroy()
        resume(Effect.succeed(withRetryAfter(outcome, Math.round(performance.now() - started), reader.retryAfter)))
      }
      const answered = (error: string | null, keepSocket = false) =>
        finish({ status: reader.status, error, responseExcerpt: reader.excerpt() }, keepSocket)
      const timer = setTimeout(() => {
        // Headers already arrived: the receiver did answer, only its body is slow.
        const message = timeoutMessage(request.timeoutMs, reader.status)
        if (reader.status !== null) answered(message)
        else finish(noResponse(message))
      }, Math.max(0, request.timeoutMs))

      const start = async () => {
        const target = await prepare(request)
        if (typeof target === "string") return finish(noResponse(target))
        if (settled) return

        const agentKey = [
          target.url.protocol,
          target.host,
          target.url.port,
          target.vetted.map((a) => a.address).join(","),
          request.localAddress ?? ""
        ].join("|")
        const headers = { ...request.headers, "content-length": String(Buffer.byteLength(request.body)) }
        const call = (fresh: boolean) => {
          const agent = fresh ? false : agentFor(agentKey, target.secure)
          const current = (target.secure ? https : http).request(
            requestOptions(target, request, headers, agent),
            (res) => reader.read(res, (error, complete) => answered(error, complete && error === null))
          )
          req = current
          current.on("error", (e) => {
            // A reused socket the server closed meanwhile: the request never arrived; send it
            // once more on a new connection instead of counting a failed attempt.
            if (!fresh && reader.status === null && !settled && current.reusedSocket && staleSocket(e)) return call(true)
            if (reader.status !== null) answered(errorMessage(e))
            else finish(noResponse(errorMessage(e)))
          })
          current.end(request.body)
        }
        call(false)
      }
      start().catch((e) => finish(noResponse(errorMessage(e))))

      // Interrupted (e.g. the dispatcher shuts down): drop the connection and the timer.
      return Effect.sync(() => {
        settled = true
        clearTimeout(timer)
        req?.destroy()
      })
    }))
