import SwaggerParser from "@apidevtools/swagger-parser"
import { createApi } from "@cmp/http-express"
import { createConfig, lintFromString } from "@redocly/openapi-core"
import express from "express"
import * as fs from "node:fs"
import type * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import openapiTS, { astToString } from "openapi-typescript"
import ts from "typescript"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ADMIN, call, expect401, ManualClock, START, testStore } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * The OpenAPI document as a client meets it: a standard validator and a linter find no error in
 * it (every `$ref` resolves), wherever the API is served, its `servers` names where the API is,
 * and a typed client generated from it compiles.
 */

const { server } = useServer({}, { operator: false })
let mounted: { base: string; close: () => Promise<void> }

beforeAll(async () => {
  const store = await testStore()
  const api = await createApi({
    store: store.layer,
    allowHttp: true,
    hashCost: 1024,
    clock: new ManualClock(START),
    admin: ADMIN,
    logLevel: "None"
  })
  const app = express()
  app.get("/health", (_req, res) => {
    res.json({ ok: true })
  })
  app.use("/consent-api", api.router)
  const listening: http.Server = app.listen(0, "127.0.0.1")
  await new Promise<void>((resolve) => listening.once("listening", () => resolve()))
  mounted = {
    base: `http://127.0.0.1:${(listening.address() as AddressInfo).port}/consent-api`,
    close: async () => {
      await new Promise<void>((resolve) => {
        listening.close(() => resolve())
        listening.closeAllConnections()
      })
      await api.dispose()
      await store.close()
    }
  }
})
afterAll(async () => {
  await mounted?.close()
})

const documentAt = async (base: string) => {
  const r = await call(base, "GET", "/openapi.json")
  expect(r.status, r.text).toBe(200)
  return r.body as Record<string, any>
}

/** Errors only: the recommended rules also warn (no license), which is allowed. */
const lintErrors = async (document: unknown, url: string) => {
  const config = await createConfig({ extends: ["recommended"] })
  const problems = await lintFromString({ source: JSON.stringify(document), absoluteRef: url, config })
  return problems
    .filter((p) => p.severity === "error")
    .map((p) => `${p.ruleId}: ${p.message} at ${p.location.map((l) => l.pointer).join(", ")}`)
}

const cases = [
  { name: "standalone", base: () => server.url, mountPath: "" },
  { name: "mounted under /consent-api in a host app", base: () => mounted.base, mountPath: "/consent-api" }
]

describe.each(cases)("GET /openapi.json, $name", ({ base, mountPath }) => {
  it("has no error for Redocly's recommended rules", async () => {
    const document = await documentAt(base())
    expect(await lintErrors(document, `${base()}/openapi.json`)).toEqual([])
  })

  it("is valid for swagger-parser, every $ref resolved", async () => {
    const document = await documentAt(base())
    await expect(SwaggerParser.validate(structuredClone(document) as never)).resolves.toBeDefined()
    const refs = new Set(JSON.stringify(document).match(/"\$ref":"[^"]*"/g))
    expect([...refs].filter((r) => !r.startsWith(`"$ref":"#/components/`))).toEqual([])
    expect(refs).toContain(`"$ref":"#/components/schemas/Timestamp"`)
  })

  it("names where the API is in servers, and a call there reaches the API", async () => {
    const document = await documentAt(base())
    const url: string = document.servers[0].url
    expect(url).toBe(mountPath === "" ? "/" : mountPath)
    const languages = new URL(`${url.replace(/\/$/, "")}/v1/languages`, `${base()}/openapi.json`)
    // The API's own answer (its error shape), not the host's page.
    expect401(await call(languages.origin, "GET", languages.pathname))
    const session = await call(languages.origin, "POST", languages.pathname.replace(/languages$/, "sessions"), {
      body: { type: "api-key", ...ADMIN }
    })
    expect(session.status, session.text).toBe(201)
    const found = await call(languages.origin, "GET", languages.pathname, { token: session.body.access_token })
    expect(found.status, found.text).toBe(200)
  })

  it("says security: [] exactly on the operations that need no token", async () => {
    const document = await documentAt(base())
    const open: Array<string> = []
    for (const [p, operations] of Object.entries<Record<string, any>>(document.paths)) {
      for (const [method, operation] of Object.entries<any>(operations)) {
        expect(operation.security, `${method} ${p}`).toBeDefined()
        if (operation.security.length === 0) open.push(`${method.toUpperCase()} ${p}`)
        // The bearer first; an end user's credential beside it where one is taken (openapi-security.test.ts).
        else expect(operation.security[0]).toEqual({ bearer: [] })
      }
    }
    expect(open.sort()).toEqual([
      "GET /v1/consents/receipts/jwks",
      "POST /v1/invitations/accept",
      "POST /v1/platform-integrations/sessions",
      "POST /v1/sessions"
    ])
    // And they do answer without one: a session opened with no Authorization header.
    const session = await call(base(), "POST", "/v1/sessions", { body: { type: "api-key", ...ADMIN } })
    expect(session.status, session.text).toBe(201)
  })

  it("the docs page loads the document next to it", async () => {
    const init = await call(base(), "GET", "/docs/init.js")
    expect(init.status).toBe(200)
    const relative = /new URL\("([^"]+)", location\.href\)/.exec(init.text)?.[1]
    expect(relative).toBeDefined()
    const docUrl = new URL(relative!, `${base()}/docs/`)
    expect(docUrl.href).toBe(`${base()}/openapi.json`)
    expect((await call(docUrl.origin, "GET", docUrl.pathname)).status).toBe(200)
  })
})

describe("a typed client generated from /openapi.json", () => {
  const here = path.dirname(fileURLToPath(import.meta.url))
  // Inside the package (and ignored by git) so that TypeScript resolves as the package does;
  // one directory per run, so that runs side by side do not share files.
  const dir = path.join(here, "..", "..", ".generated", `openapi-client-${process.pid}`)
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

  // Generating and type-checking takes a few seconds; more on a busy machine.
  it("compiles against the generated types, and a wrong use does not", { timeout: 60_000 }, async () => {
    const document = await documentAt(server.url)
    const types = astToString(await openapiTS(document as never))
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(path.join(dir, "api.d.ts"), types)
    const use = `import type { paths } from "./api.js"

type EventCreate = paths["/v1/consents/events"]["post"]["requestBody"]["content"]["application/json"]
type EventsPage = paths["/v1/consents/events"]["get"]["responses"][200]["content"]["application/json"]
type Event = paths["/v1/consents/events/{id}"]["get"]["responses"][200]["content"]["application/json"]

export const body: EventCreate = {
  organization_id: "org-1",
  user: { id: "user-1" },
  consents: { purposes: [{ id: "analytics", enabled: true }] }
}
export const ids = (page: EventsPage): Array<string> => page.data.map((event: Event) => event.id)
export const session: paths["/v1/sessions"]["post"]["responses"][201]["content"]["application/json"]["access_token"] = "token"
`
    // One program for both files: the generated types are checked once.
    const files = { good: path.join(dir, "use.ts"), wrong: path.join(dir, "wrong.ts") }
    fs.writeFileSync(files.good, use)
    // The types are not `any`: a body without its organization does not compile.
    fs.writeFileSync(files.wrong, use.replace(`organization_id: "org-1",`, ""))
    const program = ts.createProgram(Object.values(files), {
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      target: ts.ScriptTarget.ES2022,
      lib: ["lib.es2022.d.ts"],
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      types: []
    })
    const errors = (file: string) =>
      ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"))
    expect(errors(files.good)).toEqual([])
    expect(errors(files.wrong).join("\n")).toContain("organization_id")
  })
})

describe("GET /openapi.json: computed filters", () => {
  it("offers consent_state on the consent users find, with the states it takes", async () => {
    const doc = await documentAt(server.url)
    const parameters = doc.paths["/v1/consents/users"].get.parameters as Array<Record<string, any>>
    expect(parameters.find((p) => p.name === "consent_state")).toMatchObject({
      in: "query",
      style: "form",
      explode: true,
      schema: { type: "array", items: { type: "string", enum: ["none", "given", "refused", "expired", "recollect"] } }
    })
    expect(doc.paths["/v1/consents/events"].get.parameters.some((p: { name: string }) => p.name === "consent_state")).toBe(false)
  })
})
