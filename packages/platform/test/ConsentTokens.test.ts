import { makeHandler } from "@cmp/http"
import { ManualClock } from "@cmp/test-support/clock"
import { START } from "@cmp/test-support/http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BadRequest, type ConsentPlatformApi, Forbidden } from "../src/index.js"
import { organizationIn, testPlatform } from "./hostFixture.js"

/**
 * Consent tokens made in-process (`cmp.consents.tokens.create`): the rules of the REST API, and
 * a token the REST API over the same platform accepts for that one user.
 */

let cmp: ConsentPlatformApi
const clock = new ManualClock(START)

beforeAll(async () => {
  cmp = await testPlatform({ clock })
})
afterAll(() => cmp?.dispose())

const failure = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e)

/** A GET through the REST API over the same platform, with a bearer token. */
const get = async (url: string, token: string) => {
  const api = await makeHandler(cmp.runtime, { allowHttp: true, logLevel: "None" })
  const r = await api.handle({ method: "GET", url, headers: { authorization: `Bearer ${token}` }, encrypted: false, remoteAddress: "127.0.0.1" })
  const text = typeof r.body === "string" ? r.body : new TextDecoder().decode(r.body)
  return { status: r.status, body: text.length > 0 ? JSON.parse(text) : undefined, text }
}

describe("cmp.consents.tokens.create", () => {
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

    const own = await get("/v1/consents/users/crm-1?$by_organization_user_id=true", token.id_token)
    expect(own.status, own.text).toBe(200)
    expect(own.body.id).toBe(mine.user.id)
    expect((await get(`/v1/consents/users/${theirs.user.id}`, token.id_token)).status).toBe(404)
    const events = await get("/v1/consents/events", token.id_token)
    expect(events.status, events.text).toBe(200)
    expect(events.body.data.map((e: { id: string }) => e.id)).toEqual([mine.id])
    expect((await get("/v1/properties", token.id_token)).status).toBe(403)
    // It lasts its lifetime on the platform's clock.
    clock.advance(601_000)
    expect((await get("/v1/consents/users/crm-1?$by_organization_user_id=true", token.id_token)).status).toBe(401)
  })

  it("as the operator, for any organization; the default lifetime is 900 s", async () => {
    const org = await organizationIn(cmp, "Tokens B", { consents_api: true })
    const token = await cmp.consents.tokens.create({ organization_id: org.id, organization_user_id: "crm-9" }, { as: cmp.asOperator() })
    expect(token).toMatchObject({ organization_id: org.id, organization_user_id: "crm-9" })
    expect(token.expires_at).toBe(new Date(clock.millis + 900_000).toISOString())
    expect(token.lifetime ?? 900).toBe(900)
  })

  it("is refused without consents_api, for another organization, and for an invalid input", async () => {
    const off = await organizationIn(cmp, "Tokens C")
    const gated = await failure(cmp.consents.tokens.create({ organization_id: off.id, organization_user_id: "u" }, { as: cmp.asOrganization(off.id) }))
    expect(gated).toBeInstanceOf(Forbidden)
    expect((gated as Error).message).toContain("consents_api")

    const on = await organizationIn(cmp, "Tokens D", { consents_api: true })
    const other = await organizationIn(cmp, "Tokens E", { consents_api: true })
    const as = cmp.asOrganization(on.id)
    expect(await failure(cmp.consents.tokens.create({ organization_id: other.id, organization_user_id: "u" }, { as }))).toBeInstanceOf(Forbidden)
    for (const lifetime of [0, 2_678_401, 1.5]) {
      const invalid = await failure(cmp.consents.tokens.create({ organization_id: on.id, organization_user_id: "u", lifetime }, { as }))
      expect(invalid, String(lifetime)).toBeInstanceOf(BadRequest)
      expect(Object.keys((invalid as BadRequest).errors).join(","), String(lifetime)).toContain("lifetime")
    }
    const forged = await failure(
      cmp.consents.tokens.create({ organization_id: on.id, organization_user_id: "u", unknown_field: 1 } as never, { as })
    )
    expect(forged).toBeInstanceOf(BadRequest)
  })
})
