import { actions, Common, resources } from "@cmp/core"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { HttpApi } from "../src/index.js"
import { body, type Caller, memoryApi, request, tenants, text } from "./requests.js"

/**
 * The examples of the OpenAPI document, as the docs page's "Try it out" sends them: every
 * request body has one that its own schema decodes, and that the server accepts once the ids it
 * makes up name real records; every object query parameter has one made of the resource's
 * fields, serialized as the parameter's style says, that the server accepts and that shows
 * records. The parameters a call may need are declared, and the summaries read as English.
 */

let api: HttpApi
let document: Record<string, any>
let operator: Caller
let organizationId: string
/** A client key of that organization: a caller of one organization. */
let client: Caller

beforeAll(async () => {
  api = await memoryApi()
  document = body(await api.handle(request("GET", "/openapi.json")))
  const made = await tenants(api)
  operator = made.operator
  const org = await made.organization("Examples Inc")
  organizationId = org.id
  client = org.call
  // Every premium feature, so that no example is refused for one.
  const features = body(await operator("GET", `/v1/premium-features?organization_id=${organizationId}`)).data[0]
  const on = Object.fromEntries(Object.keys(features).filter((k) => typeof features[k] === "boolean").map((k) => [k, true]))
  expect((await operator("PATCH", `/v1/premium-features/${features.id}`, on)).status).toBe(200)
}, 30_000)
afterAll(() => api?.dispose())

const httpMethods = ["get", "put", "post", "delete", "patch"]

/** Every operation of the document with its path and method. */
const operations = () =>
  Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item).filter(([method]) => httpMethods.includes(method)).map(([method, operation]) => ({ path, method, operation }))
  )

const componentOf = (ref: string) => document.components.schemas[ref.replace("#/components/schemas/", "")]

/** The body example of an operation: its media type's, else its schema's first. */
const bodyExampleOf = (operation: any): unknown => {
  const media = operation.requestBody?.content?.["application/json"]
  if (media === undefined) return undefined
  if (media.example !== undefined) return media.example
  const schema = media.schema.$ref ? componentOf(media.schema.$ref) : media.schema
  return schema.examples?.[0]
}

/** The schema the server decodes an operation's body with, by its operation id. */
const bodySchemaOf = (operationId: string): Schema.Schema.Any | undefined => {
  const action = actions.find((a) => `${a.place}.${a.name}` === operationId)
  if (action !== undefined) return action.body?.schema
  const def = resources.find((d) => operationId.startsWith(`${d.path}.`))
  switch (operationId.slice((def?.path.length ?? 0) + 1)) {
    case "create":
      return def?.createInput
    case "update":
      return def?.updateInput
    case "patch":
      return def?.updateInput === undefined ? undefined : Schema.partial(def.updateInput)
  }
  return undefined
}

const withBodies = () => operations().filter(({ operation }) => operation.requestBody !== undefined)

describe("the request bodies' examples", () => {
  it("every request body has an example", () => {
    expect(withBodies().length).toBeGreaterThan(60)
    const without = withBodies().filter(({ operation }) => bodyExampleOf(operation) === undefined)
    expect(without.map(({ method, path }) => `${method} ${path}`)).toEqual([])
  })

  it("each example decodes with the body's own schema, as the server decodes it", () => {
    for (const { method, operation, path } of withBodies()) {
      const schema = bodySchemaOf(operation.operationId)
      expect(schema, `${method} ${path}: ${operation.operationId}`).toBeDefined()
      const decoded = Schema.decodeUnknownEither(schema as Schema.Schema<unknown, unknown, never>, { errors: "all", onExcessProperty: "error" })(
        bodyExampleOf(operation)
      )
      expect(Either.isRight(decoded) ? "decodes" : String(decoded.left), `${method} ${path}`).toBe("decodes")
    }
  })
})

/** The ids the examples make up, and the path whose create example makes a record to stand for each. */
const madeUp: ReadonlyArray<readonly [string, string]> = [
  [Common.exampleIds.property, "/v1/properties"],
  [Common.exampleIds.text, "/v1/widgets/notices/texts"],
  [Common.exampleIds.webhook, "/v1/webhooks"],
  [Common.exampleIds.exportConfig, "/v1/exports/configs"]
]

/** Creates that need records no id names: a proof report is made on the consent users' example. */
const after: Readonly<Record<string, ReadonlyArray<string>>> = {
  "/v1/consents/proof-reports": ["/v1/consents/users"]
}

/** What stands for each made-up id so far. */
const standIns = new Map<string, string>()
/** The record each create example made, by path. */
const made = new Map<string, any>()

/** An example with its made-up ids replaced by real ones; undefined while one has no stand-in yet. */
const withRealIds = (example: unknown): unknown => {
  let json = JSON.stringify(example).replaceAll(Common.exampleIds.organization, organizationId)
  for (const [id] of madeUp) {
    if (!json.includes(id)) continue
    const real = standIns.get(id)
    if (real === undefined) return undefined
    json = json.replaceAll(id, real)
  }
  return JSON.parse(json)
}

/** The creates of the resources (an action named `create`, a session, is not one). */
const creates = () =>
  operations().filter(({ method, operation, path }) =>
    method === "post" && operation.operationId === `${path.slice(4)}.create` && resources.some((d) => `/v1/${d.path}` === path)
  )

describe("the examples, sent to the server", () => {
  it("every create example is accepted once its ids name real records (quotas and premium features exist already)", async () => {
    const pending = creates()
    expect(pending.length).toBeGreaterThan(20)
    while (pending.length > 0) {
      const i = pending.findIndex(({ operation, path }) =>
        withRealIds(bodyExampleOf(operation)) !== undefined && (after[path] ?? []).every((p) => made.has(p))
      )
      expect(i, `no create example can be sent: ${pending.map((p) => p.path).join(", ")}`).toBeGreaterThanOrEqual(0)
      const [{ operation, path }] = pending.splice(i, 1)
      const r = await operator("POST", path, withRealIds(bodyExampleOf(operation)))
      // One of each per organization, made with it: the example is right, the record is there.
      if (path === "/v1/quotas" || path === "/v1/premium-features") {
        expect(r.status, `${path}: ${text(r)}`).toBe(409)
        continue
      }
      expect(r.status, `${path}: ${text(r)}`).toBe(201)
      made.set(path, body(r))
      for (const [id, maker] of madeUp) if (maker === path) standIns.set(id, body(r).id)
    }
    expect(made.get("/v1/organizations")?.name).toBe("Acme Shop")
  }, 60_000)

  it("the action examples that need no credential of their own are accepted", async () => {
    for (const [path, status] of [
      ["/v1/widgets/notices/generators/sdk", 201],
      ["/v1/consents/tokens", 201],
      ["/v1/webhooks/deliveries/replay", 200]
    ] as const) {
      const r = await operator("POST", path, withRealIds(bodyExampleOf(document.paths[path].post)))
      expect(r.status, `${path}: ${text(r)}`).toBe(status)
    }
  })
})

const encode = encodeURIComponent

/** A parameter's value in the query string, as its style serializes it (OpenAPI 3.1, "Style Values"). */
const serialized = (parameter: any, value: unknown): Array<string> => {
  const style = parameter.style ?? "form"
  const explode = parameter.explode ?? style === "form"
  if (Array.isArray(value)) return value.map((v) => `${encode(parameter.name)}=${encode(String(v))}`)
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value)
    if (style === "deepObject") return entries.map(([k, v]) => `${encode(`${parameter.name}[${k}]`)}=${encode(String(v))}`)
    if (style === "form" && explode) return entries.map(([k, v]) => `${encode(k)}=${encode(String(v))}`)
    throw new Error(`${parameter.name}: a style this test does not serialize`)
  }
  return [`${encode(parameter.name)}=${encode(String(value))}`]
}

/** What a client fills a parameter with before anyone edits it: its example, its first named example, its default. */
const filledIn = (parameter: any): unknown =>
  parameter.example ?? (Object.values(parameter.examples ?? {})[0] as any)?.value ?? parameter.schema?.default

const finds = () =>
  operations().filter(({ method, operation }) => method === "get" && (operation.parameters ?? []).some((p: any) => p.name === "$sort"))

describe("the query parameters' examples", () => {
  it("every object query parameter has examples made of the resource's fields", () => {
    let objects = 0
    for (const { operation, path } of operations()) {
      for (const p of operation.parameters ?? []) {
        if (p.in !== "query" || p.schema?.type !== "object") continue
        objects++
        const values = [p.example, ...Object.values(p.examples ?? {}).map((e: any) => e.value)].filter((v) => v !== undefined)
        expect(values.length, `${path} ${p.name}`).toBeGreaterThan(0)
        const fields: Array<string> = p.schema.propertyNames.enum
        for (const v of values) for (const k of Object.keys(v)) expect(fields, `${path} ${p.name}`).toContain(k)
      }
    }
    expect(objects).toBeGreaterThan(50)
  })

  it("every find answers 200 to what the docs page fills in, and to each filter example, and shows records", async () => {
    expect(made.size, "the create examples ran first").toBeGreaterThan(20)
    for (const { operation, path } of finds()) {
      const parameters: Array<any> = operation.parameters
      const filter = parameters.find((p) => p.name === "filter")
      // Where the operator must name the organization, it names the one the examples went into.
      const own = parameters.some((p) => p.name === "organization_id") ? [`organization_id=${organizationId}`] : []
      for (const example of Object.values<any>(filter.examples)) {
        const query = [
          ...parameters.filter((p) => p !== filter && filledIn(p) !== undefined).flatMap((p) => serialized(p, filledIn(p))),
          ...serialized(filter, example.value),
          ...own
        ].join("&")
        const r = await operator("GET", `${path}?${query}`)
        expect(r.status, `${path}?${query}: ${text(r)}`).toBe(200)
        if (made.has(path)) expect(body(r).data.length, `${path}?${query} shows the record its create example made`).toBeGreaterThan(0)
      }
    }
  }, 60_000)
})

// After the finds, which look for the records as their create examples made them.
describe("the examples of changes, sent to the server", () => {
  it("every update and patch example is accepted on the record its create example made", async () => {
    let sent = 0
    for (const { method, operation, path } of operations()) {
      if ((method !== "put" && method !== "patch") || !path.endsWith("/{id}")) continue
      const collection = path.slice(0, -"/{id}".length)
      const record = collection === "/v1/quotas" || collection === "/v1/premium-features"
        ? body(await operator("GET", `${collection}?organization_id=${organizationId}`)).data[0]
        : made.get(collection)
      expect(record, `${method} ${path}: no record`).toBeDefined()
      const r = await operator(method.toUpperCase(), `${collection}/${encodeURIComponent(record.id)}`, withRealIds(bodyExampleOf(operation)))
      expect(r.status, `${method} ${path}: ${text(r)}`).toBe(200)
      sent++
    }
    expect(sent).toBeGreaterThan(30)
  }, 60_000)
})

describe("the organization a call acts in", () => {
  const parameterOf = (path: string) => document.paths[path].get.parameters.find((p: any) => p.name === "organization_id")

  it("is a required parameter where every caller names it: the delivery stats", async () => {
    expect(parameterOf("/v1/webhooks/deliveries/stats")).toMatchObject({ in: "query", required: true })
    for (const caller of [operator, client]) {
      expect((await caller("GET", "/v1/webhooks/deliveries/stats")).status).toBe(400)
      expect((await caller("GET", `/v1/webhooks/deliveries/stats?organization_id=${organizationId}`)).status).toBe(200)
    }
  })

  it("is optional, and says who gives it, where a caller of one organization has it implied", async () => {
    for (const path of ["/v1/consents/log/verify", "/v1/analytics/dashboards-urls"]) {
      const parameter = parameterOf(path)
      expect(parameter, path).toMatchObject({ in: "query", required: false })
      expect(parameter.description, path).toMatch(/implied for a caller of one organization/)
      expect(parameter.description, path).toMatch(/required \(400 without it\) (for|from) the operator and a member of several/)
      expect((await client("GET", path)).status, path).toBe(200)
      expect((await operator("GET", path)).status, path).toBe(400)
      expect((await operator("GET", `${path}?organization_id=${organizationId}`)).status, path).toBe(200)
    }
  })
})

describe("the other key of a record", () => {
  it("is a declared parameter of the get that takes it: a consent user by the organization's own id", async () => {
    const parameter = document.paths["/v1/consents/users/{id}"].get.parameters.find((p: any) => p.name === "$by_organization_user_id")
    expect(parameter).toMatchObject({ in: "query", required: false, schema: { type: "boolean" } })
    const user = made.get("/v1/consents/users")
    const r = await operator("GET", `/v1/consents/users/${encodeURIComponent(user.organization_user_id)}?$by_organization_user_id=true`)
    expect(r.status, text(r)).toBe(200)
    expect(body(r).id).toBe(user.id)
  })
})

/**
 * "an" before a vowel sound, "a" before a consonant sound: initialisms by the name of their
 * first letter, words by their first letters, with the usual exceptions.
 */
const wantsAn = (word: string): boolean => {
  if (/^[A-Z]{2,}/.test(word)) return /^[AEFHILMNORSX]/.test(word)
  const w = word.toLowerCase()
  if (/^(hour|honest|honou?r|heir)/.test(w)) return true
  if (/^(user|usage|use|unique|unit|union|universal|usual|one|once|euro)/.test(w)) return false
  return /^[aeiou]/.test(w)
}

describe("the summaries", () => {
  it("use a and an by the sound that follows, in every summary of the document", () => {
    const wrong: Array<string> = []
    for (const { method, operation, path } of operations()) {
      for (const m of (operation.summary as string).matchAll(/\b(a|an|A|An)\s+([\w-]+)/g)) {
        if ((m[1]!.toLowerCase() === "an") !== wantsAn(m[2]!)) wrong.push(`${method} ${path}: "${m[0]}"`)
      }
    }
    expect(wrong).toEqual([])
    expect(document.paths["/v1/organizations"].post.summary).toBe("Create an organization")
    expect(document.paths["/v1/keys/{id}"].get.summary).toBe("Get an API key")
    expect(document.paths["/v1/sso-connections"].post.summary).toBe("Create an SSO connection")
    expect(document.paths["/v1/consents/users"].post.summary).toBe("Create a consent user")
  })

  it("put nouns in the plural as English does", () => {
    const finds = operations().filter(({ operation }) => /^Find /.test(operation.summary)).map(({ operation }) => operation.summary as string)
    expect(finds.filter((s) => /[^aeiou]ys\b/.test(s))).toEqual([])
    expect(finds).toContain("Find properties")
    expect(finds).toContain("Find webhook deliveries")
  })
})
