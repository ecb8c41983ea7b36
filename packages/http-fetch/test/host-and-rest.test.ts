import { actions, resources } from "@cmp/core"
import { openApiDocument, servedAt } from "@cmp/http"
import { type ConsentPlatformApi, createPlatform, type PlatformOptions } from "@cmp/platform"
import { sqlite } from "@cmp/store-sqlite"
import { ManualClock } from "@cmp/test-support/clock"
import { notes } from "@cmp/test-support/host-resource"
import { START } from "@cmp/test-support/http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createFetchHandlerFromRuntime } from "../src/index.js"

/**
 * The platform's host API (`createPlatform`) and the REST API over the same platform agree: they
 * name the same operations, a host's own declarations grow both alike, and a consent token made
 * in-process is one the REST API accepts. Here, above both the platform and the REST API, so that
 * neither package's tests need the other.
 */

/** A platform on an in-memory SQLite, cheap hashing, no log, no dispatcher, unless the overrides say otherwise. */
const testPlatform = <O extends Partial<PlatformOptions>>(overrides: O = {} as O) =>
  createPlatform({ store: sqlite({ filename: ":memory:" }), hashCost: 1024, logLevel: "None", dispatcher: false, ...overrides })

/** A new organization, made by the operator, with these premium features switched on. */
const organizationIn = async (cmp: ConsentPlatformApi, name: string, features: Record<string, boolean> = {}) => {
  const as = cmp.asOperator()
  const org = await cmp.organizations.create({ name }, { as })
  if (Object.keys(features).length > 0) {
    const flags = await cmp.premiumFeatures.find({ organization_id: org.id }, { as })
    await cmp.premiumFeatures.patch(flags.data[0]!.id, features, { as })
  }
  return org
}

/** The host function an operation id names: `platform-integrations/sessions.create` is `platformIntegrations/sessions/create`. */
const hostPathOf = (operationId: string): string => {
  const dot = operationId.lastIndexOf(".")
  const place = operationId.slice(0, dot).split("/").map((s) => s.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase()))
  return [...place, operationId.slice(dot + 1)].join("/")
}

/** Every function of a tree, by its keys joined with `/`. */
const functions = (tree: object, prefix: Array<string> = []): Array<string> =>
  Object.entries(tree).flatMap(([key, value]) =>
    typeof value === "function"
      ? [[...prefix, key].join("/")]
      : typeof value === "object" && value !== null
      ? functions(value, [...prefix, key])
      : []
  )

/** The operation tree of the host API: what is not a resource's or an action's is left out. */
const operationTree = (api: ConsentPlatformApi): object => {
  const { effect: _e, runtime: _r, asOrganization: _a, asOperator: _o, forOrganization: _f, dispose: _d, ...tree } = api
  return Object.fromEntries(Object.entries(tree).filter(([, v]) => typeof v === "object"))
}

/** A GET of the REST API over a platform, with a bearer token when given. */
const get = async (platform: { readonly runtime: ConsentPlatformApi["runtime"] }, url: string, token?: string) => {
  const api = await createFetchHandlerFromRuntime(platform.runtime, { allowHttp: true, logLevel: "None" })
  const res = await api.fetch(
    new Request(`http://cmp.test${url}`, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } }),
    { clientAddress: "127.0.0.1" }
  )
  const text = await res.text()
  return { status: res.status, body: text.length > 0 ? JSON.parse(text) : undefined, text }
}

const clock = new ManualClock(START)
let cmp: ConsentPlatformApi
let withNotes: Awaited<ReturnType<typeof testPlatform<typeof notes>>>

beforeAll(async () => {
  cmp = await testPlatform({ clock })
  withNotes = await testPlatform(notes)
})
afterAll(async () => {
  await cmp?.dispose()
  await withNotes?.dispose()
})

describe("the host API and the OpenAPI document", () => {
  const document = openApiDocument(resources, actions) as { paths: Record<string, Record<string, { operationId: string }>> }
  const operationIds = Object.values(document.paths).flatMap((operations) => Object.values(operations).map((o) => o.operationId))

  it("name the same operations: each of the document's is a host function, and the reverse", () => {
    expect(operationIds.length).toBeGreaterThan(100)
    const documented = operationIds.map(hostPathOf).sort()
    expect(new Set(documented).size).toBe(documented.length)
    expect(functions(operationTree(cmp)).sort()).toEqual(documented)
    expect(functions(cmp.effect).sort()).toEqual(documented)
    expect(functions(cmp.forOrganization("any")).filter((f) => !f.startsWith("effect/")).sort()).toEqual(documented)
  })

  it("documents every declared action under its place and name", () => {
    for (const a of actions) expect(operationIds).toContain(`${a.place}.${a.name}`)
  })
})

describe("a host's resources and actions in the REST API", () => {
  it("are operations of the OpenAPI document, and the host tree holds nothing else", async () => {
    const served = await get(withNotes, "/openapi.json")
    const document = served.body as { paths: Record<string, Record<string, { operationId: string }>> }
    const documented = Object.values(document.paths).flatMap((ops) => Object.values(ops).map((o) => hostPathOf(o.operationId))).sort()
    expect(documented).toEqual(expect.arrayContaining(["teamNotes/find", "teamNotes/remove", "teamNotes/pin"]))
    expect(functions(operationTree(withNotes)).sort()).toEqual(documented)
    expect(functions(withNotes.effect).sort()).toEqual(documented)
  })

  it("grow the OpenAPI document by their operations and schemas only", async () => {
    const without = (await get(cmp, "/openapi.json")).text
    // Without a host's declarations, the registry's document.
    expect(without).toBe(JSON.stringify(servedAt(openApiDocument(resources, actions), "")))
    const grown = (await get(withNotes, "/openapi.json")).body
    const base = JSON.parse(without)
    const added = (of: Record<string, unknown>, before: Record<string, unknown>) => Object.keys(of).filter((k) => !(k in before))
    expect(added(grown.paths, base.paths)).toEqual(["/v1/team-notes", "/v1/team-notes/{id}", "/v1/team-notes/{id}/pin"])
    expect(added(grown.components.schemas, base.components.schemas)).toEqual(["TeamNotes", "TeamNotesCreate", "TeamNotesUpdate", "TeamNotesPatch"])
    for (const path of added(grown.paths, base.paths)) delete grown.paths[path]
    for (const name of added(grown.components.schemas, base.components.schemas)) delete grown.components.schemas[name]
    expect(JSON.stringify(grown)).toBe(without)
  })
})

describe("cmp.consents.tokens.create and the REST API", () => {
  it("makes a token for one user of the organization, which the REST API accepts for that user only", async () => {
    const org = await organizationIn(cmp, "Tokens A", { consents_api: true, store_cmp_consents: true })
    const as = cmp.asOrganization(org.id)
    const mine = await cmp.consents.events.create({
      organization_id: org.id,
      user: { organization_user_id: "crm-1" },
      consents: { purposes: [{ id: "analytics", enabled: true }] }
    }, { as })
    const theirs = await cmp.consents.events.create({
      organization_id: org.id,
      user: { organization_user_id: "crm-2" },
      consents: { purposes: [{ id: "analytics", enabled: false }] }
    }, { as })
    const token = await cmp.consents.tokens.create({
      organization_id: org.id,
      organization_user_id: "crm-1",
      lifetime: 600,
      metadata: { channel: "backoffice" },
      delegate: { id: "rep-7", name: "Grace" }
    }, { as })
    expect(token).toMatchObject({
      organization_id: org.id,
      organization_user_id: "crm-1",
      lifetime: 600,
      metadata: { channel: "backoffice" },
      delegate: { id: "rep-7", name: "Grace" }
    })
    expect(typeof token.id_token).toBe("string")
    expect(token.expires_at).toBe(new Date(clock.millis + 600_000).toISOString())

    const own = await get(cmp, "/v1/consents/users/crm-1?$by_organization_user_id=true", token.id_token)
    expect(own.status, own.text).toBe(200)
    expect(own.body.id).toBe(mine.user.id)
    expect((await get(cmp, `/v1/consents/users/${theirs.user.id}`, token.id_token)).status).toBe(404)
    const events = await get(cmp, "/v1/consents/events", token.id_token)
    expect(events.status, events.text).toBe(200)
    expect(events.body.data.map((e: { id: string }) => e.id)).toEqual([mine.id])
    expect((await get(cmp, "/v1/properties", token.id_token)).status).toBe(403)
    // It lasts its lifetime on the platform's clock.
    clock.advance(601_000)
    expect((await get(cmp, "/v1/consents/users/crm-1?$by_organization_user_id=true", token.id_token)).status).toBe(401)
  })
})
