import * as http from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { drainable } from "./Drain.js"
import { answerClientError, answerNode, fromNodeRequest } from "./Node.js"
import type { Api } from "./Router.js"

export interface ListenOptions {
  readonly port?: number | undefined
  readonly host?: string | undefined
  /** PEM text of the certificate chain and key, for serving HTTPS directly. */
  readonly tls?: { readonly cert: string; readonly key: string } | undefined
  /**
   * Unused: the API counts the proxies in front itself (its own `trustProxy`). Kept so that one
   * options object still configures both.
   */
  readonly trustProxy?: boolean | number | undefined
}

export interface RunningServer {
  readonly api: Api
  readonly server: http.Server
  readonly url: string
  /**
   * Stops accepting connections, lets the requests in flight finish (cut after `graceMs`,
   * default 10 s), then disposes of the API's platform, which lets webhook calls in flight finish.
   */
  readonly close: (options?: { readonly graceMs?: number | undefined }) => Promise<void>
}

/**
 * A standalone server: Node's own server with the API at its root, which answers every path
 * (its 404 included). No Express app in between: the API routes, reads bodies and writes
 * headers itself, and Express's routing and request wrapping cost about a tenth of a keyed
 * read's CPU (docs/benchmarks.md).
 */
export const listen = async (api: Api, options: ListenOptions = {}): Promise<RunningServer> => {
  const listener = (req: http.IncomingMessage, res: http.ServerResponse) => {
    answerNode(api, fromNodeRequest(req), res)
  }
  const server: http.Server = options.tls
    ? https.createServer({ cert: options.tls.cert, key: options.tls.key }, listener)
    : http.createServer(listener)
  server.keepAliveTimeout = 65_000
  server.on("clientError", answerClientError)
  const drain = drainable(server)
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject)
      server.listen(options.port ?? 3000, options.host ?? "127.0.0.1", () => resolve())
    })
  } catch (error) {
    await api.dispose()
    throw error
  }
  const address = server.address() as AddressInfo
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address
  const url = `${options.tls ? "https" : "http"}://${host}:${address.port}`
  const close = async (closeOptions: { readonly graceMs?: number | undefined } = {}) => {
    await drain.close(closeOptions.graceMs)
    await api.dispose()
  }
  return { api, server, url, close }
}
