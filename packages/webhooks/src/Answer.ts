import type * as http from "node:http"

/**
 * What a call to a customer's server answered, as both senders report it (`send` and
 * `openStream`): the status, the start of the body, a `Retry-After`, or why no answer came.
 */

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

/** A Node error as the attempt log keeps it: its message, else its code or name. */
export const errorMessage = (e: unknown): string => {
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

export type Outcome = Omit<SendResult, "durationMs">

export const noResponse = (error: string): Outcome => ({ status: null, error, responseExcerpt: null })

/**
 * Reads an answer: status, Retry-After and the start of the body (what the attempt log keeps).
 * `done` is called once: the body ended (`complete`), failed, or enough of it was read.
 */
export const responseReader = (maxBytes: number, nowMs: number) => {
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

export const withRetryAfter = (outcome: Outcome, durationMs: number, retryAfter: number | undefined): SendResult =>
  retryAfter === undefined ? { ...outcome, durationMs } : { ...outcome, durationMs, retryAfterSeconds: retryAfter }

export const timeoutMessage = (timeoutMs: number, status: number | null) =>
  status !== null ? `timeout after ${timeoutMs} ms while reading the response body` : `timeout after ${timeoutMs} ms`
