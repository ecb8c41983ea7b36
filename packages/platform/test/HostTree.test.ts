import { resources } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest"
import { type ConsentPlatformApi, createPlatform, NotFound, sqlite } from "../src/index.js"

/**
 * The host API is derived from the registry: each resource sits where its path names it, with
 * its operations, and nothing else is there; a scoped client acts as one organization.
 */

let cmp: ConsentPlatformApi

beforeAll(async () => {
  cmp = await createPlatform({ store: sqlite({ filename: ":memory:" }), hashCost: 1024, logLevel: "None", dispatcher: false })
})
afterAll(() => cmp?.dispose())

const operations = ["find", "get", "create", "update", "patch", "remove"]

/** `privacy-centers` is `privacyCenters`. */
const keyOf = (segment: string) =>
  segment.split("-").map((word, i) => (i === 0 ? word : word.charAt(0).toUpperCase() + word.slice(1))).join("")

const at = (tree: unknown, path: string): unknown =>
  path.split("/").reduce<unknown>((node, segment) => (node as Record<string, unknown> | undefined)?.[keyOf(segment)], tree)

/** Every node of a tree that has operations, by its keys joined with `/`. */
const leaves = (tree: object, prefix: Array<string> = []): Array<string> =>
  Object.entries(tree).flatMap(([key, value]) => {
    if (typeof value === "function") return []
    const here = [...prefix, key]
    const children = leaves(value as object, here)
    return Object.values(value as object).some((v) => typeof v === "function") ? [here.join("/"), ...children] : children
  })

const apiTree = (api: ConsentPlatformApi): object => {
  const { effect: _e, runtime: _r, asOrganization: _a, asOperator: _o, forOrganization: _f, dispose: _d, ...tree } = api
  return Object.fromEntries(Object.entries(tree).filter(([, v]) => typeof v === "object"))
}

describe("the host tree", () => {
  // A dashboard link is signed per row by its own action: generic operations would answer unsigned rows.
  const offered = resources.filter((def) => def.path !== "analytics/dashboards-urls")

  it("has every resource of the registry at the place its path names, with its operations, as Promises and as Effects", () => {
    for (const def of offered) {
      for (const tree of [cmp, cmp.effect]) {
        const node = at(tree, def.path) as Record<string, unknown> | undefined
        expect(node, def.path).toBeDefined()
        for (const op of operations) expect(typeof node![op], `${def.path} ${op}`).toBe("function")
      }
    }
    expect(cmp.widgets.notices.textsContents.find).toBeTypeOf("function")
    expect(cmp.webhooks.deliveries.get).toBeTypeOf("function")
  })

  it("has nothing that is not a resource of the registry", () => {
    const camelPaths = offered.map((def) => def.path.split("/").map(keyOf).join("/")).sort()
    expect(leaves(apiTree(cmp)).sort()).toEqual(camelPaths)
    expect(leaves(cmp.effect).sort()).toEqual(camelPaths)
  })

  it("leaves out the signed dashboard links, which only their own action answers", () => {
    expect(resources.some((def) => def.path === "analytics/dashboards-urls")).toBe(true)
    expect(at(cmp, "analytics/dashboards-urls")).toBeUndefined()
    expect(Object.keys(cmp.analytics)).toEqual(["dashboards"])
  })

  it("types each operation from its resource's declaration", () => {
    expectTypeOf(cmp.consents.events.create).returns.resolves.toHaveProperty("regulation")
    expectTypeOf(cmp.widgets.notices.templates.configs.find).parameter(1).toHaveProperty("as")
    // @ts-expect-error: the signed dashboard links are not in the host tree
    expect(cmp.analytics.dashboardsUrls).toBeUndefined()
    // @ts-expect-error: a path's kebab-case segment is camelCase in the tree
    expect(cmp["privacy-centers"]).toBeUndefined()
  })
})

const organization = async (name: string, features: Record<string, boolean> = {}) => {
  const as = cmp.asOperator()
  const org = await cmp.organizations.create({ name }, { as })
  if (Object.keys(features).length > 0) {
    const flags = await cmp.premiumFeatures.find({ organization_id: org.id }, { as })
    await cmp.premiumFeatures.patch(flags.data[0]!.id, features, { as })
  }
  return org
}

describe("forOrganization", () => {
  it("creates and reads as the organization, with no options to pass", async () => {
    const org = await organization("Scoped A", { consents_api: true })
    const acme = cmp.forOrganization(org.id)
    const property = await acme.properties.create({ organization_id: org.id, name: "Shop", website: "https://a.example" })
    expect(await acme.properties.get(property.id)).toMatchObject({ id: property.id, organization_id: org.id })
    expect((await acme.properties.find({})).data.map((p) => p.id)).toEqual([property.id])
    const patched = await acme.properties.patch(property.id, { name: "Store" })
    expect(patched.name).toBe("Store")
    // The same as `{ as: asOrganization(id) }`.
    expect(await cmp.properties.get(property.id, { as: cmp.asOrganization(org.id) })).toMatchObject({ name: "Store" })

    const event = await acme.consents.events.create({
      organization_id: org.id,
      user: { organization_user_id: "crm-1" },
      consents: { purposes: [{ id: "analytics", enabled: true }] },
      regulation: "ccpa"
    })
    // Other options still apply: the view of a consent user.
    const ccpa = await acme.consents.users.get(event.user.id!, { view: { regulation: "ccpa" } })
    expect(ccpa.consents.purposes).toEqual([{ id: "analytics", enabled: true }])
    const removed = await acme.properties.remove(property.id)
    expect(removed.id).toBe(property.id)
  })

  it("cannot reach another organization's records", async () => {
    const mine = await organization("Scoped B")
    const other = await organization("Scoped C")
    const theirs = await cmp.forOrganization(other.id).properties.create({
      organization_id: other.id,
      name: "Theirs",
      website: "https://c.example"
    })
    const acme = cmp.forOrganization(mine.id)
    await expect(acme.properties.get(theirs.id)).rejects.toBeInstanceOf(NotFound)
    await expect(acme.properties.get(theirs.id)).rejects.toMatchObject({ code: 404, name: "NotFound" })
    await expect(acme.properties.remove(theirs.id)).rejects.toBeInstanceOf(NotFound)
    expect((await acme.properties.find({})).total).toBe(0)
    // An `as` passed anyway (plain JavaScript) does not leave the organization.
    // @ts-expect-error: a scoped client's calls name no `as`
    await expect(acme.properties.get(theirs.id, { as: cmp.asOperator() })).rejects.toBeInstanceOf(NotFound)
    expect(await cmp.properties.get(theirs.id, { as: cmp.asOperator() })).toMatchObject({ id: theirs.id })
  })

  it("offers the same operations as Effects", async () => {
    const org = await organization("Scoped D")
    const other = await organization("Scoped E")
    const theirs = await cmp.properties.create({ organization_id: other.id, name: "Theirs", website: "https://e.example" }, {
      as: cmp.asOperator()
    })
    const acme = cmp.forOrganization(org.id)
    const created = await Effect.runPromise(acme.effect.properties.create({ organization_id: org.id, name: "Shop", website: "https://d.example" }))
    expect(created.organization_id).toBe(org.id)
    const missing = await Effect.runPromise(Effect.either(acme.effect.properties.get(theirs.id)))
    expect(Either.isLeft(missing) && missing.left._tag).toBe("NotFound")
  })
})
