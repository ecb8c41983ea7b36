import { ManualClock } from "@cmp/test-support/clock"
import { START } from "@cmp/test-support/http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BadRequest, type ConsentPlatformApi, Forbidden } from "../src/index.js"
import { organizationIn, testPlatform } from "./hostFixture.js"

/**
 * Consent tokens made in-process (`cmp.consents.tokens.create`): the rules of the REST API. That
 * the REST API over the same platform accepts one for its user is tested where both are
 * (http-fetch's host-and-rest test).
 */

let cmp: ConsentPlatformApi
const clock = new ManualClock(START)

beforeAll(async () => {
  cmp = await testPlatform({ clock })
})
afterAll(() => cmp?.dispose())

const failure = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e)

describe("cmp.consents.tokens.create", () => {
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
