import { SignJWT } from "jose"
import { describe, expect, it } from "vitest"
import { ADMIN, as, call, expect401, JWT_SECRET, operatorOf, START } from "./helpers.js"
import { useServer } from "./fixture.js"

/** Token lifetimes beyond the basics: not yet valid, a deleted key's token, a cached token. */

const { server } = useServer({ jwtSecret: JWT_SECRET }, { operator: false })

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

  it("a deleted key's token is 401 at once; it cannot open a new session", async () => {
    const op = await operatorOf(server.url)
    const t = await op.tenant()
    const asT = as(server.url, t.token)
    expect((await asT("GET", `/v1/keys/${t.key.id}`)).status).toBe(200)
    expect((await op.call("DELETE", `/v1/keys/${t.key.id}`)).status).toBe(200)
    expect401(await asT("GET", "/v1/keys"))
    const again = await as(server.url, "")("POST", "/v1/sessions", {
      body: { type: "api-key", key: t.key.id, secret: t.secret }
    })
    expect(again.status).toBe(400)
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

describe("credentials that are not access tokens", () => {
  /** Normal endpoints of every kind: finds, gets, a create, an operator registry, global configuration. */
  const endpoints = (orgId: string, keyId: string) =>
    [
      ["GET", "/v1/keys", undefined],
      ["GET", `/v1/keys/${keyId}`, undefined],
      ["GET", `/v1/organizations/${orgId}`, undefined],
      ["POST", "/v1/properties", { organization_id: orgId, name: "P" }],
      ["PATCH", `/v1/organizations/${orgId}`, { website: "https://x.example" }],
      ["GET", "/v1/platform-integrations", undefined],
      ["GET", "/v1/languages", undefined]
    ] as const

  it("a platform-integration token used as a bearer token is 401 (only its session's access token is one)", async () => {
    const op = await operatorOf(server.url)
    const t = await op.tenant()
    const registered = await op.call("POST", "/v1/platform-integrations", { body: { name: "Shop plugin", organization_id: t.org.id } })
    expect(registered.status, registered.text).toBe(201)
    const integrationToken = registered.body.token as string
    expect(integrationToken).toMatch(/^pit_/)
    // The session it opens works, so the token is a valid credential for that exchange only.
    const session = await call(server.url, "POST", "/v1/platform-integrations/sessions", { headers: { "x-platform-authorization": integrationToken } })
    expect(session.status, session.text).toBe(201)
    expect((await as(server.url, session.body.access_token)("GET", `/v1/organizations/${t.org.id}`)).status).toBe(200)

    for (const [method, path, body] of endpoints(t.org.id, t.key.id)) {
      const options = body === undefined ? {} : { body }
      expect401(await as(server.url, integrationToken)(method, path, options))
      // Nor is the header of the session exchange accepted in place of a bearer token.
      expect401(await call(server.url, method, path, { ...options, headers: { "x-platform-authorization": integrationToken } }))
    }
    // Still 401 after the session exchange verified it (nothing cached it as an access token).
    expect((await call(server.url, "POST", "/v1/platform-integrations/sessions", { headers: { "x-platform-authorization": integrationToken } })).status).toBe(201)
    expect401(await as(server.url, integrationToken)("GET", "/v1/keys"))
    // Nothing was created by the refused create.
    expect((await op.call("GET", `/v1/properties?organization_id=${t.org.id}`)).body.total).toBe(0)
  })

  it("a raw API key secret (or key id) used as a bearer token is 401", async () => {
    const op = await operatorOf(server.url)
    const t = await op.tenant()
    expect(t.secret.length).toBeGreaterThan(0)
    for (const [method, path, body] of endpoints(t.org.id, t.key.id)) {
      const options = body === undefined ? {} : { body }
      for (const credential of [t.secret, t.key.id, `${t.key.id}:${t.secret}`, Buffer.from(`${t.key.id}:${t.secret}`).toString("base64")]) {
        expect401(await as(server.url, credential)(method, path, options))
      }
      // HTTP Basic with the key and its secret is not a way in either.
      expect401(await call(server.url, method, path, {
        ...options,
        headers: { authorization: `Basic ${Buffer.from(`${t.key.id}:${t.secret}`).toString("base64")}` }
      }))
    }
    // The operator's own secret neither.
    expect401(await as(server.url, ADMIN.secret)("GET", "/v1/keys"))
    // The key itself still works the proper way.
    const session = await call(server.url, "POST", "/v1/sessions", { body: { type: "api-key", key: t.key.id, secret: t.secret } })
    expect(session.status, session.text).toBe(201)
    expect((await as(server.url, session.body.access_token)("GET", "/v1/keys")).status).toBe(200)
    expect((await op.call("GET", `/v1/properties?organization_id=${t.org.id}`)).body.total).toBe(0)
  })
})
