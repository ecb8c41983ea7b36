import type { IncomingMessage, ServerResponse } from "node:http"
import type { TLSSocket } from "node:tls"
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
