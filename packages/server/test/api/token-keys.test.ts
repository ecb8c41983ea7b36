import { rotateTokenKey } from "@cmp/platform-node"
import { decodeProtectedHeader } from "jose"
import { describe, expect, it } from "vitest"
import { as, call, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * The token signing key rotated while the API is in use: requests keep flowing with tokens of
 * the old key and none is refused; new sessions and consent tokens name the new key within a
 * minute; tokens of the old key keep working as long as they live.
 */

const { server, op, tenant } = useServer({})

const kidOf = (token: string) => decodeProtectedHeader(token).kid

describe("rotating the token signing key kept in the database", () => {
  it("with traffic flowing across the change: no request with an old token is refused, and new tokens name the new key", async () => {
    const t = await tenant({ consents_api: true, store_cmp_consents: true })
    const oldKid = kidOf(t.token)
    expect(oldKid).toMatch(/^k[\w-]{16}$/)
    const minted = await t.call("POST", "/v1/consents/tokens", { body: { organization_id: t.org.id, organization_user_id: "ada", lifetime: 2_678_400 } })
    expect(minted.status, minted.text).toBe(201)
    expect(kidOf(minted.body.id_token)).toBe(oldKid)

    let flowing = true
    const answers: Array<number> = []
    const traffic = (async () => {
      while (flowing) {
        const [read, write] = await Promise.all([
          t.call("GET", `/v1/organizations/${t.org.id}`),
          call(server.url, "POST", "/v1/consents/events", {
            token: minted.body.id_token,
            body: { user: { organization_user_id: "ada" }, consents: { purposes: [{ id: "p", enabled: true }] } }
          })
        ])
        answers.push(read.status, write.status)
      }
    })()
    // Some requests before the rotation, some after.
    while (answers.length < 20) await new Promise((resolve) => setTimeout(resolve, 5))
    const rotated = await server.api.runtime.runPromise(rotateTokenKey)
    expect(rotated.verifying).toEqual([oldKid])
    const at = answers.length
    while (answers.length < at + 20) await new Promise((resolve) => setTimeout(resolve, 5))
    flowing = false
    await traffic
    expect(answers.filter((s) => s !== 200 && s !== 201)).toEqual([])

    // Within a minute, every new token names the new key; the old ones still work.
    server.clock.advance(61_000)
    const session = await call(server.url, "POST", "/v1/sessions", { body: { type: "api-key", key: t.key.id, secret: t.secret } })
    expect(session.status, session.text).toBe(201)
    expect(kidOf(session.body.access_token)).toBe(rotated.kid)
    expect((await as(server.url, session.body.access_token)("GET", `/v1/organizations/${t.org.id}`)).status).toBe(200)
    expect((await t.call("GET", `/v1/organizations/${t.org.id}`)).status).toBe(200)
    const again = await as(server.url, session.body.access_token)("POST", "/v1/consents/tokens", {
      body: { organization_id: t.org.id, organization_user_id: unique("u") }
    })
    expect(kidOf(again.body.id_token)).toBe(rotated.kid)
    // The old consent token lives its 31 days, past the old access token's hour.
    server.clock.advance(30 * 86_400_000)
    const late = await call(server.url, "GET", "/v1/consents/users/ada?$by_organization_user_id=true", { token: minted.body.id_token })
    expect(late.status, late.text).toBe(200)
    expect((await t.call("GET", `/v1/organizations/${t.org.id}`)).status).toBe(401)
    expect((await op.call("GET", "/v1/organizations?$limit=1")).status).toBe(401)
  })
})
