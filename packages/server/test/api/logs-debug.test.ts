import { describe, expect, it } from "vitest"
import { ADMIN, client } from "./helpers.js"
import { consoleLines } from "./console-lines.js"
import { useServer } from "./fixture.js"

/**
 * At the most detailed level too, a request the API refuses (a 404 naming the id it did not
 * find, which may be a person's e-mail address) leaves its request line and nothing else: the
 * refusal is an answer, not an error of the process.
 */
// Registered before the server's hooks: the spy is on before it starts, and off after it stops.
const lines = consoleLines()
const { server } = useServer({ logLevel: "Debug" }, { operator: false })

describe("logs at Debug", () => {
  it("a refused request is logged as its request line only, never as an unhandled error naming what was asked", async () => {
    const { call, login } = client(server.url)
    const token = await login(ADMIN.key, ADMIN.secret)
    const asked = "ada.lovelace@example.com"
    const r = await call("GET", `/v1/consents/users/${encodeURIComponent(asked)}?$by_organization_user_id=true`, {
      token,
      headers: { "x-request-id": "refused-debug" }
    })
    expect(r.status).toBeGreaterThanOrEqual(400)
    expect(r.status).toBeLessThan(500)
    expect(JSON.stringify(r.body)).toContain(asked)
    await new Promise((resolve) => setTimeout(resolve, 100))
    const all = lines.join("\n")
    expect(all).toContain("refused-debug")
    expect(all).not.toContain("unhandled error")
    expect(all).not.toContain(asked)
  })
})
