import { ApiUsage } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  BadRequest,
  type ConsentPlatformApi,
  Forbidden,
  NotFound,
  PlatformError
} from "../src/index.js"
import { organizationIn, testPlatform } from "./hostFixture.js"

/**
 * The in-process API a host makes once: typed operations per resource, acting as a principal
 * the host names, with the rules of the HTTP API except `api_requests`.
 */

let cmp: ConsentPlatformApi

beforeAll(async () => {
  cmp = await testPlatform()
})
afterAll(() => cmp?.dispose())

const organization = (name: string, features: Record<string, boolean> = {}) => organizationIn(cmp, name, features)

describe("createPlatform", () => {
  it("records a consent event as an organization and reads back its user in a regulation", async () => {
    const org = await organization("Host A", { consents_api: true, webhooks: true })
    const as = cmp.asOrganization(org.id)
    const event = await cmp.consents.events.create({
      organization_id: org.id,
      user: { organization_user_id: "crm-1" },
      consents: { purposes: [{ id: "analytics", enabled: true }] },
      regulation: "ccpa"
    }, { as })
    expect(event).toMatchObject({ organization_id: org.id, regulation: "ccpa", status: "confirmed", version: 1 })
    const userId = event.user.id!
    const gdpr = await cmp.consents.users.get(userId, { as })
    expect(gdpr).toMatchObject({ regulation: "gdpr", consents: { purposes: [] } })
    const ccpa = await cmp.consents.users.get(userId, { as, view: { regulation: "ccpa" } })
    expect(ccpa.consents.purposes).toEqual([{ id: "analytics", enabled: true }])
    // A resource with a sub-resource keeps its own operations (webhooks and webhooks.deliveries).
    const hook = await cmp.webhooks.create({ organization_id: org.id, url: "https://hooks.example/consents" }, { as: cmp.asOperator() })
    expect(hook.signing_secret).toMatch(/^whsec_/)
    expect((await cmp.webhooks.deliveries.find({ webhook_id: hook.id }, { as })).total).toBe(0)
    const page = await cmp.consents.events.find({ user_id: userId }, { as })
    expect(page.total).toBe(1)
    expect(page.data[0]!.id).toBe(event.id)
  })

  it("fails with the exported error classes, carrying the contract's code, name and errors", async () => {
    const org = await organization("Host B")
    const as = cmp.asOrganization(org.id)
    // Premium features apply to in-process calls.
    const gated = await cmp.consents.events.create({ organization_id: org.id, user: { id: "u" }, consents: {} }, { as })
      .then(() => undefined, (e: unknown) => e)
    expect(gated).toBeInstanceOf(Forbidden)
    expect(gated).toBeInstanceOf(PlatformError)
    expect(gated).toMatchObject({ code: 403, name: "Forbidden", className: "forbidden" })
    expect((gated as Error).message).toContain("consents_api")

    const invalid = await cmp.properties.create({ organization_id: org.id, name: "", website: "not a url" }, { as })
      .then(() => undefined, (e: unknown) => e)
    expect(invalid).toBeInstanceOf(BadRequest)
    expect(invalid).toMatchObject({ code: 400, name: "BadRequest" })
    expect(Object.keys((invalid as BadRequest).errors)).toContain("website")

    // Another organization's record is not found, as over HTTP.
    const other = await organization("Host C")
    const theirs = await cmp.properties.create({ organization_id: other.id, name: "Theirs", website: "https://c.example" }, {
      as: cmp.asOrganization(other.id)
    })
    await expect(cmp.properties.get(theirs.id, { as })).rejects.toBeInstanceOf(NotFound)
    await expect(cmp.properties.get(theirs.id, { as })).rejects.toMatchObject({ code: 404, name: "NotFound" })
  })

  it("rotates a webhook's signing secret through the host API, typed from the action: a new secret once, the overlap's end, another organization's webhook not found", async () => {
    const org = await organization("Host Rotation", { webhooks: true })
    const as = cmp.asOrganization(org.id)
    const hook = await cmp.webhooks.create({ organization_id: org.id, url: "https://hooks.example/rotation" }, { as })
    const rotated = await cmp.webhooks.rotateSecret(hook.id, { overlap_s: 3600 }, { as })
    expect(rotated.signing_secret).toMatch(/^whsec_/)
    expect(rotated.signing_secret).not.toBe(hook.signing_secret)
    expect(Date.parse(rotated.previous_secret_expires_at!) - Date.parse(rotated.updated_at)).toBe(3_600_000)
    const read = await cmp.webhooks.get(hook.id, { as })
    expect(read.previous_secret_expires_at).toBe(rotated.previous_secret_expires_at)
    expect(read.signing_secret).toBeUndefined()
    const at_once = await cmp.webhooks.rotateSecret(hook.id, { overlap_s: 0 }, { as })
    expect(at_once.previous_secret_expires_at).toBeNull()
    await expect(cmp.webhooks.rotateSecret(hook.id, { overlap_s: 604_801 }, { as })).rejects.toBeInstanceOf(BadRequest)
    const other = await organization("Host Rotation Other", { webhooks: true })
    await expect(cmp.webhooks.rotateSecret(hook.id, {}, { as: cmp.asOrganization(other.id) })).rejects.toBeInstanceOf(NotFound)
  })

  it("count quotas apply; in-process calls are not API requests", async () => {
    const org = await organization("Host D")
    const op = cmp.asOperator()
    const quotas = await cmp.quotas.find({ organization_id: org.id }, { as: op })
    await cmp.quotas.patch(quotas.data[0]!.id, { secrets: 1, api_requests: 2 }, { as: op })
    const as = cmp.asOrganization(org.id)
    await cmp.secrets.create({ organization_id: org.id, name: "one" }, { as })
    const second = await cmp.secrets.create({ organization_id: org.id, name: "two" }, { as }).then(() => undefined, (e: unknown) => e)
    expect(second).toBeInstanceOf(Forbidden)
    expect((second as Forbidden).errors).toHaveProperty("secrets")
    // Five reads over a quota of two requests: none is refused, and none is counted, so the
    // organization still has both of its API requests (a third is refused).
    for (let i = 0; i < 5; i++) await cmp.secrets.find({}, { as })
    const request = () => cmp.runtime.runPromise(Effect.either(Effect.flatMap(ApiUsage, (usage) => usage.hit(org.id))))
    expect(Either.isRight(await request())).toBe(true)
    expect(Either.isRight(await request())).toBe(true)
    expect(Either.isLeft(await request())).toBe(true)
  })

  it("offers the same operations as Effects, failing with the domain errors", async () => {
    const org = await organization("Host E")
    const as = cmp.asOrganization(org.id)
    const created = await Effect.runPromise(cmp.effect.properties.create({ organization_id: org.id, name: "Shop", website: "https://e.example" }, { as }))
    expect(created.name).toBe("Shop")
    const missing = await Effect.runPromise(Effect.either(cmp.effect.properties.get("nope", { as })))
    expect(Either.isLeft(missing) && missing.left._tag).toBe("NotFound")
  })
})
