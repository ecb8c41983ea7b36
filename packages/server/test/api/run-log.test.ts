import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { ADMIN, client } from "./helpers.js"
import { useServer } from "./fixture.js"
import { CANARY, logLinesIn, personalDataIn, runLogPath } from "./run-log.js"

/**
 * The check that keeps personal data out of the servers' log sees their lines, and would find a
 * planted one: without both, a clean result after the run would mean nothing.
 */

const { server } = useServer({}, { operator: false })

describe("the run's log of the servers", () => {
  it("holds the lines of a server the suites started", async () => {
    const file = runLogPath()
    expect(file, "the global setup names the run's log").toBeDefined()
    const r = await client(server.url).call("POST", "/v1/sessions", {
      body: { type: "api-key", key: ADMIN.key, secret: ADMIN.secret },
      headers: { "x-request-id": "run-log-probe-7d2a" }
    })
    expect(r.status).toBe(201)
    await new Promise((resolve) => setTimeout(resolve, 50))
    const text = fs.readFileSync(file!, "utf8")
    expect(logLinesIn(text)).toBeGreaterThan(0)
    expect(text.split("\n").some((l) => l.includes("run-log-probe-7d2a") && l.includes("\"message\":\"request\""))).toBe(true)
  })

  it("finds an address, an end user's id, a client address or a metadata value planted in a line", () => {
    const clean = JSON.stringify({ message: "request", logLevel: "INFO", fiberId: "#1", annotations: { route: "/v1/members", status: 201 } })
    expect(personalDataIn(clean)).toEqual([])
    const planted = [
      JSON.stringify({ message: "550 5.1.1 <ada.lovelace@example.org>: unknown user", logLevel: "WARN", fiberId: "#2" }),
      JSON.stringify({ message: "request", logLevel: "INFO", fiberId: "#3", annotations: { path: "/v1/consents/users/ada%40example.org" } }),
      JSON.stringify({ message: "x", logLevel: "INFO", fiberId: "#4", annotations: { user: CANARY.organizationUserId } }),
      JSON.stringify({ message: "x", logLevel: "INFO", fiberId: "#5", annotations: { ip: CANARY.ip } }),
      JSON.stringify({ message: "x", logLevel: "INFO", fiberId: "#6", annotations: { m: CANARY.metadata } })
    ]
    expect(personalDataIn([clean, ...planted].join("\n")).map((f) => f.line)).toEqual([2, 3, 4, 5, 6])
  })
})
