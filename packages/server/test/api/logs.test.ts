import { describe, expect, it } from "vitest"
import { ADMIN, client } from "./helpers.js"
import { consoleLines } from "./console-lines.js"
import { useServer } from "./fixture.js"

/** Structured JSON logs: one line per request with its id, and never a secret or a token. */
// Registered before the server's hooks: the spy is on before it starts, and off after it stops.
const lines = consoleLines()
const { server } = useServer({ logLevel: "Info" }, { operator: false })

describe("logs", () => {
  it("one JSON line per request, carrying the request id, without secrets or tokens", async () => {
    const { call, login } = client(server.url)
    const token = await login(ADMIN.key, ADMIN.secret)
    const r = await call("GET", "/v1/keys?name=private-value", { token, headers: { "x-request-id": "req-123" } })
    expect(r.status).toBe(200)
    expect(r.headers.get("x-request-id")).toBe("req-123")
    await new Promise((resolve) => setTimeout(resolve, 50))

    const parsed = lines.map((l) => JSON.parse(l) as { message: unknown; annotations: Record<string, unknown> })
    const line = parsed.find((p) => p.annotations?.requestId === "req-123")
    expect(line).toBeDefined()
    expect(line!.message).toBe("request")
    expect(line!.annotations).toMatchObject({ method: "GET", route: "/v1/keys", status: 200 })
    expect(typeof line!.annotations.durationMs).toBe("number")

    const all = lines.join("\n")
    expect(all).not.toContain(ADMIN.secret)
    expect(all).not.toContain(token)
    expect(all).not.toContain("private-value")
  })

  it("names the route, never the ids in the path nor a path no route has", async () => {
    const { call, login } = client(server.url)
    const token = await login(ADMIN.key, ADMIN.secret)
    const requests = [
      ["/v1/consents/users/ada.lovelace%40example.com", "user-by-email", "/v1/consents/users/:id"],
      ["/v1/keys/key-of-ada.lovelace", "key-by-id", "/v1/keys/:id"],
      ["/v1/webhooks/deliveries/delivery-of-ada.lovelace/replay", "action-with-id", "/v1/webhooks/deliveries/:id/replay"],
      ["/v1/no-such-service/ada.lovelace", "unknown-path", "(unknown)"],
      ["/ada.lovelace/elsewhere", "outside-v1", "(unknown)"]
    ] as const
    for (const [path, requestId] of requests) {
      const method = path.endsWith("/replay") ? "POST" : "GET"
      await call(method, path, { token, headers: { "x-request-id": requestId } })
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
    const parsed = lines.map((l) => JSON.parse(l) as { message: unknown; annotations: Record<string, unknown> })
    for (const [, requestId, route] of requests) {
      const line = parsed.find((p) => p.annotations?.requestId === requestId)
      expect(line?.annotations.route, requestId).toBe(route)
    }
    expect(lines.join("\n")).not.toContain("ada.lovelace")
  })

  it("a rotation is one request line by its route; neither secret nor either public key is logged", async () => {
    const { call, login } = client(server.url)
    const token = await login(ADMIN.key, ADMIN.secret)
    const org = (await call("POST", "/v1/organizations", { token, body: { name: "Rotated in the logs" } })).body
    const key = (await call("POST", "/v1/keys", { token, body: { organization_id: org.id, name: "rotated" } })).body
    const rotated = await call("POST", `/v1/keys/${key.id}/rotate-secret`, { token, body: {}, headers: { "x-request-id": "rotate-secret" } })
    expect(rotated.status, rotated.text).toBe(200)
    const renewed = await call("POST", `/v1/organizations/${org.id}/rotate-public-key`, { token, headers: { "x-request-id": "rotate-public-key" } })
    expect(renewed.status, renewed.text).toBe(200)
    expect((await login(key.id, key.secret)).length).toBeGreaterThan(0)
    await new Promise((resolve) => setTimeout(resolve, 50))
    const parsed = lines.map((l) => JSON.parse(l) as { message: unknown; annotations: Record<string, unknown> })
    expect(parsed.find((p) => p.annotations?.requestId === "rotate-secret")?.annotations.route).toBe("/v1/keys/:id/rotate-secret")
    expect(parsed.find((p) => p.annotations?.requestId === "rotate-public-key")?.annotations.route).toBe("/v1/organizations/:id/rotate-public-key")
    const all = lines.join("\n")
    for (const value of [key.secret, rotated.body.secret, org.public_api_key, renewed.body.public_api_key]) expect(all).not.toContain(value)
  })
})
