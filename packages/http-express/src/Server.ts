import express from "express"
import * as fs from "node:fs"
import * as http from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { type Api, type ApiOptions, createApi } from "./Api.js"

export interface ServerOptions extends ApiOptions {
  readonly port?: number | undefined
  readonly host?: string | undefined
  /** PEM text or a path to a PEM file, for serving HTTPS directly. */
  readonly tls?: { readonly cert: string; readonly key: string } | undefined
}

export interface RunningServer {
  readonly api: Api
  readonly server: http.Server
  readonly url: string
  readonly close: () => Promise<void>
}

const pem = (v: string) => (v.includes("-----BEGIN") ? v : fs.readFileSync(v, "utf8"))

/** A standalone server: an Express app with the API mounted at its root. */
export const startServer = async (options: ServerOptions): Promise<RunningServer> => {
  const api = await createApi(options)
  const app = express()
  app.disable("x-powered-by")
  app.set("trust proxy", options.trustProxy === true)
  app.use(api.router)
  app.use((_req, res) => {
    res.status(404).json({ name: "NotFound", message: "Page not found", code: 404, className: "not-found", errors: {} })
  })
  const server: http.Server = options.tls
    ? https.createServer({ cert: pem(options.tls.cert), key: pem(options.tls.key) }, app)
    : http.createServer(app)
  server.keepAliveTimeout = 65_000
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port ?? 3000, options.host ?? "127.0.0.1", () => resolve())
  })
  const address = server.address() as AddressInfo
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address
  const url = `${options.tls ? "https" : "http"}://${host}:${address.port}`
  const close = async () => {
    await new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
    await api.dispose()
  }
  return { api, server, url, close }
}
