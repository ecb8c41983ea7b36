import { proxyHops } from "@cmp/http"
import express from "express"
import * as http from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { drainable } from "./Drain.js"
import { answerClientError, fromNodeRequest, writeNodeResponse } from "./Node.js"
import type { Api } from "./Router.js"

export interface ListenOptions {
  readonly port?: number | undefined
  readonly host?: string | undefined
  /** PEM text of the certificate chain and key, for serving HTTPS directly. */
  readonly tls?: { readonly cert: string; readonly key: string } | undefined
  /** The proxies in front (`true` is one): the API's `trustProxy`, which Express's `trust proxy` follows. */
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

/** A standalone server: an Express app with the API at its root; every other path answers the API's 404. */
export const listen = async (api: Api, options: ListenOptions = {}): Promise<RunningServer> => {
  const app = express()
  app.disable("x-powered-by")
  app.disable("etag")
  // A number of hops, as the API counts them: `true` would make Express trust every hop.
  app.set("trust proxy", proxyHops(options.trustProxy))
  app.use((req, res, next) => {
    api.handle(fromNodeRequest(req)).then((response) => writeNodeResponse(res, response), next)
  })
  const server: http.Server = options.tls
    ? https.createServer({ cert: options.tls.cert, key: options.tls.key }, app)
    : http.createServer(app)
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
