import { resources } from "@cmp/core"
import { describe, expect, it } from "vitest"
import { client, expect400, expect403, memberOf, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * What a write hears first: an organization without a service's premium feature gets 403 before
 * its body is validated (so an incomplete body does not hide the real reason), and a field only
 * the operator may set is named as such, not as output only.
 */

const { server, op, tenant } = useServer()

const enable = async (organizationId: string, flags: ReadonlyArray<string>) => {
  const row = await op.featuresOf(organizationId)
  const r = await op.call("PATCH", `/v1/premium-features/${row.id}`, {
    body: Object.fromEntries(flags.map((f) => [f, true]))
  })
  expect(r.status, r.text).toBe(200)
}

/** Every gated create: the declared resources with a premium feature and a create, and the gated actions. */
const gated: ReadonlyArray<{ readonly path: string; readonly feature: string }> = [
  ...resources
    .filter((d) => d.premiumFeature !== undefined && d.methods.includes("create") && !d.operatorOnly.includes("create"))
    .map((d) => ({ path: `/v1/${d.path}`, feature: d.premiumFeature! })),
  { path: "/v1/exports/execute", feature: "batch_exports_manual_run" },
  { path: "/v1/webhooks/deliveries/replay", feature: "webhooks" }
]

/** Bodies no create accepts: empty, an unknown or output-only field, an owner of the wrong type. */
const badBodies = (organizationId: string): ReadonlyArray<Record<string, unknown>> => [
  {},
  { organization_id: organizationId, no_such_field: 1 },
  { organization_id: organizationId, updated_at: "yesterday" },
  { organization_id: 42 }
]

describe("premium features are checked before the body", () => {
  it("covers the gated creates of the registry", () => {
    expect(gated.map((g) => g.path)).toEqual(expect.arrayContaining([
      "/v1/consents/events",
      "/v1/consents/users",
      "/v1/webhooks",
      "/v1/sso-connections",
      "/v1/exports/execute"
    ]))
  })

  it("an organization without the feature gets 403 for an incomplete or invalid body; with it, 400", async () => {
    const off = await tenant()
    const on = await tenant()
    await enable(on.org.id, [...new Set(gated.map((g) => g.feature))])
    for (const g of gated) {
      for (const body of badBodies(off.org.id)) {
        const r = await off.call("POST", g.path, { body })
        expect([g.path, body, r.status], r.text).toEqual([g.path, body, 403])
        expect403(r)
        expect(r.body.message).toContain(g.feature)
      }
      // The same bodies from an organization with the feature are what they are: invalid.
      for (const body of badBodies(on.org.id)) {
        const r = await on.call("POST", g.path, { body })
        expect([g.path, body, r.status], r.text).toEqual([g.path, body, 400])
        expect400(r)
      }
    }
  })

  it("a body that is not an object is still 403 without the feature", async () => {
    const off = await tenant()
    for (const g of gated) {
      for (const body of [[1, 2], []]) {
        const r = await off.call("POST", g.path, { body })
        expect([g.path, r.status], r.text).toEqual([g.path, 403])
      }
    }
  })

  it("naming another organization is 403 whatever the body, with or without the feature", async () => {
    const off = await tenant()
    const on = await tenant()
    const other = await tenant()
    await enable(on.org.id, [...new Set(gated.map((g) => g.feature))])
    await enable(other.org.id, [...new Set(gated.map((g) => g.feature))])
    for (const g of gated.filter((x) => x.path !== "/v1/webhooks/deliveries/replay")) {
      for (const caller of [off, on]) {
        const r = await caller.call("POST", g.path, { body: { organization_id: other.org.id } })
        expect([g.path, r.status], r.text).toEqual([g.path, 403])
      }
    }
  })

  it("a member is gated by the organization it names, or by all of its organizations", async () => {
    const off = await tenant()
    const on = await tenant()
    await enable(on.org.id, [...new Set(gated.map((g) => g.feature))])
    const onlyOff = await memberOf(server.url, off)
    const both = await memberOf(server.url, off, on)
    for (const g of gated) {
      expect([g.path, (await onlyOff("POST", g.path, { body: {} })).status]).toEqual([g.path, 403])
      const named = { organization_id: off.org.id, no_such_field: 1 }
      expect([g.path, (await onlyOff("POST", g.path, { body: named })).status]).toEqual([g.path, 403])
      // One of its organizations has the feature: the body decides, or the one it names.
      expect([g.path, (await both("POST", g.path, { body: {} })).status]).toEqual([g.path, 400])
      if (g.path !== "/v1/webhooks/deliveries/replay") {
        expect([g.path, (await both("POST", g.path, { body: named })).status]).toEqual([g.path, 403])
        const inOn = { organization_id: on.org.id, no_such_field: 1 }
        expect([g.path, (await both("POST", g.path, { body: inOn })).status]).toEqual([g.path, 400])
      }
    }
  })

  it("the operator is never gated: its bad bodies are 400", async () => {
    const off = await tenant()
    for (const g of gated) {
      for (const body of badBodies(off.org.id)) {
        const r = await op.call("POST", g.path, { body })
        expect([g.path, body, r.status], r.text).toEqual([g.path, body, 400])
      }
    }
  })

  it("a valid create still works once the feature is on", async () => {
    const t = await tenant()
    const body = { organization_id: t.org.id, organization_user_id: "ext-1" }
    expect403(await t.call("POST", "/v1/consents/users", { body }))
    await enable(t.org.id, ["consents_api"])
    const r = await t.call("POST", "/v1/consents/users", { body })
    expect(r.status, r.text).toBe(201)
  })
})

describe("fields only the operator may set", () => {
  it("a client is told the field is the operator's; an output-only field is still output only", async () => {
    const t = await tenant()
    const text = await t.call("POST", "/v1/widgets/notices/texts", { body: { organization_id: t.org.id, name: "Banner" } })
    expect(text.status, text.text).toBe(201)
    const content = { organization_id: t.org.id, text_id: text.body.id, content: "We use cookies." }
    const withStatus = await t.call("POST", "/v1/widgets/notices/texts-contents", { body: { ...content, status: "approved" } })
    expect400(withStatus)
    expect(withStatus.body.errors).toEqual({ status: "may only be set by the operator" })
    expect(withStatus.body.message).toBe("Invalid status: may only be set by the operator")
    const created = await t.call("POST", "/v1/widgets/notices/texts-contents", { body: content })
    expect(created.status, created.text).toBe(201)
    const patched = await t.call("PATCH", `/v1/widgets/notices/texts-contents/${created.body.id}`, { body: { status: "approved" } })
    expect400(patched)
    expect(patched.body.errors).toEqual({ status: "may only be set by the operator" })

    for (const flag of ["validate_purpose_id", "allow_chat_support", "organization_group_name"]) {
      const r = await t.call("PATCH", `/v1/organizations/${t.org.id}`, { body: { [flag]: flag === "organization_group_name" ? "g" : true } })
      expect400(r)
      expect(r.body.errors).toEqual({ [flag]: "may only be set by the operator" })
    }
    // Output only for everyone, the operator included.
    for (const [who, caller] of [["client", t.call], ["operator", op.call]] as const) {
      const r = await caller("POST", "/v1/widgets/notices/texts", {
        body: { organization_id: t.org.id, name: "x", created_at: "2026-01-01T00:00:00.000Z" }
      })
      expect400(r)
      expect([who, r.body.errors]).toEqual([who, { created_at: "is output only and cannot be set" }])
    }
    const selfRegister = await op.call("POST", "/v1/organizations", { body: { name: unique("org"), self_register: true } })
    expect400(selfRegister)
    expect(selfRegister.body.errors).toEqual({ self_register: "is output only and cannot be set" })
    // The operator sets what the client may not.
    const reviewed = await op.call("PATCH", `/v1/widgets/notices/texts-contents/${created.body.id}`, { body: { status: "approved" } })
    expect(reviewed.status, reviewed.text).toBe(200)
    expect(reviewed.body.status).toBe("approved")
  })
})
