import type { IncomingMessage, ServerResponse } from "node:http"
import type { Duplex } from "node:stream"
import type { TLSSocket } from "node:tls"
import { errorBody } from "./Errors.js"
import type { ApiRequest, ApiResponse } from "./Message.js"

/**
 * Node's own request and response (what Express, `node:http` and most Node frameworks hand a
 * handler) to and from the plain messages of the HTTP layer.
 */

/** `mountPath`: where the host mounted the API, when `req.url` is already relative to it. */
export const fromNodeRequest = (req: IncomingMessage, mountPath = ""): ApiRequest => ({
  method: req.method ?? "GET",
  url: req.url ?? "/",
  mountPath,
  headers: req.headers,
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

/**
 * A request Node cannot parse never reaches the API; Node's own answer to it is a bare 400.
 * This one has the contract's body and headers, like every other answer (`server.on("clientError", …)`).
 */
export const answerClientError = (error: Error & { code?: string }, socket: Duplex): void => {
  if (error.code === "ECONNRESET" || !socket.writable) return void socket.destroy()
  const tooLarge = error.code === "HPE_HEADER_OVERFLOW"
  const body = JSON.stringify(errorBody(400, tooLarge ? "The request headers are too large" : "The request is not valid HTTP"))
  socket.end([
    "HTTP/1.1 400 Bad Request",
    "content-type: application/json; charset=utf-8",
    `content-length: ${Buffer.byteLength(body)}`,
    "x-content-type-options: nosniff",
    "connection: close",
    "",
    body
  ].join("\r\n"))
}
