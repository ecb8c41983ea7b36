import * as net from "node:net"
import { afterAll, describe, expect, it } from "vitest"
import { as } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * Request bodies are read only for a caller that may send them, only as far as the route takes,
 * only while they keep coming, and only as many at once as the bound allows: slow or unfinished
 * bodies cannot hold the server's memory. Driven over raw connections, since a client library
 * sends a whole body at once.
 */

interface RawResponse {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: any
}

/** One HTTP/1.1 connection written by hand. */
const connect = async (base: string) => {
  const { hostname, port } = new URL(base)
  const socket = net.connect(Number(port), hostname)
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve)
    socket.once("error", reject)
  })
  let buffered = Buffer.alloc(0)
  let closed = false
  let wake = () => {}
  socket.on("data", (d: Buffer) => {
    buffered = Buffer.concat([buffered, d])
    wake()
  })
  socket.on("error", () => undefined)
  socket.on("close", () => {
    closed = true
    wake()
  })
  /** The next whole response on the connection (every answer of the API has a Content-Length). */
  const response = async (): Promise<RawResponse> => {
    while (true) {
      const end = buffered.indexOf("\r\n\r\n")
      if (end >= 0) {
        const [statusLine, ...lines] = buffered.subarray(0, end).toString("latin1").split("\r\n")
        const headers: Record<string, string> = {}
        for (const line of lines) {
          const colon = line.indexOf(":")
          headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
        }
        const length = Number(headers["content-length"] ?? 0)
        if (buffered.length >= end + 4 + length) {
          const text = buffered.subarray(end + 4, end + 4 + length).toString("utf8")
          buffered = buffered.subarray(end + 4 + length)
          return { status: Number(statusLine!.split(" ")[1]), headers, body: text === "" ? undefined : JSON.parse(text) }
        }
      }
      if (closed) throw new Error(`connection closed before a whole response: ${buffered.toString("latin1")}`)
      await new Promise<void>((resolve) => (wake = resolve))
    }
  }
  /** Resolves once the server has closed the connection. */
  const ended = async () => {
    while (!closed) await new Promise<void>((resolve) => (wake = resolve))
  }
  return {
    write: (data: string | Buffer) => new Promise<void>((resolve) => socket.write(data, () => resolve())),
    response,
    /** Whether an answer (or the connection's end) has arrived, without waiting for one. */
    answered: () => closed || buffered.indexOf("\r\n\r\n") >= 0,
    ended,
    destroy: () => socket.destroy()
  }
}

type Connection = Awaited<ReturnType<typeof connect>>

/** The head of a request with a JSON body, without the body. */
const head = (method: string, path: string, headers: Record<string, string | number>) =>
  [`${method} ${path} HTTP/1.1`, "host: localhost", "content-type: application/json", ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), "", ""].join("\r\n")

const chunk = (data: string) => `${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`

const expectContractError = (r: RawResponse, code: number, name: string, className: string) => {
  expect(r.status, JSON.stringify(r.body)).toBe(code)
  expect(r.body).toMatchObject({ name, code, className, errors: {} })
  expect(typeof r.body.message).toBe("string")
  expect(r.headers["x-request-id"]).toBeTruthy()
}

const opened: Array<Connection> = []
const open = async (base: string) => {
  const c = await connect(base)
  opened.push(c)
  return c
}
/** The connections a test left open, before its server closes (which waits for requests in flight). */
const closeOpened = () => {
  for (const c of opened.splice(0)) c.destroy()
}

describe("a request without a valid token", () => {
  const { server } = useServer({}, { operator: false })
  afterAll(closeOpened)

  it("is answered 401 before its body is read, and its connection serves the next request once the body is sent", async () => {
    const c = await open(server.url)
    const body = JSON.stringify({ name: "x".repeat(1024 * 1024 - 20) })
    await c.write(head("POST", "/v1/keys", { "content-length": Buffer.byteLength(body) }))
    // Not a byte of the body sent: the answer cannot wait for it.
    expectContractError(await c.response(), 401, "NotAuthenticated", "not-authenticated")
    await c.write(body)
    await c.write(head("GET", "/openapi.json", {}))
    expect((await c.response()).status).toBe(200)
  })

  it("with a forged token is answered 401 before its body is read", async () => {
    const c = await open(server.url)
    await c.write(head("PATCH", "/v1/keys/some-id", { "content-length": 1024 * 1024, authorization: "Bearer forged.token.value" }))
    expectContractError(await c.response(), 401, "NotAuthenticated", "not-authenticated")
  })
})

describe("routes whose credential is in the body", () => {
  const { server } = useServer({}, { operator: false })
  afterAll(closeOpened)

  it("sessions and invitations/accept take at most 16 KiB (413 past it, declared or streamed)", async () => {
    const big = JSON.stringify({ type: "api-key", key: "admin", secret: "s".repeat(16 * 1024) })
    for (const path of ["/v1/sessions", "/v1/invitations/accept"]) {
      const declared = await open(server.url)
      await declared.write(head("POST", path, { "content-length": Buffer.byteLength(big) }))
      expectContractError(await declared.response(), 413, "PayloadTooLarge", "payload-too-large")
      const streamed = await open(server.url)
      await streamed.write(head("POST", path, { "transfer-encoding": "chunked" }) + chunk(big))
      expectContractError(await streamed.response(), 413, "PayloadTooLarge", "payload-too-large")
    }
  })

  it("a session body under 16 KiB is read as before", async () => {
    const c = await open(server.url)
    const body = JSON.stringify({ type: "api-key", key: "admin", secret: "admin-secret-0123456789", padding: " ".repeat(15 * 1024) })
    await c.write(head("POST", "/v1/sessions", { "content-length": Buffer.byteLength(body) }) + body)
    const r = await c.response()
    // The session's own validation decides; the size does not.
    expect(r.status).not.toBe(413)
  })
})

describe("platform-integration sessions: the token in x-platform-authorization is checked before the body is read", () => {
  const { server, op } = useServer()
  afterAll(closeOpened)
  const path = "/v1/platform-integrations/sessions"

  it("a wrong or missing token is answered 400 without its body: declared large, streamed, or never finished", async () => {
    const cases: Array<[string, Record<string, string | number>, string]> = [
      ["a wrong token, 1 MiB declared, nothing sent", { "x-platform-authorization": "pit_made-up.wrong", "content-length": 1024 * 1024 }, ""],
      ["no token, a body that stops half-way", { "content-length": 100 }, "{\"a\":"],
      ["a wrong token, a chunked body that never ends", { "x-platform-authorization": "pit_made-up.wrong", "transfer-encoding": "chunked" }, chunk("{")]
    ]
    for (const [what, headers, data] of cases) {
      const c = await open(server.url)
      await c.write(head("POST", path, headers) + data)
      const r = await c.response()
      expect(r.status, what).toBe(400)
      expectContractError(r, 400, "BadRequest", "bad-request")
      expect(r.body.errors, what).toHaveProperty("x-platform-authorization")
    }
  })

  it("a valid token's body is read then: empty opens the session, past 16 KiB is 413, anything else 400", async () => {
    const org = await op.createOrg()
    const registered = await op.call("POST", "/v1/platform-integrations", { body: { name: "Plugin", organization_id: org.id } })
    expect(registered.status, registered.text).toBe(201)
    const token = registered.body.token as string
    const send = async (body: string) => {
      const c = await open(server.url)
      await c.write(head("POST", path, { "x-platform-authorization": token, "content-length": Buffer.byteLength(body) }) + body)
      return c.response()
    }
    const opened = await send("{}")
    expect(opened.status, JSON.stringify(opened.body)).toBe(201)
    expect(opened.body.platform_integration_id).toBe(registered.body.id)
    expectContractError(await send(JSON.stringify({ padding: "x".repeat(16 * 1024) })), 413, "PayloadTooLarge", "payload-too-large")
    const notEmpty = await send("{\"a\":1}")
    expectContractError(notEmpty, 400, "BadRequest", "bad-request")
    expect(notEmpty.body.errors).toHaveProperty("body")
  })
})

describe("a body that stalls", () => {
  const { server, tenants: [t] } = useServer({ bodyTimeoutMs: 300 }, { tenants: 1 })
  afterAll(closeOpened)

  it("is answered 408 RequestTimeout and its connection closed", async () => {
    for (const path of ["/v1/keys", "/v1/sessions"]) {
      const c = await open(server.url)
      await c.write(head("POST", path, { "content-length": 100, authorization: `Bearer ${t.token}` }) + "{\"name\":")
      const r = await c.response()
      expectContractError(r, 408, "RequestTimeout", "request-timeout")
      expect(r.headers.connection).toBe("close")
      await c.ended()
    }
  })

  it("a chunked body that stops sending is 408 too; the server keeps serving", async () => {
    const c = await open(server.url)
    await c.write(head("POST", "/v1/keys", { "transfer-encoding": "chunked", authorization: `Bearer ${t.token}` }) + chunk("{\"name\":"))
    expectContractError(await c.response(), 408, "RequestTimeout", "request-timeout")
    const r = await as(server.url, t.token)("GET", "/v1/keys")
    expect(r.status).toBe(200)
  })
})

describe("the bound on bodies being read at once", () => {
  const bound = 256 * 1024
  const { server, tenants: [t] } = useServer({ bodyMemoryLimit: bound }, { tenants: 1 })
  afterAll(closeOpened)

  const post = (c: Connection, headers: Record<string, string | number>, data = "") =>
    c.write(head("POST", "/v1/keys", { authorization: `Bearer ${t.token}`, ...headers }) + data)

  it("a body past what is left is 503 with Retry-After; once the others are read, bodies are taken again", async () => {
    const body = JSON.stringify({ organization_id: t.org.id, name: "held", description: "x".repeat(200 * 1024) })
    // All but the last byte: the server is reading it.
    const hold = async () => {
      const c = await open(server.url)
      await post(c, { "content-length": Buffer.byteLength(body) }, body.slice(0, -1))
      return c
    }
    let held = await hold()

    // Whole bodies of 100 KiB: read (then refused as invalid, 400) until the server has begun
    // reading the held one, then refused unread. When one of them was being read as the held
    // body's turn came, the held one is the body refused (the bound works either way): hold another.
    let refused: RawResponse | undefined
    for (let attempt = 0; attempt < 100 && refused === undefined; attempt++) {
      if (held.answered()) {
        expectContractError(await held.response(), 503, "Unavailable", "unavailable")
        held = await hold()
      }
      const declared = await open(server.url)
      await post(declared, { "content-length": 100 * 1024 }, " ".repeat(100 * 1024))
      const r = await declared.response()
      if (r.status === 503) refused = r
      else expect(r.status).toBe(400)
    }
    expect(refused, "a body past the bound was refused").toBeDefined()
    expectContractError(refused!, 503, "Unavailable", "unavailable")
    expect(Number(refused!.headers["retry-after"])).toBeGreaterThan(0)

    const streamed = await open(server.url)
    await post(streamed, { "transfer-encoding": "chunked" }, chunk(" ".repeat(100 * 1024)))
    const streamedRefused = await streamed.response()
    expectContractError(streamedRefused, 503, "Unavailable", "unavailable")
    expect(Number(streamedRefused.headers["retry-after"])).toBeGreaterThan(0)

    await held.write(body.slice(-1))
    // Read, then validated: the description is too long for a key, whatever the bound.
    expect((await held.response()).status).toBe(400)

    const later = await open(server.url)
    const small = JSON.stringify({ organization_id: t.org.id, name: "after", description: "y".repeat(100 * 1024) })
    await post(later, { "content-length": Buffer.byteLength(small) }, small)
    expect((await later.response()).status).not.toBe(503)
  })

  it("bodies read to their end give their share back", async () => {
    for (let i = 0; i < 5; i++) {
      const c = await open(server.url)
      await post(c, { "transfer-encoding": "chunked" }, chunk(" ".repeat(200 * 1024)) + "0\r\n\r\n")
      expect((await c.response()).status).toBe(400)
    }
    const c = await open(server.url)
    await post(c, { "content-length": bound }, " ".repeat(bound))
    expect((await c.response()).status).toBe(400)
  })
})
