import SwaggerParser from "@apidevtools/swagger-parser"
import { createConfig, lintFromString } from "@redocly/openapi-core"
import { beforeAll, describe, expect, it } from "vitest"
import { call } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * How the OpenAPI document tells clients which credential each operation takes besides the
 * access token: the organization's public key (header or query) on the public consent write,
 * and the consent token on the three operations open to it; no other operation names either.
 */

const { server } = useServer({}, { operator: false })
let document: Record<string, any>

beforeAll(async () => {
  const r = await call(server.url, "GET", "/openapi.json")
  expect(r.status, r.text).toBe(200)
  document = r.body
})

const methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

/** The names of the schemes that match a definition. */
const schemesWhere = (match: (s: any) => boolean) =>
  Object.entries<any>(document.components?.securitySchemes ?? {}).filter(([, s]) => match(s)).map(([name]) => name)

/** The scheme names of the document, by what they are. */
const names = () => {
  const header = schemesWhere((s) => s.type === "apiKey" && s.in === "header" && String(s.name).toLowerCase() === "x-public-api-key")
  const query = schemesWhere((s) => s.type === "apiKey" && s.in === "query" && s.name === "public_api_key")
  const bearers = schemesWhere((s) => s.type === "http" && String(s.scheme).toLowerCase() === "bearer")
  return { header, query, access: bearers.filter((n) => n === "bearer"), consent: bearers.filter((n) => n !== "bearer") }
}

/** An operation's alternatives, each as its sorted scheme names joined by `+` (all of one alternative are needed together). */
const alternatives = (operation: any): Array<string> =>
  (operation.security as Array<Record<string, Array<string>>>).map((req) => Object.keys(req).sort().join("+")).sort()

describe("security schemes of the OpenAPI document", () => {
  it("defines the public key (header and query) and the consent token beside the access token", () => {
    const n = names()
    expect(n.header, "apiKey in header x-public-api-key").toHaveLength(1)
    expect(n.query, "apiKey in query public_api_key").toHaveLength(1)
    expect(n.access).toEqual(["bearer"])
    expect(n.consent, "a second http bearer scheme, the consent token").toHaveLength(1)
    expect(new Set([n.header[0], n.query[0], n.access[0], n.consent[0]]).size).toBe(4)
  })

  it("lists them on exactly the operations open to them, each as an alternative to the access token", () => {
    const n = names()
    const [header, query, consent] = [n.header[0]!, n.query[0]!, n.consent[0]!]
    const expected: Record<string, Array<string>> = {
      "POST /v1/consents/events": ["bearer", header, query, consent].sort(),
      "GET /v1/consents/events": ["bearer", consent].sort(),
      "GET /v1/consents/users/{id}": ["bearer", consent].sort(),
      "GET /v1/consents/users/{id}/receipt": ["bearer", consent].sort()
    }
    const news = new Set([header, query, consent])
    const listing: Record<string, Array<string>> = {}
    for (const [path, item] of Object.entries<Record<string, any>>(document.paths)) {
      for (const [method, operation] of Object.entries<any>(item)) {
        if (!methods.includes(method)) continue
        const op = `${method.toUpperCase()} ${path}`
        expect(Array.isArray(operation.security), op).toBe(true)
        const alts = alternatives(operation)
        if (alts.some((a) => a.split("+").some((s) => news.has(s)))) listing[op] = alts
        else expect(alts.every((a) => a === "bearer"), `${op}: ${alts.join(", ")}`).toBe(true)
      }
    }
    expect(listing).toEqual(expected)
    // The token's own creation takes an access token only.
    expect(alternatives(document.paths["/v1/consents/tokens"]?.post ?? { security: [] })).toEqual(["bearer"])
  })

  it("every scheme an operation names is defined, and the document still validates", async () => {
    const defined = new Set(Object.keys(document.components.securitySchemes))
    for (const item of Object.values<Record<string, any>>(document.paths)) {
      for (const [method, operation] of Object.entries<any>(item)) {
        if (!methods.includes(method)) continue
        for (const req of operation.security) for (const name of Object.keys(req)) expect(defined.has(name), name).toBe(true)
      }
    }
    await expect(SwaggerParser.validate(structuredClone(document) as never)).resolves.toBeDefined()
    const config = await createConfig({ extends: ["recommended"] })
    const problems = await lintFromString({ source: JSON.stringify(document), absoluteRef: `${server.url}/openapi.json`, config })
    expect(
      problems.filter((p) => p.severity === "error").map((p) => `${p.ruleId}: ${p.message} at ${p.location.map((l) => l.pointer).join(", ")}`)
    ).toEqual([])
    // Validating and linting the whole document takes seconds of CPU on a busy machine.
  }, 30_000)
})
