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

/** The bytes of the body, refused as soon as they pass `limit`. */
const readBytes = (body: ApiRequest["body"], limit: number): Effect.Effect<Uint8Array, ApiResponse> => {
  if (body === undefined) return Effect.succeed(new Uint8Array(0))
  if (typeof body === "string") body = new TextEncoder().encode(body)
  if (body instanceof Uint8Array) return body.byteLength > limit ? Effect.fail(tooLarge()) : Effect.succeed(body)
  const stream = body
  return Effect.tryPromise({
    try: async () => {
      const chunks: Array<Uint8Array> = []
      let size = 0
      for await (const chunk of stream) {
        size += chunk.byteLength
        if (size > limit) return null
        chunks.push(chunk)
      }
      return Buffer.concat(chunks, size)
    },
    catch: () => errorResponse(400, "The request body could not be read")
  }).pipe(Effect.flatMap((bytes) => (bytes === null ? Effect.fail(tooLarge()) : Effect.succeed(bytes))))
}

const isJsonType = (mediaType: string) =>
  mediaType === "application/json" || (mediaType.startsWith("application/") && mediaType.endsWith("+json"))

/**
 * The parsed body: `undefined` when there is none. A body with any other media type than JSON is
 * a 415; JSON must be an object or an array (as `express.json` had it), UTF-8, not compressed.
 */
export const readJson = (request: ApiRequest, limit: number): Effect.Effect<unknown, ApiResponse> =>
  Effect.gen(function*() {
    const type = header(request.headers, "content-type") ?? ""
    const [mediaType, ...params] = type.split(";").map((p) => p.trim().toLowerCase())
    const unsupported = () => {
      const received = mediaType ? `a ${mediaType} body` : "a body without a content type"
      return Effect.fail(errorResponse(415, `Unsupported media type: received ${received}, expected application/json`, {
        "content-type": `must be application/json, not ${mediaType || "missing"}`
      }))
    }
    if (request.parsedBody !== undefined) {
      // The host's parser read it under the host's limit, charset and encoding rules.
      if (!isJsonType(mediaType ?? "")) return yield* unsupported()
      return yield* checkValue(request.parsedBody)
    }
    const declared = Number(header(request.headers, "content-length"))
    if (Number.isFinite(declared) && declared > limit) return yield* Effect.fail(tooLarge())
    const bytes = yield* readBytes(request.body, limit)
    if (bytes.byteLength === 0) return isJsonType(mediaType ?? "") ? {} : undefined
    if (!isJsonType(mediaType ?? "")) return yield* unsupported()
    const charset = params.find((p) => p.startsWith("charset="))?.slice(8).replace(/"/g, "")
    if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
      return yield* Effect.fail(errorResponse(415, `Unsupported charset "${charset}"`, { "content-type": "charset must be utf-8" }))
    }
    const encoding = header(request.headers, "content-encoding")?.trim().toLowerCase()
    if (encoding !== undefined && encoding !== "" && encoding !== "identity") {
      return yield* Effect.fail(errorResponse(415, `Unsupported content encoding "${encoding}"`, {
        "content-encoding": "must be identity"
      }))
    }
    const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8").replace(/^\uFEFF/, "")
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      return yield* Effect.fail(errorResponse(400, "The request body is not valid JSON", { body: "is not valid JSON" }))
    }
    return yield* checkValue(value)
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
