import { traced } from "@cmp/core"
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as dns from "node:dns"
import * as http from "node:http"
import * as https from "node:https"
import * as net from "node:net"
import { isAllowedHost, isNonPublicAddress, normalizeHost } from "./Address.js"

/**
 * One outgoing HTTP call to a customer's server (a webhook receiver or a token endpoint).
 *
 * Written on `node:http`/`node:https` rather than `fetch` because a webhook call needs control
 * that `fetch` does not give: redirects must not be followed (a 3xx is a failed delivery, and
 * following one would bypass the address check), the socket must be bound to the configured
 * source address (the spec's fixed source IP), and the connection must go to the address that
 * was checked, not to whatever a second DNS answer says (DNS rebinding).
 *
 * Two shapes share the checks: `send` (one body, for webhooks and token requests) and
 * `openStream` (a body written chunk by chunk, for export destinations).
 */

export interface SendRequest {
  readonly url: string
  /** Default `POST`. */
  readonly method?: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
  /** Total budget: DNS, connect, TLS, request and response headers. */
  readonly timeoutMs: number
  /** Local address the socket is bound to (`WEBHOOK_LOCAL_ADDRESS`). */
  readonly localAddress?: string | undefined
  /** Hostnames that may resolve to private or loopback addresses (`WEBHOOK_ALLOW_HOSTS`). */
  readonly allowHosts: ReadonlyArray<string>
  /** How much of the response body is kept (default 2 KiB, enough for the attempt log). */
  readonly maxResponseBytes?: number
}

export interface SendResult {
  /** null when no response arrived (refused address, connection error, timeout). */
  readonly status: number | null
  readonly durationMs: number
  readonly error: string | null
  /** The start of the response body, null when there was none. */
  readonly responseExcerpt: string | null
  /** From a `Retry-After` header (seconds, or an HTTP date relative to the Clock's now). */
  readonly retryAfterSeconds?: number
}

export const DEFAULT_MAX_RESPONSE_BYTES = 2048

// RFC 9110 token characters for header names.
const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/** Why `headers` can't be sent, or null. CR/LF in a value would let it inject headers. */
export const headerProblem = (headers: Readonly<Record<string, string>>): string | null => {
  for (const [name, value] of Object.entries(headers)) {
    if (!headerName.test(name)) return `refused: header name ${JSON.stringify(name)} is not a valid token`
    if (/[\r\n\0]/.test(value)) return `refused: header ${name} contains CR/LF`
  }
  return null
}

const errorMessage = (e: unknown): string => {
  if (e instanceof AggregateError) {
    // Happy-eyeballs connects over several addresses report one AggregateError without message.
    const inner = e.errors.map(errorMessage).filter((m) => m.length > 0)
    if (inner.length > 0) return inner.join("; ")
  }
  if (e instanceof Error) {
    const code = (e as NodeJS.ErrnoException).code
    return e.message || code || e.name
  }
  return String(e)
}

/** Seconds from a `Retry-After` value: delay-seconds or an HTTP date. */
export const parseRetryAfter = (value: string | undefined, nowMs: number): number | undefined => {
  if (value === undefined) return undefined
  const v = value.trim()
  if (/^\d+$/.test(v)) return Number(v)
  const date = Date.parse(v)
  if (Number.isNaN(date)) return undefined
  return Math.max(0, Math.ceil((date - nowMs) / 1000))
}

interface Resolved {
  readonly address: string
  readonly family: number
}

type Outcome = Omit<SendResult, "durationMs">

const noResponse = (error: string): Outcome => ({ status: null, error, responseExcerpt: null })

/**
 * Resolves the host and applies the address rules: every resolved address must be public
 * unless the hostname is allow-listed. Answers the vetted addresses or why the call is refused.
 */
const vet = async (
  host: string,
  hostname: string,
  allowHosts: ReadonlyArray<string>,
  localAddress: string | undefined
): Promise<ReadonlyArray<Resolved> | string> => {
  const literal = net.isIP(host)
  let addresses: ReadonlyArray<Resolved>
  if (literal !== 0) {
    addresses = [{ address: host, family: literal }]
  } else {
    try {
      addresses = await dns.promises.lookup(host, { all: true })
    } catch (e) {
      return `dns lookup of ${host} failed: ${errorMessage(e)}`
    }
    if (addresses.length === 0) return `dns lookup of ${host} returned no address`
  }
  if (!isAllowedHost(hostname, allowHosts)) {
    const bad = addresses.find((a) => isNonPublicAddress(a.address))
    if (bad) return `refused: ${bad.address} is a private/loopback/link-local address`
  }
  if (localAddress !== undefined) {
    // A socket bound to an IPv4 source can only reach IPv4 destinations (and likewise for v6).
    const family = net.isIP(localAddress)
    const usable = addresses.filter((a) => a.family === family)
    if (usable.length === 0) return `no address of ${host} matches the family of local address ${localAddress}`
    return usable
  }
  return addresses
}

/** A destination that passed every check, with the addresses the connection may use. */
interface Target {
  readonly url: URL
  /** The hostname without brackets, lower-cased. */
  readonly host: string
  readonly secure: boolean
  readonly vetted: ReadonlyArray<Resolved>
}

type Checked = Pick<SendRequest, "url" | "headers" | "allowHosts" | "localAddress">

/**
 * Everything decided before a socket is opened: the URL, its protocol, the headers and the
 * resolved, vetted addresses. Answers the target or why the call is refused.
 */
const prepare = async (request: Checked): Promise<Target | string> => {
  let url: URL
  try {
    url = new URL(request.url)
  } catch {
    return `invalid url ${JSON.stringify(request.url)}`
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return `refused: unsupported protocol ${url.protocol}`
  const problem = headerProblem(request.headers)
  if (problem) return problem
  const host = normalizeHost(url.hostname)
  const vetted = await vet(host, url.hostname, request.allowHosts, request.localAddress)
  if (typeof vetted === "string") return vetted
  return { url, host, secure: url.protocol === "https:", vetted }
}

/**
 * A `lookup` for `http.request` that answers only the already vetted addresses, so the
 * connection can't be re-resolved to another (private) address after the check, while the
 * request keeps the name for its Host header and TLS server name.
 */
const pinnedLookup = (addresses: ReadonlyArray<Resolved>): net.LookupFunction => (_hostname, options, callback) => {
  const wanted = options.family === 4 || options.family === 6
    ? addresses.filter((a) => a.family === options.family)
    : addresses
  if (wanted.length === 0) {
    const err: NodeJS.ErrnoException = new Error("no vetted address of the requested family")
    err.code = "ENOTFOUND"
    callback(err, "", 0)
    return
  }
  if (options.all) callback(null, wanted.map((a) => ({ address: a.address, family: a.family })))
  else callback(null, wanted[0]!.address, wanted[0]!.family)
}

/** Request options that connect to the vetted addresses only, bound to the configured source. */
const requestOptions = (
  target: Target,
  request: Pick<SendRequest, "method" | "localAddress">,
  headers: Readonly<Record<string, string>>,
  agent: http.Agent | false
): https.RequestOptions => ({
  protocol: target.url.protocol,
  hostname: target.host,
  port: target.url.port || undefined,
  path: `${target.url.pathname}${target.url.search}`,
  method: request.method ?? "POST",
  headers,
  agent,
  lookup: pinnedLookup(target.vetted),
  ...(request.localAddress !== undefined ? { localAddress: request.localAddress } : {})
})

/**
 * Reads an answer: status, Retry-After and the start of the body (what the attempt log keeps).
 * `done` is called once: the body ended (`complete`), failed, or enough of it was read.
 */
const responseReader = (maxBytes: number, nowMs: number) => {
  const chunks: Array<Buffer> = []
  let received = 0
  const reader = {
    status: null as number | null,
    retryAfter: undefined as number | undefined,
    excerpt: (): string | null => received === 0 ? null : Buffer.concat(chunks).subarray(0, maxBytes).toString("utf8"),
    read: (res: http.IncomingMessage, done: (error: string | null, complete: boolean) => void) => {
      reader.status = res.statusCode ?? null
      const header = res.headers["retry-after"]
      reader.retryAfter = parseRetryAfter(Array.isArray(header) ? header[0] : header, nowMs)
      res.on("data", (chunk: Buffer) => {
        if (received < maxBytes) chunks.push(chunk)
        received += chunk.length
        // Enough for the log; the rest of a large body is not worth waiting for.
        if (received >= maxBytes) done(null, false)
      })
      res.on("end", () => done(null, true))
      res.on("error", (e) => done(errorMessage(e), false))
      res.on("aborted", () => done("response aborted", false))
    }
  }
  return reader
}

const withRetryAfter = (outcome: Outcome, durationMs: number, retryAfter: number | undefined): SendResult =>
  retryAfter === undefined ? { ...outcome, durationMs } : { ...outcome, durationMs, retryAfterSeconds: retryAfter }

const timeoutMessage = (timeoutMs: number, status: number | null) =>
  status !== null ? `timeout after ${timeoutMs} ms while reading the response body` : `timeout after ${timeoutMs} ms`

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
  exchange(request).pipe(
    Effect.tap((result) => (result.status === null ? Effect.void : Effect.annotateCurrentSpan("http.response.status_code", result.status))),
    // The method only: the URL may carry credentials or ids in its path or query.
    traced(request.method ?? "POST", { kind: "client", attributes: { "http.request.method": request.method ?? "POST" } })
  )

const exchange = (request: SendRequest): Effect.Effect<SendResult> =>
  Effect.flatMap(Clock.currentTimeMillis, (nowMs) =>
    Effect.async<SendResult>((resume) => {
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

// ---------------------------------------------------------------- streamed bodies

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
