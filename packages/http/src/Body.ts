import * as Effect from "effect/Effect"
import { errorResponse } from "./Errors.js"
import { type ApiRequest, type ApiResponse, header } from "./Message.js"

/**
 * The JSON body of a request: read up to the limit, then parsed. Every problem is an answer in
 * the contract's error shape (a failure of this effect), never a 500.
 */

/** No resource nests this deep; formatting the validation error of such a value overflowed the stack. */
export const MAX_JSON_DEPTH = 64

const nestedTooDeep = (value: unknown): boolean => {
  const stack: Array<[unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!
    if (typeof v !== "object" || v === null) continue
    if (depth >= MAX_JSON_DEPTH) return true
    for (const child of Object.values(v)) stack.push([child, depth + 1])
  }
  return false
}

const tooLarge = () => errorResponse(413, "The request body is too large")

/**
 * The bytes of request bodies being read at once, across every request of one API: a body that
 * would take more than what is left is refused (503 with `Retry-After`) rather than buffered, so
 * many slow bodies cannot hold the process's memory.
 */
export class BodyBudget {
  private used = 0
  constructor(readonly capacity: number) {}
  /** Takes `bytes` when they fit. */
  take(bytes: number): boolean {
    if (this.used + bytes > this.capacity) return false
    this.used += bytes
    return true
  }
  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes)
  }
}

/** How one body is read. */
export interface BodyReading {
  /** Bytes the route takes: past them, 413. */
  readonly limit: number
  /** A body that sends nothing for this long is a 408. */
  readonly timeoutMs: number
  readonly budget: BodyBudget
  /** JSON sent as `text/plain` is read as JSON too (what `navigator.sendBeacon` sends). */
  readonly textPlain?: boolean | undefined
}

/**
 * The answer to a body the handler stopped reading midway: its connection is closed after the
 * answer, since the rest of the body is still on the wire (and a stalled client may never send
 * it). Destroying the stream instead would cut the socket before the answer is written.
 */
const abandoned = (response: ApiResponse): ApiResponse => ({ ...response, headers: { ...response.headers, connection: "close" } })

/** Seconds a client refused for the bound on bodies waits: about the time a slow body takes to finish or time out. */
const BUSY_RETRY_AFTER = "5"

const busy = () =>
  errorResponse(503, "Too many request bodies are being read at once; retry shortly", {}, { "retry-after": BUSY_RETRY_AFTER })

const stalled = () => errorResponse(408, "The request body stalled while being read")

/**
 * The bytes of the body, refused as soon as they pass `limit`, when the budget has no room for
 * them, or when the client sends nothing for `timeoutMs`. The bytes count against the budget
 * until the read ends, whichever way.
 */
const readBytes = (
  body: ApiRequest["body"],
  declared: number | undefined,
  reading: BodyReading
): Effect.Effect<Uint8Array, ApiResponse> => {
  if (body === undefined) return Effect.succeed(new Uint8Array(0))
  if (typeof body === "string") body = new TextEncoder().encode(body)
  if (body instanceof Uint8Array) return body.byteLength > reading.limit ? Effect.fail(tooLarge()) : Effect.succeed(body)
  const stream = body
  const { budget, limit, timeoutMs } = reading
  // A declared length is taken whole up front: refused before a byte is read, its connection kept.
  const upfront = declared ?? 0
  if (!budget.take(upfront)) return Effect.fail(busy())
  return Effect.async<Uint8Array, ApiResponse>((resume) => {
    let taken = upfront
    let timer: ReturnType<typeof setTimeout> | undefined
    let over = false
    const finish = (result: Effect.Effect<Uint8Array, ApiResponse>) => {
      if (over) return
      over = true
      clearTimeout(timer)
      budget.give(taken)
      taken = 0
      resume(result)
    }
    const iterator = stream[Symbol.asyncIterator]()
    // With its length declared, a large body is copied once into its place as it arrives (it
    // then costs its own size, not its chunks and their concatenation besides). A small one is
    // joined from Node's pooled buffers: a buffer of its own for each would cost more than it saves.
    const whole = declared !== undefined && declared > PREALLOCATED_FROM ? new Uint8Array(declared) : undefined
    const chunks: Array<Uint8Array> = []
    let size = 0
    const next = () => {
      timer = setTimeout(() => finish(Effect.fail(abandoned(stalled()))), timeoutMs)
      // The iterator is left as it is when the read stops early (see `abandoned`); a read still
      // pending then fails when the connection closes, which is no one's concern.
      iterator.next().then((item) => {
        if (over) return
        clearTimeout(timer)
        if (item.done) {
          return finish(Effect.succeed(whole ? whole.subarray(0, size) : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)))
        }
        const chunk = item.value
        size += chunk.byteLength
        if (size > limit) return finish(Effect.fail(abandoned(tooLarge())))
        if (size > taken) {
          if (!budget.take(size - taken)) return finish(Effect.fail(abandoned(busy())))
          taken = size
        }
        if (whole === undefined) chunks.push(chunk)
        else if (size <= whole.byteLength) whole.set(chunk, size - chunk.byteLength)
        else return finish(Effect.fail(abandoned(errorResponse(400, "The request body is longer than its Content-Length"))))
        next()
      }, () => finish(Effect.fail(errorResponse(400, "The request body could not be read"))))
    }
    next()
    // Interrupted: the bytes go back all the same.
    return Effect.sync(() => finish(Effect.fail(abandoned(stalled()))))
  })
}

/** Bodies longer than this, with their length declared, are read into a buffer of that length. */
const PREALLOCATED_FROM = 64 * 1024

const toText = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8")

const isJsonType = (mediaType: string) =>
  mediaType === "application/json" || (mediaType.startsWith("application/") && mediaType.endsWith("+json"))

/**
 * The parsed body: `undefined` when there is none. A body with any other media type than JSON is
 * a 415; JSON must be an object or an array (as `express.json` had it), UTF-8, not compressed.
 */
export const readJson = (request: ApiRequest, reading: BodyReading): Effect.Effect<unknown, ApiResponse> =>
  Effect.suspend(() => {
    const type = header(request.headers, "content-type") ?? ""
    const [given, ...params] = type.split(";").map((p) => p.trim().toLowerCase())
    // A beacon's JSON arrives as text/plain: read it as what it is.
    const mediaType = reading.textPlain === true && given === "text/plain" ? "application/json" : given
    const expected = reading.textPlain === true ? "application/json or text/plain" : "application/json"
    const unsupported = () => {
      const received = mediaType ? `a ${mediaType} body` : "a body without a content type"
      return Effect.fail(errorResponse(415, `Unsupported media type: received ${received}, expected ${expected}`, {
        "content-type": `must be ${expected}, not ${mediaType || "missing"}`
      }))
    }
    if (request.parsedBody !== undefined) {
      // The host's parser read it under the host's limit, charset and encoding rules.
      if (!isJsonType(mediaType ?? "")) return unsupported()
      return checkValue(request.parsedBody)
    }
    const length = header(request.headers, "content-length")
    const declared = length !== undefined && /^\d+$/.test(length.trim()) ? Number(length) : undefined
    if (declared !== undefined && declared > reading.limit) return Effect.fail(tooLarge())
    // Only the text is kept once made: a large body is never held as bytes, text and value at once.
    return Effect.flatMap(Effect.map(readBytes(request.body, declared, reading), toText), (text): Effect.Effect<unknown, ApiResponse> => {
      if (text.length === 0) return Effect.succeed(isJsonType(mediaType ?? "") ? {} : undefined)
      if (!isJsonType(mediaType ?? "")) return unsupported()
      const charset = params.find((p) => p.startsWith("charset="))?.slice(8).replace(/"/g, "")
      if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
        return Effect.fail(errorResponse(415, `Unsupported charset "${charset}"`, { "content-type": "charset must be utf-8" }))
      }
      const encoding = header(request.headers, "content-encoding")?.trim().toLowerCase()
      if (encoding !== undefined && encoding !== "" && encoding !== "identity") {
        return Effect.fail(errorResponse(415, `Unsupported content encoding "${encoding}"`, {
          "content-encoding": "must be identity"
        }))
      }
      let value: unknown
      try {
        value = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text)
      } catch {
        return Effect.fail(errorResponse(400, "The request body is not valid JSON", { body: "is not valid JSON" }))
      }
      return checkValue(value)
    })
  })

/** Valid JSON, but not what any route takes: say so rather than call it invalid. */
const checkValue = (value: unknown): Effect.Effect<unknown, ApiResponse> => {
  if (typeof value !== "object" || value === null) {
    const kind = value === null ? "null" : typeof value
    return Effect.fail(errorResponse(400, `The request body must be a JSON object, not ${kind}`, {
      body: `must be a JSON object, not ${kind}`
    }))
  }
  if (nestedTooDeep(value)) {
    return Effect.fail(errorResponse(400, "The request body is nested too deeply", {
      body: `must not be nested deeper than ${MAX_JSON_DEPTH} levels`
    }))
  }
  return Effect.succeed(value)
}
