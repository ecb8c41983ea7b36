import { describe, expect, it, vi } from "vitest"
import { call, unique } from "./helpers.js"
import { consoleLines } from "./console-lines.js"
import { useServer } from "./fixture.js"

/**
 * The request log line names who asked: the principal's kind and its organization, once
 * authenticated; never an end user, a token or a body. Probes are not logged.
 */
// Registered before the server's hooks: the spy is on before it starts, and off after it stops.
const lines = consoleLines()
const { server, op, tenants: [t] } = useServer({ logLevel: "Info" }, { tenants: [{ consents_api: true, store_guest_cmp_consents: true }] })

type Line = { message: unknown; annotations: Record<string, unknown> }
const lineOf = async (requestId: string): Promise<Line> => {
  await vi.waitFor(() => expect(lines.some((l) => l.includes(`"requestId":"${requestId}"`))).toBe(true))
  return lines.map((l) => JSON.parse(l) as Line).find((p) => p.annotations?.requestId === requestId)!
}

describe("the request log line", () => {
  it("names the principal's kind and organization of an authenticated request", async () => {
    await t!.call("GET", "/v1/keys", { headers: { "x-request-id": "as-client" } })
    expect((await lineOf("as-client")).annotations).toMatchObject({ principal: "Client", organizationId: t!.org.id, status: 200 })
    await op.call("GET", "/v1/organizations", { headers: { "x-request-id": "as-operator" } })
    expect((await lineOf("as-operator")).annotations).toMatchObject({ principal: "Operator" })
  })

  it("names a public key's organization, never the end user or the body", async () => {
    const device = unique("device-of-ada")
    const r = await call(server.url, "POST", "/v1/consents/events", {
      body: { organization_id: t!.org.id, user: { id: device }, consents: { purposes: [{ id: "analytics", enabled: true }] } },
      headers: { "x-public-api-key": t!.org.public_api_key, "x-request-id": "as-public-key" }
    })
    expect(r.status, r.text).toBe(201)
    expect((await lineOf("as-public-key")).annotations).toMatchObject({ principal: "PublicKey", organizationId: t!.org.id, status: 201 })
    const all = lines.join("\n")
    expect(all).not.toContain(device)
    expect(all).not.toContain(t!.org.public_api_key)
  })

  it("names no principal before one is known, and logs no probe", async () => {
    await call(server.url, "GET", "/v1/keys", { token: "not-a-token", headers: { "x-request-id": "unauthenticated" } })
    const line = await lineOf("unauthenticated")
    expect(line.annotations.status).toBe(401)
    expect(line.annotations).not.toHaveProperty("principal")
    expect(line.annotations).not.toHaveProperty("organizationId")
    await call(server.url, "GET", "/healthz", { headers: { "x-request-id": "a-probe" } })
    await call(server.url, "GET", "/readyz", { headers: { "x-request-id": "a-probe" } })
    await call(server.url, "GET", "/v1/keys", { token: "not-a-token", headers: { "x-request-id": "after-probe" } })
    await lineOf("after-probe")
    expect(lines.some((l) => l.includes("a-probe"))).toBe(false)
  })
})
