import type * as http from "node:http"

/** How long `close` lets requests in flight run before it cuts their connections. */
export const DEFAULT_GRACE_MS = 10_000

/**
 * A graceful close for a Node server. Node's own `server.close()` stops accepting connections
 * but keeps serving kept-alive ones, which may carry new requests for as long as the client
 * likes; `closeAllConnections()` cuts requests mid-answer. Here every answer given while
 * closing says `Connection: close`, so each connection ends after the request it is serving.
 *
 * Call it once, right after creating the server (it must see every request).
 */
export const drainable = (server: http.Server) => {
  const inFlight = new Set<http.ServerResponse>()
  let closing = false
  const endConnection = (res: http.ServerResponse) => {
    if (!res.headersSent) res.setHeader("connection", "close")
  }
  // First among the listeners, before the application may answer.
  server.prependListener("request", (_req: http.IncomingMessage, res: http.ServerResponse) => {
    if (closing) endConnection(res)
    inFlight.add(res)
    res.once("close", () => {
      inFlight.delete(res)
      // An answer whose headers went out before the close began left its connection open.
      if (closing) setImmediate(() => server.closeIdleConnections())
    })
  })

  /**
   * Stops accepting connections, closes idle ones, lets every request in flight finish and then
   * closes its connection; what still runs after `graceMs` is cut. Resolves once every
   * connection is closed.
   */
  const close = (graceMs: number = DEFAULT_GRACE_MS) =>
    new Promise<void>((resolve) => {
      closing = true
      for (const res of inFlight) endConnection(res)
      const cut = setTimeout(() => server.closeAllConnections(), graceMs)
      server.close(() => {
        clearTimeout(cut)
        resolve()
      })
      server.closeIdleConnections()
    })
  return { close }
}
