import type { IncomingMessage, ServerResponse } from "node:http"
import type { Duplex } from "node:stream"
import type { TLSSocket } from "node:tls"
import { type ApiRequest, type ApiResponse, type HttpApi, internalErrorResponse, unreadableRequestAnswer } from "@cmp/http"

/**
 * Node's own request and response (what Express, `node:http` and most Node frameworks hand a
 * handler) to and from the plain messages of the HTTP layer.
 */

/**
 * Node keeps only the first of a repeated `Authorization`, `Content-Type`, `Host` (and a few
 * more) where a web `Headers` joins every value with ", ": the values are joined here too, so a
 * request is read alike whichever adapter hosts the API (a repeated credential is no credential,
 * a repeated media type no JSON). A value a host's middleware set is left as it is.
 */
const headersOf = (req: IncomingMessage): IncomingMessage["headers"] => {
  const raw = req.rawHeaders ?? []
  const values = new Map<string, Array<string>>()
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase()
    const list = values.get(name)
    if (list) list.push(raw[i + 1]!)
    else values.set(name, [raw[i + 1]!])
  }
  let headers = req.headers
  for (const [name, list] of values) {
    // Cookies are joined with "; " by Node, as they should be.
    if (list.length < 2 || name === "cookie" || headers[name] !== list[0]) continue
    headers = { ...headers, [name]: list.join(", ") }
  }
  return headers
}

/** `mountPath`: where the host mounted the API, when `req.url` is already relative to it. */
export const fromNodeRequest = (req: IncomingMessage, mountPath = ""): ApiRequest => ({
  method: req.method ?? "GET",
  url: req.url ?? "/",
  mountPath,
  headers: headersOf(req),
  body: req,
  encrypted: (req.socket as TLSSocket).encrypted === true,
  remoteAddress: req.socket.remoteAddress
})

export const writeNodeResponse = (res: ServerResponse, response: ApiResponse): void => {
  if (res.headersSent) return
  const length = typeof response.body === "string" ? Buffer.byteLength(response.body) : response.body.byteLength
  res.writeHead(response.status, { ...response.headers, "content-length": String(length) })
  res.end(response.body)
}

/** `handle` answers every error itself; should it still throw, the answer is still the contract's 500. */
const internalError = internalErrorResponse({ "x-content-type-options": "nosniff" })

/** Answers a Node response with the API's answer to `request`. */
export const answerNode = (api: Pick<HttpApi, "handle">, request: ApiRequest, res: ServerResponse): void => {
  api.handle(request).then((response) => writeNodeResponse(res, response), () => writeNodeResponse(res, internalError))
}

/**
 * A request Node cannot parse never reaches the API; Node's own answer to it is a bare 400.
 * This one has the contract's body and headers, like every other answer (`server.on("clientError", …)`).
 */
export const answerClientError = (error: Error & { code?: string }, socket: Duplex): void => {
  if (error.code === "ECONNRESET" || !socket.writable) return void socket.destroy()
  socket.end(unreadableRequestAnswer(error.code === "HPE_HEADER_OVERFLOW"))
}
