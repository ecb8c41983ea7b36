import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { vi } from "vitest"
import { Webhook } from "standardwebhooks"

/** A request as a test receiver saw it. */
export interface Received {
  readonly method: string
  readonly url: string
  readonly headers: http.IncomingHttpHeaders
  /** The body exactly as received (UTF-8). */
  readonly body: string
  readonly remoteAddress: string | undefined
}

export interface Receiver {
  readonly url: string
  readonly port: number
  readonly requests: Array<Received>
}

/**
 * A real HTTP server on 127.0.0.1, closed with the scope. `handle` answers each request (after
 * its body has been read); leaving `res` alone makes the request hang (for timeouts).
 */
export const receiver = (
  handle: (req: Received, res: http.ServerResponse, index: number) => void = (_req, res) => res.end("ok")
): Effect.Effect<Receiver, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ server: http.Server; receiver: Receiver }>((resolve) => {
        const requests: Array<Received> = []
        const server = http.createServer((req, res) => {
          const chunks: Array<Buffer> = []
          req.on("data", (c: Buffer) => chunks.push(c))
          req.on("end", () => {
            const received: Received = {
              method: req.method ?? "",
              url: req.url ?? "",
              headers: req.headers,
              body: Buffer.concat(chunks).toString("utf8"),
              remoteAddress: req.socket.remoteAddress
            }
            requests.push(received)
            handle(received, res, requests.length - 1)
          })
        })
        server.listen(0, "127.0.0.1", () => {
          const port = (server.address() as AddressInfo).port
          resolve({ server, receiver: { url: `http://127.0.0.1:${port}/hook`, port, requests } })
        })
      })
    ),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          server.closeAllConnections()
          server.close(() => resolve())
        })
      )
  ).pipe(Effect.map(({ receiver }) => receiver))

/** A port nothing listens on (bound once, then released). */
export const closedPort = (): Effect.Effect<number> =>
  Effect.promise(() =>
    new Promise<number>((resolve) => {
      const server = http.createServer()
      server.listen(0, "127.0.0.1", () => {
        const port = (server.address() as AddressInfo).port
        server.close(() => resolve(port))
      })
    })
  )

/** Waits in real time (the test clock does not move real sockets). */
export const realSleep = (ms: number): Effect.Effect<void> =>
  Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, ms)))

/** Polls `condition` in real time until it holds or `timeoutMs` passes. */
export const waitFor = (condition: () => boolean, timeoutMs = 5000): Effect.Effect<boolean> =>
  Effect.promise(async () => {
    const deadline = Date.now() + timeoutMs
    while (!condition()) {
      if (Date.now() > deadline) return false
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    return true
  })

/** A fresh `whsec_` secret, as core generates them. */
export const newSecret = (): string => `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64")}`

/**
 * Verifies a received request with the standardwebhooks library. Its 5-minute tolerance is
 * measured against `Date.now()`, so the check runs "at" the request's own timestamp: deliveries
 * made under a test clock carry test-clock timestamps.
 */
export const verify = (secret: string, req: Received): unknown => {
  const ts = Number(req.headers["webhook-timestamp"])
  const spy = vi.spyOn(Date, "now").mockReturnValue(ts * 1000)
  try {
    return new Webhook(secret).verify(req.body, {
      "webhook-id": String(req.headers["webhook-id"]),
      "webhook-timestamp": String(req.headers["webhook-timestamp"]),
      "webhook-signature": String(req.headers["webhook-signature"])
    })
  } finally {
    spy.mockRestore()
  }
}
