import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ADMIN, call, expect400, expectError, start, type TestServer } from "./helpers.js"

/** Repeated failed session attempts are slowed per key and per client address, never for ever. */
let server: TestServer

beforeAll(async () => {
  server = await start()
})
afterAll(() => server?.close())

const attempt = (key: string, secret: string, headers: Record<string, string> = {}) =>
  call(server.url, "POST", "/v1/sessions", { body: { type: "api-key", key, secret }, headers })

describe("brute force", () => {
  it("after five failures for a key, attempts wait (429 with Retry-After), even with the right secret; then it works", async () => {
    for (let i = 0; i < 4; i++) expect400(await attempt(ADMIN.key, `wrong-${i}`))
    expect400(await attempt(ADMIN.key, "wrong-last"))
    const blocked = await attempt(ADMIN.key, ADMIN.secret)
    expectError(blocked, 429, "TooManyRequests", "too-many-requests")
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    // The block is short and grows with further failures, up to a cap: the owner gets back in.
    server.clock.advance(1500)
    const ok = await attempt(ADMIN.key, ADMIN.secret)
    expect(ok.status, ok.text).toBe(201)
    // A success clears the key's failures.
    expect400(await attempt(ADMIN.key, "wrong-again"))
    expect((await attempt(ADMIN.key, ADMIN.secret)).status).toBe(201)
  })

  it("one address guessing many keys is slowed too", async () => {
    server.clock.advance(3_600_001)
    for (let i = 0; i < 5; i++) expect400(await attempt(`made-up-${i}`, "x"))
    const blocked = await attempt("another-made-up", "x")
    expect(blocked.status).toBe(429)
    server.clock.advance(1500)
    expect400(await attempt("another-made-up", "x"))
  })
})
