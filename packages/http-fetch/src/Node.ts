import {
  type ApiResponse,
  errorBody,
  errorResponse,
  isHostHeader,
  isRewrittenPath,
  unreadableRequestAnswer,
  unsupportedMethodResponse,
  unsupportedMethods
} from "@cmp/http"
import * as http from "node:http"
import type { Duplex } from "node:stream"
import type { TLSSocket } from "node:tls"
import type { FetchHandler } from "./Fetch.js"

/**
 * A fetch handler on Node's own `http` (or `https`) server, with Node 20's `Request` and
 * `Response`. Hosts that already speak fetch (Hono's Node server, Next.js, Bun, Deno) need none
 * of this.
 */

const plainError = (res: http.ServerResponse, status: 400 | 500, message: string) => {
  if (res.headersSent) return void res.destroy()
  const body = JSON.stringify(errorBody(status, message))
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": String(Buffer.byteLength(body)), "x-content-type-options": "nosniff" })
  res.end(body)
}

/**
 * The body of Node's request as a web stream, read only when the handler reads it: a request
 * answered without its body (a 413 from `Content-Length`, a 404) leaves it to Node, which
 * discards it and keeps the connection. A reader that stops early (past the body limit) has the
 * rest discarded too, rather than the socket destroyed under the answer.
 */
const bodyOf = (req: http.IncomingMessage): ReadableStream<Uint8Array> => {
  let started = false
  let controller!: ReadableStreamDefaultController<Uint8Array>
  const onData = (chunk: Buffer) => {
    controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
    if ((controller.desiredSize ?? 0) <= 0) req.pause()
  }
  const onEnd = () => controller.close()
  const onError = (error: Error) => controller.error(error)
  return new ReadableStream<Uint8Array>({
    start(c) {
      controller = c
    },
    pull() {
      if (started) return void req.resume()
      started = true
      req.on("data", onData)
      req.once("end", onEnd)
      req.once("error", onError)
    },
    cancel() {
      req.off("data", onData)
      req.off("end", onEnd)
      req.off("error", onError)
      req.resume()
    }
  }, { highWaterMark: 0 })
}

/** A request `serveNode` answers itself, the way the API answers it through Express. */
export class RefusedRequest extends Error {
  constructor(readonly response: ApiResponse) {
    super(response.status === 405 ? "method not supported" : "request target refused")
  }
}

/** The URL of `Host`, or of `localhost` when it names no host a URL can hold (`1.2.3.999`, a port past 65535). */
const originOf = (scheme: string, host: string | undefined): URL => {
  if (host !== undefined && isHostHeader(host)) {
    try {
      return new URL(`${scheme}://${host}`)
    } catch {
      // The API still has the header as it came, and answers it as it answers it through Express.
    }
  }
  return new URL(`${scheme}://localhost`)
}

/**
 * Node's request as a web `Request`. Its path is the request target's, exactly: a `Host` header
 * never adds to it (one that is not a host name gives the URL `localhost`, and the API refuses
 * the header), and a target a URL parser would rewrite (dot segments, `\`, an absolute or
 * asterisk form) is refused rather than answered as another path, since whatever routed the
 * request before it (a proxy, the host's own routes) saw the target as sent. The URL's scheme
 * says whether the socket is TLS. Throws `RefusedRequest` for those, and for methods a `Request`
 * cannot carry (TRACE).
 */
export const toWebRequest = (req: http.IncomingMessage): Request => {
  const method = req.method ?? "GET"
  const target = req.url ?? "/"
  const end = target.search(/[?#]/)
  const path = end < 0 ? target : target.slice(0, end)
  if (unsupportedMethods.has(method.toUpperCase())) throw new RefusedRequest(unsupportedMethodResponse(method))
  if (!path.startsWith("/") || isRewrittenPath(path)) throw new RefusedRequest(errorResponse(404, `Page not found: ${method} ${path}`))
  const scheme = (req.socket as TLSSocket).encrypted === true ? "https" : "http"
  const url = originOf(scheme, req.headers.host)
  // Set part by part: concatenated, a target starting with `//` would be read as an authority.
  url.pathname = path
  if (end >= 0 && target[end] === "?") url.search = target.slice(end + 1).replace(/#.*$/, "")
  const headers = new Headers()
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!)
  const hasBody = method !== "GET" && method !== "HEAD"
  return new Request(url, {
    method,
    headers,
    ...(hasBody ? { body: bodyOf(req), duplex: "half" } : {})
  } as RequestInit)
}

/** Writes a web `Response` to Node's response: status, every header line (`Set-Cookie` one per value), body. */
export const writeWebResponse = async (res: http.ServerResponse, response: Response): Promise<void> => {
  const headers: Record<string, string | Array<string>> = {}
  response.headers.forEach((value, name) => {
    if (name !== "set-cookie") headers[name] = value
  })
  const cookies = response.headers.getSetCookie()
  if (cookies.length > 0) headers["set-cookie"] = cookies
  res.writeHead(response.status, headers)
  if (response.body === null) return void res.end()
  res.end(Buffer.from(await response.arrayBuffer()))
}

/** The headers every answer of the API carries, on one `serveNode` gives without it. */
const refused = (req: http.IncomingMessage, res: http.ServerResponse, response: ApiResponse) => {
  const incoming = req.headers["x-request-id"]
  const requestId = typeof incoming === "string" && /^[\w.-]{1,128}$/.test(incoming) ? incoming : globalThis.crypto.randomUUID()
  if (res.headersSent) return
  const length = typeof response.body === "string" ? Buffer.byteLength(response.body) : response.body.byteLength
  res.writeHead(response.status, { ...response.headers, "x-request-id": requestId, "x-content-type-options": "nosniff", "content-length": String(length) })
  res.end(response.body)
}

/** A request Node cannot parse, answered in the contract's shape rather than Node's bare 400. */
const answerClientError = (error: Error & { code?: string }, socket: Duplex): void => {
  if (error.code === "ECONNRESET" || !socket.writable) return void socket.destroy()
  socket.end(unreadableRequestAnswer(error.code === "HPE_HEADER_OVERFLOW"))
}

/** The `request` listener of a Node server, answering through `handler` with the socket's address as the client's. */
export const nodeListener = (handler: FetchHandler) => (req: http.IncomingMessage, res: http.ServerResponse): void => {
  let request: Request
  try {
    request = toWebRequest(req)
  } catch (error) {
    if (error instanceof RefusedRequest) return refused(req, res, error.response)
    // Anything else no `Request` can hold.
    return plainError(res, 400, "The request method or URL is not valid")
  }
  handler(request, { clientAddress: req.socket.remoteAddress })
    .then((response) => writeWebResponse(res, response))
    .catch(() => plainError(res, 500, "An internal error occurred"))
}


/**
 * Serves `handler` on `server` (a new `http.Server` by default) and returns it, not yet
 * listening: `serveNode(api.fetch).listen(3004)`.
 */
export const serveNode = (handler: FetchHandler, server: http.Server = http.createServer()): http.Server => {
  server.on("request", nodeListener(handler))
  server.on("clientError", answerClientError)
  return server
}
