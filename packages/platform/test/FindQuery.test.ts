import type { ConsentEvent, ConsentEventsResource, ConsentUser, DomainError, Property } from "@cmp/core"
import type * as Effect from "effect/Effect"
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest"
import {
  BadRequest,
  type ConsentPlatformApi,
  type CursorPage,
  type FindQueryOf,
  type Page
} from "../src/index.js"
import { organizationIn, testPlatform } from "./hostFixture.js"

/**
 * A find of the host API is typed by its resource's declaration: its fields with their values,
 * its operators, `$sort` and `$select` on its fields, its view parameters, computed filters and
 * `$cursor` where it has them; `$select` and `$cursor` shape the answer's type. The `@ts-expect-error` lines are
 * checked by the package's typecheck; each also runs, to show the engine refuses it too.
 */

let cmp: ConsentPlatformApi

beforeAll(async () => {
  cmp = await testPlatform()
})
afterAll(() => cmp?.dispose())

const organization = (name: string, features: Record<string, boolean> = {}) => organizationIn(cmp, name, features)

describe("a typed find", () => {
  it("takes the resource's fields with values of their type, and operators on them", async () => {
    const org = await organization("Typed A")
    const as = cmp.asOrganization(org.id)
    await cmp.properties.create({ organization_id: org.id, name: "Shop", website: "https://a.example" }, { as })
    await cmp.properties.create({ organization_id: org.id, name: "Blog" }, { as })

    const page = await cmp.properties.find({
      website: null,
      name: { $in: ["Blog", "Wiki"] },
      created_at: { $lte: new Date(Date.now() + 60_000).toISOString() },
      $sort: { name: -1 },
      $limit: 10
    }, { as })
    expectTypeOf(page).toEqualTypeOf<Page<Property>>()
    expect(page.data.map((p) => p.name)).toEqual(["Blog"])
    const either = await cmp.properties.find({ $or: [{ name: "Shop" }, { website: { $ne: null } }] }, { as })
    expect(either.total).toBe(1)

    // A private column the declaration makes queryable is a field of the query too.
    expectTypeOf<FindQueryOf<NonNullable<typeof ConsentEventsResource["~shape"]>>>()
      .toHaveProperty("user_id")

    // @ts-expect-error: not a field of properties
    await expect(cmp.properties.find({ colour: "red" }, { as })).rejects.toBeInstanceOf(BadRequest)
    // @ts-expect-error: not a field, inside `$or` either
    await expect(cmp.properties.find({ $or: [{ colour: "red" }] }, { as })).rejects.toBeInstanceOf(BadRequest)
    // @ts-expect-error: `version` holds a number
    await expect(cmp.properties.find({ version: "one" }, { as })).rejects.toBeInstanceOf(BadRequest)
    // @ts-expect-error: `$in` takes a list of the field's values
    await expect(cmp.properties.find({ version: { $in: ["one"] } }, { as })).rejects.toBeInstanceOf(BadRequest)
    // @ts-expect-error: ordering compares with a value, never with null
    await expect(cmp.properties.find({ website: { $gt: null } }, { as })).rejects.toBeInstanceOf(BadRequest)
    // @ts-expect-error: not an operator
    await expect(cmp.properties.find({ name: { $like: "S%" } }, { as })).rejects.toBeInstanceOf(BadRequest)
    // @ts-expect-error: `$sort` names a field of the resource
    await expect(cmp.properties.find({ $sort: { colour: 1 } }, { as })).rejects.toBeInstanceOf(BadRequest)
    // @ts-expect-error: properties do not page by cursor
    await expect(cmp.properties.find({ $cursor: "" }, { as })).rejects.toBeInstanceOf(BadRequest)
  })

  it("narrows its answer to the fields `$select` names, and `id`, which is always kept", async () => {
    const org = await organization("Typed B")
    const as = cmp.asOrganization(org.id)
    await cmp.properties.create({ organization_id: org.id, name: "Shop", website: "https://b.example" }, { as })

    const page = await cmp.properties.find({ $select: ["name"] }, { as })
    expectTypeOf(page).toEqualTypeOf<Page<Pick<Property, "id" | "name">>>()
    expect(page.data.map((p) => Object.keys(p).sort())).toEqual([["id", "name"]])
    // @ts-expect-error: a field left out of the selection is not in the answer's type
    expect(page.data[0]!.website).toBeUndefined()

    const both = await cmp.properties.find({ $select: ["id", "website"] }, { as })
    expectTypeOf(both.data[0]!).toEqualTypeOf<Pick<Property, "id" | "website">>()
    expect(Object.keys(both.data[0]!).sort()).toEqual(["id", "website"])

    // @ts-expect-error: `$select` names output fields
    await expect(cmp.properties.find({ $select: ["colour"] }, { as })).rejects.toBeInstanceOf(BadRequest)

    // As an Effect, and through a scoped client, as Promises and as Effects.
    expectTypeOf(cmp.effect.properties.find({ $select: ["name"] }, { as }))
      .toEqualTypeOf<Effect.Effect<Page<Pick<Property, "id" | "name">>, DomainError>>()
    const acme = cmp.forOrganization(org.id)
    const scoped = await acme.properties.find({ $select: ["name"], name: "Shop" })
    expectTypeOf(scoped).toEqualTypeOf<Page<Pick<Property, "id" | "name">>>()
    expect(scoped.data).toEqual([{ id: page.data[0]!.id, name: "Shop" }])
    expectTypeOf(acme.effect.properties.find({ $select: ["name"] }))
      .toEqualTypeOf<Effect.Effect<Page<Pick<Property, "id" | "name">>, DomainError>>()
    // @ts-expect-error: the scoped client checks the fields too
    await expect(acme.properties.find({ colour: "red" })).rejects.toBeInstanceOf(BadRequest)
  })

  it("pages consent events by `$cursor`, and takes the view parameters of consent users", async () => {
    const org = await organization("Typed C", { consents_api: true })
    const acme = cmp.forOrganization(org.id)
    for (const id of ["crm-1", "crm-2", "crm-3"]) {
      await acme.consents.events.create({
        organization_id: org.id,
        user: { organization_user_id: id },
        consents: { purposes: [{ id: "analytics", enabled: true }] },
        regulation: "ccpa"
      })
    }

    const whole = await acme.consents.events.find({ $cursor: "", $limit: 3 })
    expectTypeOf(whole).toEqualTypeOf<CursorPage<ConsentEvent>>()
    expect(whole.data.map((e) => e.user.organization_user_id)).toEqual(["crm-1", "crm-2", "crm-3"])

    // Every page repeats the query its cursor was issued for, `$select` included.
    const first = await acme.consents.events.find({ $cursor: "", $limit: 2, status: "confirmed", $select: ["regulation"] })
    expectTypeOf(first).toEqualTypeOf<CursorPage<Pick<ConsentEvent, "id" | "regulation">>>()
    expect(first.data).toHaveLength(2)
    expect(first.cursor).toEqual(expect.any(String))
    const rest = await acme.consents.events.find({ $cursor: first.cursor!, $limit: 2, status: "confirmed", $select: ["regulation"] })
    expect(rest.data.map((e) => Object.keys(e).sort())).toEqual([["id", "regulation"]])
    expect(rest.cursor).toBeNull()

    // @ts-expect-error: a cursor page is in creation order
    await expect(acme.consents.events.find({ $cursor: "", $sort: { created_at: -1 } })).rejects.toBeInstanceOf(BadRequest)
    // @ts-expect-error: an event's status is one of its states (the engine compares any text, and finds none)
    expect((await acme.consents.events.find({ status: "maybe" })).total).toBe(0)
    // @ts-expect-error: a JSON column is neither filtered nor sorted on
    await expect(acme.consents.events.find({ $sort: { metadata: 1 } })).rejects.toBeInstanceOf(BadRequest)

    // A view parameter chooses how each user looks; a user presents `consents` itself, so it is selectable.
    const users = await acme.consents.users.find({ regulation: "ccpa", $select: ["consents"], $sort: { created_at: 1 } })
    expectTypeOf(users).toEqualTypeOf<Page<Pick<ConsentUser, "id" | "consents">>>()
    expect(users.data[0]!.consents.purposes).toEqual([{ id: "analytics", enabled: true }])
    // @ts-expect-error: a view parameter is not selectable
    await expect(acme.consents.users.find({ $select: ["regulation"] })).rejects.toBeInstanceOf(BadRequest)

    // A computed filter takes its values: one, several, or `$in`.
    const given = await acme.consents.users.find({ regulation: "ccpa", consent_state: "given" })
    expect(given.total).toBe(3)
    expect((await acme.consents.users.find({ regulation: "ccpa", consent_state: ["none", "refused"] })).total).toBe(0)
    const walked = await acme.consents.users.find({ consent_state: { $in: ["none"] }, $cursor: "", $limit: 2 })
    expect(walked.data).toHaveLength(2)
    // @ts-expect-error: not one of the states
    await expect(acme.consents.users.find({ consent_state: "lapsed" })).rejects.toBeInstanceOf(BadRequest)
    // @ts-expect-error: equality or `$in` only
    await expect(acme.consents.users.find({ consent_state: { $ne: "given" } })).rejects.toBeInstanceOf(BadRequest)
    // @ts-expect-error: consent events have no such filter
    await expect(acme.consents.events.find({ consent_state: "given" })).rejects.toBeInstanceOf(BadRequest)
  })
})
