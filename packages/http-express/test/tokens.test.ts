import { SignJWT } from "jose"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { as, expect401, JWT_SECRET, operatorOf, START, start, type TestServer } from "./helpers.js"

/** Token lifetimes beyond the basics: not yet valid, a deleted key's token, a cached token. */
let server: TestServer

beforeAll(async () => {
  server = await start({ jwtSecret: JWT_SECRET })
})
afterAll(() => server?.close())

const sign = (claims: Record<string, unknown>, iat: number, nbf: number, exp: number) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject("admin")
    .setIssuedAt(iat)
    .setNotBefore(nbf)
    .setExpirationTime(exp)
    .sign(new TextEncoder().encode(JWT_SECRET))

describe("token lifetimes", () => {
  it("a correctly signed token that is not yet valid is 401 until its nbf, then accepted", async () => {
    const now = Math.floor(server.clock.millis / 1000)
    const early = await sign({ kind: "operator", org: "operator" }, now, now + 60, now + 3600)
    expect401(await as(server.url, early)("GET", "/v1/keys/admin"))
    server.clock.advance(61_000)
    expect((await as(server.url, early)("GET", "/v1/keys/admin")).status).toBe(200)
  })

  it("a deleted key's token keeps working until it expires, then is 401; it cannot open a new session", async () => {
    const op = await operatorOf(server.url)
    const t = await op.tenant()
    const asT = as(server.url, t.token)
    expect((await asT("GET", `/v1/keys/${t.key.id}`)).status).toBe(200)
    expect((await op.call("DELETE", `/v1/keys/${t.key.id}`)).status).toBe(200)
    expect((await asT("GET", "/v1/keys")).status).toBe(200)
    const again = await as(server.url, "")("POST", "/v1/sessions", {
      body: { type: "api-key", key: t.key.id, secret: t.secret }
    })
    expect(again.status).toBe(400)
    server.clock.advance(3600 * 1000)
    expect401(await asT("GET", "/v1/keys"))
  })

  it("a token verified once is still rejected after it expires (the verified-token cache checks time)", async () => {
    const op = await operatorOf(server.url)
    const asOp = as(server.url, op.token)
    for (let i = 0; i < 3; i++) expect((await asOp("GET", "/v1/keys/admin")).status).toBe(200)
    server.clock.advance(3599 * 1000)
    expect((await asOp("GET", "/v1/keys/admin")).status).toBe(200)
    server.clock.advance(2000)
    expect401(await asOp("GET", "/v1/keys/admin"))
    expect(START).toBeLessThan(server.clock.millis)
  })
})
