import { answerHealth, answerProbe, errorBody, isProbePath, notRunning, type PlatformRuntime } from "@cmp/core"
import { PlatformConfig } from "@cmp/platform"
import * as Config from "effect/Config"
import * as Option from "effect/Option"
import * as crypto from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

/**
 * A worker's own HTTP server: `/healthz`, `/readyz` and `/metrics` and nothing else, answered as
 * the API answers them (core's `answerProbe`), without loading the HTTP layer.
 */

/**
 * Served only when `PORT` is set: several workers may run on one machine, beside a server on
 * the default port, and none of them should fail for a port it was never asked to take.
 */
export const settings = Config.all({
  port: Config.map(
    Config.all([PlatformConfig.trimmed("PORT"), PlatformConfig.integer("PORT", 0, 0, 65535)]),
    ([set, port]) => (Option.isSome(set) ? port : undefined)
  ),
  host: Config.map(PlatformConfig.trimmed("HOST"), Option.getOrElse(() => "127.0.0.1")),
  metricsToken: PlatformConfig.metricsToken
})

export type ProbeSettings = Config.Config.Success<typeof settings>

export interface ProbeServer {
  readonly url: string
  readonly close: () => Promise<void>
}

/** The caller's request id when it is a sane one, as the API keeps it; a new one otherwise. */
const requestIdOf = (req: http.IncomingMessage) => {
  const incoming = req.headers["x-request-id"]
  return typeof incoming === "string" && /^[\w.-]{1,128}$/.test(incoming) ? incoming : crypto.randomUUID()
}

const write = (req: http.IncomingMessage, res: http.ServerResponse, status: number, headers: Readonly<Record<string, string>>, body: string) => {
  res.writeHead(status, {
    ...headers,
    "content-length": Buffer.byteLength(body),
    "x-content-type-options": "nosniff",
    "x-request-id": requestIdOf(req)
  })
  res.end(req.method?.toUpperCase() === "HEAD" ? undefined : body)
}

export const listenProbes = (
  runtime: PlatformRuntime,
  options: { readonly port: number; readonly host: string; readonly metricsToken: string | undefined }
): Promise<ProbeServer> => {
  const server = http.createServer((req, res) => {
    const url = req.url ?? "/"
    const q = url.indexOf("?")
    const path = q < 0 ? url : url.slice(0, q)
    const method = req.method ?? "GET"
    // Whatever body came is not read: the probes take none.
    req.resume()
    if (!isProbePath(path.toLowerCase())) {
      const body = JSON.stringify(errorBody(404, `Page not found: ${method} ${path}`))
      return write(req, res, 404, { "content-type": "application/json; charset=utf-8" }, body)
    }
    const probe = { path: path.toLowerCase(), method, authorization: req.headers.authorization, shownAs: `${method} ${path}` }
    if (probe.path === "/healthz") {
      const answer = answerHealth(probe)
      return write(req, res, answer.status, answer.headers, answer.body)
    }
    runtime.runPromise(answerProbe(probe, options.metricsToken))
      .then(
        (answer) => write(req, res, answer.status, answer.headers, answer.body),
        () => write(req, res, notRunning.status, notRunning.headers, notRunning.body)
      )
  })
  return new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port, options.host, () => {
      const { port } = server.address() as AddressInfo
      const host = options.host.includes(":") ? `[${options.host}]` : options.host
      resolve({
        url: `http://${host}:${port}`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done())
            server.closeIdleConnections()
          })
      })
    })
  })
}
