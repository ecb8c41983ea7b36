import { type Api, createApi, type ServerOptions } from "@cmp/http-express"
import { createFetchHandler, type FetchApi, type FetchHandler, serveNode } from "@cmp/http-fetch"
import express from "express"
import type * as http from "node:http"
import * as net from "node:net"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ADMIN, client, ManualClock, START, testStore } from "./helpers.js"

/**
 * One table of raw HTTP requests sent byte for byte to the API mounted under `/consent-api` in
 * two hosts that also answer `/public/health` themselves: an Express app (`app.use`) and Node's
 * own server through the fetch adapter (`serveNode`, routing with `ownsRequest`). Each row must
 * get the same status line from both, and the one it expects: a request reaches the API only
 * through its request target, never through its `Host` header, and no parser resolves dot
 * segments or backslashes the other does not.
 */

interface Host {
  readonly name: string
  readonly server: http.Server
  readonly port: number
  readonly token: string
  readonly close: () => Promise<void>
}

const health = { ok: "public health" }

const options = async () => {
  const store = await testStore()
  const api: ServerOptions = {
    store: store.layer,
    allowHttp: true,
    hashCost: 1024,
    clock: new ManualClock(START),
    admin: ADMIN,
    // TEST_LOG_LEVEL=Error shows the cause of a 500 while debugging.
    logLevel: (process.env.TEST_LOG_LEVEL as "Error" | undefined) ?? "None",
    dispatcher: false
  }
  return { store, api }
}

const listening = async (server: http.Server) => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  return (server.address() as AddressInfo).port
}

const closing = (server: http.Server) =>
  new Promise<void>((resolve) => {
    server.close(() => resolve())
    server.closeAllConnections()
  })

const expressHost = async (): Promise<Host> => {
  const { store, api: apiOptions } = await options()
  const api: Api = await createApi(apiOptions)
  const app = express()
  app.get("/public/health", (_req, res) => {
    res.json(health)
  })
  app.use("/consent-api", api.router)
  const server = app.listen(0, "127.0.0.1")
  await new Promise<void>((resolve) => server.once("listening", () => resolve()))
  const port = (server.address() as AddressInfo).port
  const token = await client(`http://127.0.0.1:${port}/consent-api`).login(ADMIN.key, ADMIN.secret)
  return {
    name: "express",
    server,
    port,
    token,
    close: async () => {
      await closing(server)
      await api.dispose()
      await store.close()
    }
  }
}

const fetchHost = async (): Promise<Host> => {
  const { store, api: apiOptions } = await options()
  const api: FetchApi = await createFetchHandler({ ...apiOptions, basePath: "/consent-api" })
  const handler: FetchHandler = async (request, info) => {
    if (api.ownsRequest(request)) return api.fetch(request, info)
    if (request.method === "GET" && new URL(request.url).pathname === "/public/health") return Response.json(health)
    return new Response("Not Found", { status: 404 })
  }
  const server = serveNode(handler)
  const port = await listening(server)
  const token = await client(`http://127.0.0.1:${port}/consent-api`).login(ADMIN.key, ADMIN.secret)
  return {
    name: "fetch",
    server,
    port,
    token,
    close: async () => {
      await closing(server)
      await api.dispose()
      await store.close()
    }
  }
}

/** Writes the bytes as they are and reads the whole answer (every request says `Connection: close`). */
const raw = (port: number, bytes: string) =>
  new Promise<{ statusLine: string; body: string }>((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(bytes))
    let text = ""
    socket.setEncoding("latin1")
    socket.on("data", (c) => (text += c))
    socket.on("end", () => {
      const split = text.indexOf("\r\n\r\n")
      resolve({ statusLine: text.slice(0, text.indexOf("\r\n")), body: split < 0 ? "" : text.slice(split + 4) })
    })
    socket.on("error", reject)
  })

interface Row {
  readonly name: string
  /** The request line and header lines, without `Connection: close` and the blank line. */
  readonly head: (host: Host) => ReadonlyArray<string>
  readonly body?: string
  readonly status: number
  /** The answer's body holds this (to tell the host's answer from the API's). */
  readonly holds?: string
}

const local = (host: Host) => `Host: 127.0.0.1:${host.port}`
const bearer = (host: Host) => `Authorization: Bearer ${host.token}`
const session = JSON.stringify({ type: "api-key", ...ADMIN })

const rows: ReadonlyArray<Row> = [
  {
    name: "a plain read through the API",
    head: (h) => ["GET /consent-api/v1/organizations HTTP/1.1", local(h), bearer(h)],
    status: 200
  },
  {
    name: "the host's own route",
    head: (h) => ["GET /public/health HTTP/1.1", local(h)],
    status: 200,
    holds: "public health"
  },
  {
    name: "a Host header carrying a path and a fragment does not route to the API",
    head: (h) => ["GET /public/health HTTP/1.1", `Host: 127.0.0.1:${h.port}/consent-api/v1/organizations?#`, bearer(h)],
    status: 200,
    holds: "public health"
  },
  {
    name: "a Host header carrying a path on a path of the host's",
    head: (h) => ["GET /elsewhere HTTP/1.1", `Host: 127.0.0.1:${h.port}/consent-api/v1/organizations?`, bearer(h)],
    status: 404
  },
  {
    name: "a Host that is not a host, on a path of the API",
    head: (h) => ["GET /consent-api/v1/organizations HTTP/1.1", `Host: 127.0.0.1:${h.port}/consent-api`, bearer(h)],
    status: 400
  },
  {
    name: "a Host with user information",
    head: (h) => ["GET /consent-api/v1/organizations HTTP/1.1", `Host: someone@127.0.0.1:${h.port}`, bearer(h)],
    status: 400
  },
  {
    name: "a repeated Host header",
    head: (h) => ["GET /consent-api/v1/organizations HTTP/1.1", local(h), "Host: other.example", bearer(h)],
    status: 400
  },
  {
    name: "an empty Host header",
    head: (h) => ["GET /consent-api/v1/organizations HTTP/1.1", "Host: ", bearer(h)],
    status: 400
  },
  {
    name: "a host name no URL can hold is still a host name",
    head: (h) => ["GET /consent-api/v1/organizations HTTP/1.1", "Host: 10.0.0.999:99999", bearer(h)],
    status: 200
  },
  {
    name: "an encoded dot-dot segment is not resolved",
    head: (h) => ["GET /consent-api/v1/keys/%2e%2e/organizations HTTP/1.1", local(h), bearer(h)],
    status: 404
  },
  {
    name: "a mixed encoded dot-dot segment is not resolved",
    head: (h) => ["GET /consent-api/v1/keys/.%2E/organizations HTTP/1.1", local(h), bearer(h)],
    status: 404
  },
  {
    name: "a dot-dot segment is not resolved",
    head: (h) => ["GET /consent-api/v1/keys/../organizations HTTP/1.1", local(h), bearer(h)],
    status: 404
  },
  {
    name: "a dot-dot segment as the last id",
    head: (h) => ["GET /consent-api/v1/keys/.. HTTP/1.1", local(h)],
    status: 404
  },
  {
    name: "a dot segment is not removed",
    head: (h) => ["GET /consent-api/v1/./organizations HTTP/1.1", local(h), bearer(h)],
    status: 404
  },
  {
    name: "a dot-dot segment does not leave the host's path for the API's",
    head: (h) => ["GET /public/../consent-api/v1/organizations HTTP/1.1", local(h), bearer(h)],
    status: 404
  },
  {
    name: "a dot-dot segment does not leave the API's path for the host's",
    head: (h) => ["GET /consent-api/../public/health HTTP/1.1", local(h)],
    status: 404
  },
  {
    name: "a backslash is not a slash",
    head: (h) => ["GET /consent-api/v1\\organizations HTTP/1.1", local(h), bearer(h)],
    status: 404
  },
  {
    name: "a backslash inside the API's path",
    head: (h) => ["GET /consent-api/v1/keys\\..\\organizations HTTP/1.1", local(h), bearer(h)],
    status: 404
  },
  {
    name: "an encoded backslash is not a slash",
    head: (h) => ["GET /consent-api/v1%5corganizations HTTP/1.1", local(h), bearer(h)],
    status: 404
  },
  {
    name: "a double slash is not an authority",
    head: (h) => [`GET //127.0.0.1:${h.port}/consent-api/v1/organizations HTTP/1.1`, local(h), bearer(h)],
    status: 404
  },
  {
    name: "an absolute-form target",
    head: (h) => [`GET http://127.0.0.1:${h.port}/consent-api/v1/organizations HTTP/1.1`, local(h), bearer(h)],
    status: 404
  },
  {
    name: "TRACE",
    head: (h) => ["TRACE /consent-api/v1/organizations HTTP/1.1", local(h), bearer(h)],
    status: 405
  },
  {
    name: "a repeated Authorization header",
    head: (h) => ["GET /consent-api/v1/organizations HTTP/1.1", local(h), bearer(h), bearer(h)],
    status: 401
  },
  {
    name: "a repeated Authorization header, the second not a token",
    head: (h) => ["GET /consent-api/v1/organizations HTTP/1.1", local(h), bearer(h), "Authorization: Basic b3RoZXI6b3RoZXI="],
    status: 401
  },
  {
    name: "a repeated Content-Type header",
    head: (h) => [
      "POST /consent-api/v1/sessions HTTP/1.1",
      local(h),
      "Content-Type: application/json",
      "Content-Type: application/json",
      `Content-Length: ${session.length}`
    ],
    body: session,
    status: 415
  },
  {
    name: "a repeated Content-Length header",
    head: (h) => [
      "POST /consent-api/v1/sessions HTTP/1.1",
      local(h),
      "Content-Type: application/json",
      `Content-Length: ${session.length}`,
      `Content-Length: ${session.length}`
    ],
    body: session,
    status: 400
  },
  {
    name: "Transfer-Encoding with Content-Length",
    head: (h) => [
      "POST /consent-api/v1/sessions HTTP/1.1",
      local(h),
      "Content-Type: application/json",
      `Content-Length: ${session.length}`,
      "Transfer-Encoding: chunked"
    ],
    body: `${session.length.toString(16)}\r\n${session}\r\n0\r\n\r\n`,
    status: 400
  },
  {
    name: "a session through the API (the same body, well framed)",
    head: (h) => ["POST /consent-api/v1/sessions HTTP/1.1", local(h), "Content-Type: application/json", `Content-Length: ${session.length}`],
    body: session,
    status: 201
  }
]

let hosts: ReadonlyArray<Host> = []

beforeAll(async () => {
  hosts = [await expressHost(), await fetchHost()]
})
afterAll(async () => {
  for (const host of hosts) await host.close()
})

describe("the Express router and the fetch adapter answer the same raw requests alike", () => {
  for (const row of rows) {
    it(row.name, async () => {
      const answers: Record<string, string> = {}
      for (const host of hosts) {
        const bytes = [...row.head(host), "Connection: close", "", row.body ?? ""].join("\r\n")
        const { statusLine, body } = await raw(host.port, bytes)
        answers[host.name] = statusLine
        expect(statusLine, `${host.name}: ${body}`).toMatch(new RegExp(`^HTTP/1\\.1 ${row.status} `))
        if (row.holds !== undefined) expect(body, host.name).toContain(row.holds)
      }
      expect(answers.fetch).toBe(answers.express)
    })
  }
})
