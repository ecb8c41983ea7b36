import * as Clock from "effect/Clock"
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
  Effect.flatMap(Clock.currentTimeMillis, (nowMs) =>
    Effect.async<SendResult>((resume) => {
      const started = performance.now()
      const maxBytes = request.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
      let settled = false
      let req: http.ClientRequest | undefined
      let status: number | null = null
      let retryAfter: number | undefined
      const chunks: Array<Buffer> = []
      let received = 0

      const excerpt = (): string | null => {
        if (received === 0) return null
        return Buffer.concat(chunks).subarray(0, maxBytes).toString("utf8")
      }
      const finish = (outcome: Outcome, keepSocket = false) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        // A complete answer leaves the socket to its agent for the next message.
        if (!keepSocket) req?.destroy()
        const durationMs = Math.round(performance.now() - started)
        const result: SendResult = retryAfter === undefined
          ? { ...outcome, durationMs }
          : { ...outcome, durationMs, retryAfterSeconds: retryAfter }
        resume(Effect.succeed(result))
      }
      const timer = setTimeout(() => {
        const message = `timeout after ${request.timeoutMs} ms`
        // Headers already arrived: the receiver did answer, only its body is slow.
        if (status !== null) finish({ status, error: `${message} while reading the response body`, responseExcerpt: excerpt() })
        else finish(noResponse(message))
      }, Math.max(0, request.timeoutMs))

      const start = async () => {
        let url: URL
        try {
          url = new URL(request.url)
        } catch {
          return finish(noResponse(`invalid url ${JSON.stringify(request.url)}`))
        }
        if (url.protocol !== "https:" && url.protocol !== "http:") {
          return finish(noResponse(`refused: unsupported protocol ${url.protocol}`))
        }
        const problem = headerProblem(request.headers)
        if (problem) return finish(noResponse(problem))

        const host = normalizeHost(url.hostname)
        const vetted = await vet(host, url.hostname, request.allowHosts, request.localAddress)
        if (typeof vetted === "string") return finish(noResponse(vetted))
        if (settled) return

        const secure = url.protocol === "https:"
        const agentKey = [url.protocol, host, url.port, vetted.map((a) => a.address).join(","), request.localAddress ?? ""].join("|")
        const call = (fresh: boolean) => {
          const options: https.RequestOptions = {
            protocol: url.protocol,
            hostname: host,
            port: url.port || undefined,
            path: `${url.pathname}${url.search}`,
            method: request.method ?? "POST",
            headers: { ...request.headers, "content-length": String(Buffer.byteLength(request.body)) },
            agent: fresh ? false : agentFor(agentKey, secure),
            // The connection goes to the vetted addresses only, bound to the configured source.
            lookup: pinnedLookup(vetted),
            ...(request.localAddress !== undefined ? { localAddress: request.localAddress } : {})
          }
          const current = (secure ? https : http).request(options, (res) => {
            status = res.statusCode ?? null
            const header = res.headers["retry-after"]
            retryAfter = parseRetryAfter(Array.isArray(header) ? header[0] : header, nowMs)
            const done = (error: string | null, keepSocket = false) => finish({ status, error, responseExcerpt: excerpt() }, keepSocket)
            res.on("data", (chunk: Buffer) => {
              if (received < maxBytes) chunks.push(chunk)
              received += chunk.length
              // Enough for the log; the rest of a large body is not worth waiting for.
              if (received >= maxBytes) done(null)
            })
            res.on("end", () => done(null, true))
            res.on("error", (e) => done(errorMessage(e)))
            res.on("aborted", () => done("response aborted"))
          })
          req = current
          current.on("error", (e) => {
            // A reused socket the server closed meanwhile: the request never arrived; send it
            // once more on a new connection instead of counting a failed attempt.
            if (!fresh && status === null && !settled && current.reusedSocket && staleSocket(e)) return call(true)
            if (status !== null) finish({ status, error: errorMessage(e), responseExcerpt: excerpt() })
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
