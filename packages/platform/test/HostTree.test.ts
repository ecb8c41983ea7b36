import { actions, operationsOf, resources } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as Either from "effect/Either"
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest"
import { type ConsentPlatformApi, NotFound } from "../src/index.js"
import { organizationIn, testPlatform } from "./hostFixture.js"

/**
 * The host API is derived from the registry: each resource sits where its path names it, with
 * its operations, each action at its place under its name, and nothing else is there; a scoped
 * client acts as one organization.
 */

let cmp: ConsentPlatformApi

beforeAll(async () => {
  cmp = await testPlatform({
    admin: { key: "host-tree-admin", secret: "host-tree-admin-secret" },
    tcfVendorList: JSON.parse(fs.readFileSync(new URL("../../platform-node/test/fixtures/vendor-list.json", import.meta.url), "utf8"))
  })
})
afterAll(() => cmp?.dispose())

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
  const offered = resources.filter((def) => def.ownActions !== true)
  const camelPath = (path: string) => path.split("/").map(keyOf).join("/")

  it("has every resource of the registry at the place its path names, with its operations, as Promises and as Effects", () => {
    for (const def of offered) {
      for (const tree of [cmp, cmp.effect]) {
        const node = at(tree, def.path) as Record<string, unknown> | undefined
        expect(node, def.path).toBeDefined()
        for (const op of operationsOf(def)) expect(typeof node![op], `${def.path} ${op}`).toBe("function")
      }
    }
    // Only the operations it declares: the delivery log is read and replayed, never written.
    expect(Object.keys(cmp.webhooks.deliveries).sort()).toEqual(["find", "get", "replay", "replayOne", "stats"])
    expect(cmp.consents.events.create).toBeTypeOf("function")
    expect(cmp.widgets.notices.textsContents.find).toBeTypeOf("function")
    expect(cmp.webhooks.deliveries.get).toBeTypeOf("function")
  })

  it("has every action of the registry at its place, under its name", () => {
    expect(actions.length).toBeGreaterThan(0)
    for (const a of actions) {
      for (const tree of [cmp, cmp.effect]) {
        const node = at(tree, a.place) as Record<string, unknown> | undefined
        expect(typeof node?.[a.name], `${a.place} ${a.name}`).toBe("function")
      }
    }
    expect(cmp.webhooks.deliveries.replayOne).toBeTypeOf("function")
    expect(cmp.platformIntegrations.sessions.create).toBeTypeOf("function")
  })

  it("has nothing that is not a resource or an action of the registry", () => {
    const places = [...new Set([...offered.map((def) => camelPath(def.path)), ...actions.map((a) => camelPath(a.place))])].sort()
    expect(leaves(apiTree(cmp)).sort()).toEqual(places)
    expect(leaves(cmp.effect).sort()).toEqual(places)
    for (const place of places) {
      const functions = Object.entries(at(cmp, place) as object).filter(([, v]) => typeof v === "function").map(([k]) => k).sort()
      const expected = [
        ...offered.filter((def) => camelPath(def.path) === place).flatMap((def) => operationsOf(def)),
        ...actions.filter((a) => camelPath(a.place) === place).map((a) => a.name)
      ].sort()
      expect(functions, place).toEqual(expected)
    }
  })

  it("offers the signed dashboard links through their own action only", () => {
    expect(resources.some((def) => def.path === "analytics/dashboards-urls")).toBe(true)
    expect(Object.keys(cmp.analytics.dashboardsUrls)).toEqual(["find"])
  })

  it("types each operation from its resource's or action's declaration", () => {
    expectTypeOf(cmp.consents.events.create).returns.resolves.toHaveProperty("regulation")
    expectTypeOf(cmp.widgets.notices.templates.configs.find).parameter(1).toHaveProperty("as")
    expectTypeOf(cmp.webhooks.deliveries.replay).parameter(0).toEqualTypeOf<
      { readonly webhook_id: string; readonly from?: string | undefined; readonly to?: string | undefined }
    >()
    expectTypeOf(cmp.webhooks.deliveries.replay).returns.resolves.toEqualTypeOf<{ webhook_id: string; replayed: number }>()
    expectTypeOf(cmp.webhooks.deliveries.replayOne).parameter(0).toEqualTypeOf<string>()
    expectTypeOf(cmp.webhooks.deliveries.replayOne).returns.resolves.toHaveProperty("attempts_count")
    expectTypeOf(cmp.webhooks.deliveries.stats).returns.resolves.items.toHaveProperty("oldest_pending_age_s").toEqualTypeOf<number | null>()
    expectTypeOf(cmp.consents.events.tcstring).returns.resolves.toHaveProperty("tc_string").toEqualTypeOf<string>()
    expectTypeOf(cmp.sessions.create).returns.resolves.toHaveProperty("access_token")
    expectTypeOf(cmp.effect.languages.find).returns.toHaveProperty("pipe")
    // @ts-expect-error: an action that acts as a principal needs `as`
    expect(() => cmp.languages.find()).toThrow()
    // @ts-expect-error: an action's body is typed by its declaration
    void cmp.effect.webhooks.deliveries.replay({ webhook: "w" }, { as: cmp.asOperator() })
    // @ts-expect-error: only the declared methods are offered: the delivery log is never written
    expect(cmp.webhooks.deliveries.create).toBeUndefined()
    // @ts-expect-error: the signed dashboard links have no generic operations
    expect(cmp.analytics.dashboardsUrls.get).toBeUndefined()
    // @ts-expect-error: a path's kebab-case segment is camelCase in the tree
    expect(cmp["privacy-centers"]).toBeUndefined()
  })
})

describe("actions", () => {
  it("open a session with a key and its secret, as POST /v1/sessions does", async () => {
    const session = await cmp.sessions.create({ type: "api-key", key: "host-tree-admin", secret: "host-tree-admin-secret" })
    expect(session).toMatchObject({ type: "api-key", key: "host-tree-admin" })
    expect(session.access_token.split(".")).toHaveLength(3)
    await expect(cmp.sessions.create({ type: "api-key", key: "host-tree-admin", secret: "wrong" })).rejects.toMatchObject({ code: 400 })
  })

  it("run as the principal the options name, gated as over HTTP", async () => {
    const org = await organization("Actions A", { consents_api: true })
    const acme = cmp.forOrganization(org.id)
    const event = await acme.consents.events.create({
      organization_id: org.id,
      user: { id: "visitor-1" },
      consents: { purposes: [{ id: "1", enabled: true }], vendors: { enabled: ["755"] } }
    })
    const tc = await acme.consents.events.tcstring(event.id)
    expect(tc.id).toBe(event.id)
    expect(tc.tc_string).toMatch(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/)
    // Another organization does not see the event.
    const other = await organization("Actions B")
    await expect(cmp.forOrganization(other.id).consents.events.tcstring(event.id)).rejects.toBeInstanceOf(NotFound)
    expect(await acme.languages.find()).toHaveProperty("available")
    const links = await acme.analytics.dashboardsUrls.find({})
    expect(links.data).toEqual([])
  })

  it("rotate a key's secret and an organization's public key, typed from their declarations", async () => {
    const org = await organization("Actions R")
    const acme = cmp.forOrganization(org.id)
    const key = await acme.keys.create({ organization_id: org.id, name: "rotated" })
    const rotated = await acme.keys.rotateSecret(key.id, { previous_secret_expires_at: new Date(Date.now() + 3_600_000).toISOString() })
    expectTypeOf(rotated.previous_secret_expires_at).toEqualTypeOf<string | null | undefined>()
    expect(rotated.secret).toMatch(/^sk_/)
    expect(rotated.secret).not.toBe(key.secret)
    expect(rotated).not.toHaveProperty("previous_secret_hash")
    const renewed = await acme.organizations.rotatePublicKey(org.id, {})
    expect(renewed.public_api_key).not.toBe(org.public_api_key)
    expect(renewed.previous_key_expires_at).toBeTypeOf("string")
    const other = await organization("Actions R2")
    await expect(cmp.forOrganization(other.id).keys.rotateSecret(key.id, {})).rejects.toBeInstanceOf(NotFound)
  })

  it("answer as Effects too", async () => {
    const org = await organization("Actions C")
    const missing = await Effect.runPromise(Effect.either(cmp.forOrganization(org.id).effect.webhooks.deliveries.replayOne("nope")))
    expect(Either.isLeft(missing) && missing.left._tag).toBe("NotFound")
  })
})

const organization = (name: string, features: Record<string, boolean> = {}) => organizationIn(cmp, name, features)

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
