import { SqliteStore } from "@cmp/store-sqlite"
import { ADMIN } from "@cmp/test-support/http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ApiRequest, ApiResponse, HttpApi } from "../src/index.js"
import { makeApi } from "./api.js"

/**
 * How the handler reads request bodies, without a socket: only for a caller that may send one,
 * only while it keeps coming, and only as many bytes at once as the bound allows.
 */
let api: HttpApi
const bound = 20 * 1024

beforeAll(async () => {
  api = await makeApi({
    store: SqliteStore.layer({ filename: ":memory:" }),
    hashCost: 1024,
    admin: ADMIN,
    logLevel: "None",
    allowHttp: true,
    bodyTimeoutMs: 100,
    bodyMemoryLimit: bound
  })
})
afterAll(() => api?.dispose())

const post = (url: string, body: ApiRequest["body"], headers: Record<string, string> = {}): Promise<ApiResponse> =>
  api.handle({
    method: "POST",
    url,
    headers: { "content-type": "application/json", ...headers },
    body,
    encrypted: false,
    remoteAddress: "127.0.0.1"
  })

const json = (r: ApiResponse) => JSON.parse(typeof r.body === "string" ? r.body : Buffer.from(r.body).toString("utf8"))

/** A body whose chunks the test hands over one by one; `pulls` counts the reads asked for. */
const controlled = () => {
  const queue: Array<(item: IteratorResult<Uint8Array>) => void> = []
  let pulls = 0
  let waiting: (() => void) | undefined
  const until = (ready: () => boolean) => new Promise<void>((resolve) => {
    const check = () => (ready() ? resolve() : (waiting = check))
    check()
  })
  const body: AsyncIterable<Uint8Array> = {
    [Symbol.asyncIterator]: () => ({
      next: () => {
        pulls++
        waiting?.()
        return new Promise<IteratorResult<Uint8Array>>((resolve) => queue.push(resolve))
      }
    })
  }
  return {
    body,
    pulls: () => pulls,
    /** Resolves once the reader has asked for `n` chunks. */
    pulled: (n: number) => until(() => pulls >= n),
    /** The next chunk, once the reader asks for it. */
    send: async (text: string) => {
      await until(() => queue.length > 0)
      queue.shift()!({ done: false, value: new TextEncoder().encode(text) })
    },
    end: async () => {
      await until(() => queue.length > 0)
      queue.shift()!({ done: true, value: undefined })
    }
  }
}

describe("request bodies", () => {
  it("a request without a valid token is answered 401 without its body being read", async () => {
    const none = controlled()
    const r = await post("/v1/keys", none.body, { "content-length": String(1024 * 1024) })
    expect(r.status).toBe(401)
    const forged = controlled()
    expect((await post("/v1/keys", forged.body, { authorization: "Bearer a.b.c" })).status).toBe(401)
    expect(none.pulls() + forged.pulls()).toBe(0)
  })

  it("a body that sends nothing for bodyTimeoutMs is 408 RequestTimeout, with Connection: close", async () => {
    const stalled = controlled()
    const answer = post("/v1/sessions", stalled.body)
    await stalled.send("{\"type\":")
    const r = await answer
    expect(r.status).toBe(408)
    expect(json(r)).toMatchObject({ name: "RequestTimeout", code: 408, className: "request-timeout", errors: {} })
    expect(r.headers.connection).toBe("close")
  })

  it("a body the bound has no room for is 503 with Retry-After; room comes back when the others end", async () => {
    const held = controlled()
    const heldAnswer = post("/v1/sessions", held.body)
    await held.send(" ".repeat(15 * 1024))
    await held.pulled(2)

    const declared = await post("/v1/sessions", controlled().body, { "content-length": String(10 * 1024) })
    expect(declared.status).toBe(503)
    expect(json(declared)).toMatchObject({ name: "Unavailable", code: 503, className: "unavailable" })
    expect(Number(declared.headers["retry-after"])).toBeGreaterThan(0)

    const streamed = controlled()
    const streamedAnswer = post("/v1/sessions", streamed.body)
    await streamed.send(" ".repeat(10 * 1024))
    const r = await streamedAnswer
    expect(r.status).toBe(503)
    expect(r.headers.connection).toBe("close")

    await held.send("{}")
    await held.end()
    expect((await heldAnswer).status).toBe(400)
    const again = controlled()
    const againAnswer = post("/v1/sessions", again.body, { "content-length": String(10 * 1024 + 2) })
    await again.send(" ".repeat(10 * 1024) + "{}")
    await again.end()
    expect((await againAnswer).status).toBe(400)
  })

  it("sessions take at most 16 KiB", async () => {
    const r = await post("/v1/sessions", JSON.stringify({ type: "api-key", key: "k", secret: "s".repeat(16 * 1024) }))
    expect(r.status).toBe(413)
  })
})
