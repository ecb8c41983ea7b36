import { TCString } from "@iabtechlabtcf/core"
import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { as, expect400, expect403, expect404, expect405, expect409 } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * Notices through HTTP: texts and their default per platform, reviewed contents, notice and
 * template configs (IAB TCF rules), the SDK configuration generator, and server-side TC strings.
 */
const vendorList = JSON.parse(fs.readFileSync(new URL("./fixtures/vendor-list.json", import.meta.url), "utf8"))

const { server, op, tenant } = useServer({ tcfVendorList: vendorList })

type T = Awaited<ReturnType<typeof tenant>>

const newText = async (t: T, body: Record<string, unknown> = {}) => {
  const r = await t.call("POST", "/v1/widgets/notices/texts", { body: { organization_id: t.org.id, name: "Banner", ...body } })
  expect(r.status, r.text).toBe(201)
  return r.body
}
const newContent = async (t: T, textId: string, content = "We use cookies.") => {
  const r = await t.call("POST", "/v1/widgets/notices/texts-contents", {
    body: { organization_id: t.org.id, text_id: textId, content }
  })
  expect(r.status, r.text).toBe(201)
  return r.body
}
const review = async (id: string, status: string) => {
  const r = await op.call("PATCH", `/v1/widgets/notices/texts-contents/${id}`, { body: { status } })
  expect(r.status, r.text).toBe(200)
  return r.body
}
const text = async (t: T, id: string) => (await t.call("GET", `/v1/widgets/notices/texts/${id}`)).body

describe("notices: texts", () => {
  it("creates with platforms web, amp, app, ctv and refuses others; no remove (405)", async () => {
    const t = await tenant()
    const x = await newText(t, { platforms: ["web", "amp", "app", "ctv"] })
    expect(x).toMatchObject({ platforms: ["web", "amp", "app", "ctv"], default: false, version: 1 })
    expect400(await t.call("POST", "/v1/widgets/notices/texts", {
      body: { organization_id: t.org.id, name: "x", platforms: ["mobile"] }
    }))
    expect405(await t.call("DELETE", `/v1/widgets/notices/texts/${x.id}`))
    const p = await t.call("PATCH", `/v1/widgets/notices/texts/${x.id}`, { body: { name: "Renamed" } })
    expect(p.status, p.text).toBe(200)
    const u = await t.call("PUT", `/v1/widgets/notices/texts/${x.id}`, { body: { name: "Put", platforms: ["web"], default: false } })
    expect(u.status, u.text).toBe(200)
    const f = await t.call("GET", "/v1/widgets/notices/texts")
    expect(f.body.data.map((d: any) => d.name)).toEqual(["Put"])
  })

  it("one default per organization and platform: a new default clears the old one (create and patch)", async () => {
    const t = await tenant()
    const a = await newText(t, { platforms: ["web"], default: true })
    const other = await newText(t, { platforms: ["app"], default: true })
    const b = await newText(t, { platforms: ["web", "amp"], default: true })
    expect((await text(t, a.id)).default).toBe(false)
    expect((await text(t, b.id)).default).toBe(true)
    // Another platform keeps its own default.
    expect((await text(t, other.id)).default).toBe(true)
    const p = await t.call("PATCH", `/v1/widgets/notices/texts/${a.id}`, { body: { default: true } })
    expect(p.status, p.text).toBe(200)
    expect((await text(t, b.id)).default).toBe(false)
    const defaults = await t.call("GET", "/v1/widgets/notices/texts?default=true&$sort[name]=1")
    expect(defaults.body.total).toBe(2)
    // Another organization's default is not touched.
    const t2 = await tenant()
    await newText(t2, { platforms: ["web"], default: true })
    expect((await text(t, a.id)).default).toBe(true)
  })

  it("concurrent new defaults leave exactly one", async () => {
    const t = await tenant()
    const rs = await Promise.all([1, 2, 3, 4].map((i) =>
      t.call("POST", "/v1/widgets/notices/texts", {
        body: { organization_id: t.org.id, name: `d${i}`, platforms: ["ctv"], default: true }
      })
    ))
    for (const r of rs) expect(r.status, r.text).toBe(201)
    const f = await t.call("GET", "/v1/widgets/notices/texts?default=true")
    expect(f.body.total).toBe(1)
  })
})

describe("notices: texts-contents", () => {
  it("created submitted with content_version = max + 1 per text", async () => {
    const t = await tenant()
    const x = await newText(t)
    const y = await newText(t)
    const c1 = await newContent(t, x.id)
    const c2 = await newContent(t, x.id)
    const d1 = await newContent(t, y.id)
    expect([c1.content_version, c2.content_version, d1.content_version]).toEqual([1, 2, 1])
    expect(c1.status).toBe("submitted")
    // Concurrent submissions get distinct versions.
    const rs = await Promise.all([1, 2, 3].map(() => newContent(t, x.id)))
    expect(rs.map((r) => r.content_version).sort()).toEqual([3, 4, 5])
  })

  it("a client cannot set status, on create or on change (400)", async () => {
    const t = await tenant()
    const x = await newText(t)
    expect400(await t.call("POST", "/v1/widgets/notices/texts-contents", {
      body: { organization_id: t.org.id, text_id: x.id, content: "c", status: "approved" }
    }))
    const c = await newContent(t, x.id)
    expect400(await t.call("PATCH", `/v1/widgets/notices/texts-contents/${c.id}`, { body: { status: "approved" } }))
    // Even the operator's new content starts submitted: approval is a review of what exists.
    const byOp = await op.call("POST", "/v1/widgets/notices/texts-contents", {
      body: { organization_id: t.org.id, text_id: x.id, content: "c", status: "approved" }
    })
    expect(byOp.status, byOp.text).toBe(201)
    expect(byOp.body.status).toBe("submitted")
    expect((await t.call("GET", `/v1/widgets/notices/texts-contents/${c.id}`)).body.status).toBe("submitted")
  })

  it("only the operator approves or rejects; an approved content is immutable (409)", async () => {
    const t = await tenant()
    const x = await newText(t)
    const c = await newContent(t, x.id)
    const rejected = await review(c.id, "rejected")
    expect(rejected.status).toBe("rejected")
    // A client's new wording of a rejected content is a new submission.
    const changed = await t.call("PATCH", `/v1/widgets/notices/texts-contents/${c.id}`, { body: { content: "Better." } })
    expect(changed.status, changed.text).toBe(200)
    expect(changed.body.status).toBe("submitted")
    const approved = await review(c.id, "approved")
    expect(approved.status).toBe("approved")
    expect409(await t.call("PATCH", `/v1/widgets/notices/texts-contents/${c.id}`, { body: { content: "Sneaky" } }))
    expect409(await t.call("PUT", `/v1/widgets/notices/texts-contents/${c.id}`, {
      body: { content: "Sneaky", includes_purposes: true }
    }))
    expect409(await op.call("PATCH", `/v1/widgets/notices/texts-contents/${c.id}`, { body: { status: "rejected" } }))
    expect409(await t.call("DELETE", `/v1/widgets/notices/texts-contents/${c.id}`))
    expect((await t.call("GET", `/v1/widgets/notices/texts-contents/${c.id}`)).body).toMatchObject({
      content: "Better.",
      status: "approved"
    })
  })

  it("every content is kept forever: remove is refused (409) whatever the status", async () => {
    const t = await tenant()
    const c = await newContent(t, (await newText(t)).id)
    expect409(await t.call("DELETE", `/v1/widgets/notices/texts-contents/${c.id}`))
    await review(c.id, "rejected")
    expect409(await op.call("DELETE", `/v1/widgets/notices/texts-contents/${c.id}`))
    expect((await t.call("GET", `/v1/widgets/notices/texts-contents/${c.id}`)).status).toBe(200)
  })

  it("the text must be one of the organization's texts", async () => {
    const t = await tenant()
    const t2 = await tenant()
    const foreign = await newText(t2)
    expect400(await t.call("POST", "/v1/widgets/notices/texts-contents", {
      body: { organization_id: t.org.id, text_id: foreign.id, content: "c" }
    }))
    expect400(await t.call("POST", "/v1/widgets/notices/texts-contents", {
      body: { organization_id: t.org.id, text_id: "nope", content: "c" }
    }))
  })
})

const sdkInput = (t: T, extra: Record<string, unknown> = {}) => ({
  organization_id: t.org.id,
  platform: "web",
  config: { app: { name: "site" } },
  ...extra
})
const generate = (t: T, body: Record<string, unknown>) =>
  t.call("POST", "/v1/widgets/notices/generators/sdk", { body })

describe("notices: SDK configuration generator", () => {
  it("answers { config } with custom_json deep-merged last", async () => {
    const t = await tenant()
    const r = await generate(t, sdkInput(t, {
      country: "FR",
      consent_duration: 6,
      consent_duration_unit: "months",
      custom_json: { notice: { disagree_button_style: "primary", extra: 1 }, app: { theme: "dark" } }
    }))
    expect(r.status, r.text).toBe(201)
    expect(Object.keys(r.body)).toEqual(["config"])
    expect(r.body.config).toMatchObject({
      platform: "web",
      country: "FR",
      app: { name: "site", theme: "dark" },
      notice: { text_mode: "custom", disagree_button_style: "primary", extra: 1 },
      consent: { duration: { value: 6, unit: "months" } }
    })
  })

  it("enforces the enums and the country code", async () => {
    const t = await tenant()
    for (
      const bad of [
        { platform: "app" },
        { text_mode: "draft" },
        { negative_action: "banner" },
        { disagree_button_style: "tertiary" },
        { consent_duration_unit: "weeks" },
        { denied_consent_duration_unit: "years" },
        { country: "FRA" },
        { country: "fr" },
        { unknown_field: true }
      ]
    ) {
      const r = await generate(t, sdkInput(t, bad))
      expect400(r)
      expect(Object.keys(r.body.errors)[0]).toBe(Object.keys(bad)[0])
    }
    expect(await generate(t, sdkInput(t, { negative_action: null })).then((r) => r.status)).toBe(201)
  })

  it("text_mode approved needs a text of the organization with an approved content", async () => {
    const t = await tenant()
    const x = await newText(t)
    expect400(await generate(t, sdkInput(t, { text_mode: "approved" })))
    const c = await newContent(t, x.id, "Approved words")
    const pending = await generate(t, sdkInput(t, { text_mode: "approved", text_id: x.id }))
    expect400(pending)
    expect(pending.body.errors.text_id).toBeTruthy()
    await review(c.id, "rejected")
    expect400(await generate(t, sdkInput(t, { text_mode: "approved", text_id: x.id })))
    await review(c.id, "approved")
    await newContent(t, x.id, "Newer, not approved")
    const ok = await generate(t, sdkInput(t, { text_mode: "approved", text_id: x.id }))
    expect(ok.status, ok.text).toBe(201)
    expect(ok.body.config.notice).toMatchObject({
      text_mode: "approved",
      text: { id: x.id, content_id: c.id, content_version: 1, content: "Approved words" }
    })
    // Another organization's approved text is not usable, not even by the operator.
    const t2 = await tenant()
    expect400(await generate(t2, sdkInput(t2, { text_mode: "approved", text_id: x.id })))
    expect400(await op.call("POST", "/v1/widgets/notices/generators/sdk", {
      body: sdkInput(t2, { text_mode: "approved", text_id: x.id })
    }))
    const byOp = await op.call("POST", "/v1/widgets/notices/generators/sdk", {
      body: sdkInput(t, { text_mode: "approved", text_id: x.id })
    })
    expect(byOp.status, byOp.text).toBe(201)
    // custom mode needs no text.
    expect((await generate(t, sdkInput(t, { text_mode: "custom" }))).status).toBe(201)
  })

  it("enable_ignore_consent_before needs a valid ignore_consent_before date", async () => {
    const t = await tenant()
    expect400(await generate(t, sdkInput(t, { enable_ignore_consent_before: true })))
    expect400(await generate(t, sdkInput(t, { enable_ignore_consent_before: true, ignore_consent_before: "yesterday" })))
    expect400(await generate(t, sdkInput(t, { enable_ignore_consent_before: true, ignore_consent_before: "2024-13-45" })))
    const ok = await generate(t, sdkInput(t, { enable_ignore_consent_before: true, ignore_consent_before: "2024-06-01" }))
    expect(ok.status, ok.text).toBe(201)
    expect(ok.body.config.consent.ignore_consent_before).toBe("2024-06-01T00:00:00.000Z")
  })

  it("Google Consent Mode v2: the seven default statuses under their standard names", async () => {
    const t = await tenant()
    const r = await generate(t, sdkInput(t, {
      gcm_enabled: true,
      gcm_set_default_status: true,
      gcm_ads_default_status: true,
      gcm_analytics_default_status: false,
      gcm_functionality_default_status: true,
      gcm_personalization_default_status: false,
      gcm_security_default_status: true,
      gcm_ad_user_data_default_status: false,
      gcm_ad_personalization_default_status: true
    }))
    expect(r.status, r.text).toBe(201)
    expect(r.body.config.integrations.google_consent_mode).toMatchObject({ enabled: true, set_default_status: true })
    expect(r.body.config.integrations.google_consent_mode.default_status).toEqual({
      ad_storage: "granted",
      analytics_storage: "denied",
      functionality_storage: "granted",
      personalization_storage: "denied",
      security_storage: "granted",
      ad_user_data: "denied",
      ad_personalization: "granted"
    })
    const off = await generate(t, sdkInput(t, { gcm_ads_default_status: true }))
    expect(off.body.config.integrations.google_consent_mode).toEqual({ enabled: false })
  })

  it("refuses another organization (403) and other methods (405)", async () => {
    const t = await tenant()
    const t2 = await tenant()
    expect403(await generate(t, sdkInput(t2)))
    expect405(await t.call("GET", "/v1/widgets/notices/generators/sdk"))
  })
})

describe("notices: configs", () => {
  it("validates the SDK configuration inside config", async () => {
    const t = await tenant()
    const ok = await t.call("POST", "/v1/widgets/notices/configs", {
      body: { organization_id: t.org.id, config: { platform: "web", text_mode: "custom", country: "DE" } }
    })
    expect(ok.status, ok.text).toBe(201)
    for (
      const [config, field] of [
        [{ platform: "desktop" }, "config.platform"],
        [{ country: "Germany" }, "config.country"],
        [{ consent_duration_unit: "weeks" }, "config.consent_duration_unit"],
        [{ enable_ignore_consent_before: true }, "config.ignore_consent_before"],
        [{ nope: 1 }, "config.nope"]
      ] as const
    ) {
      const r = await t.call("POST", "/v1/widgets/notices/configs", { body: { organization_id: t.org.id, config } })
      expect400(r)
      expect(Object.keys(r.body.errors)).toContain(field)
    }
    expect400(await t.call("PATCH", `/v1/widgets/notices/configs/${ok.body.id}`, { body: { config: { platform: "x" } } }))
    const p = await t.call("PATCH", `/v1/widgets/notices/configs/${ok.body.id}`, { body: { config: { platform: "amp" } } })
    expect(p.status, p.text).toBe(200)
    expect(p.body.config).toEqual({ platform: "amp" })
  })
})

const app = (iab: Record<string, unknown>) => ({ app: { essentialPurposes: ["c1"], vendors: { include: ["v1"], iab } } })
const template = (t: T, config: unknown) =>
  t.call("POST", "/v1/widgets/notices/templates/configs", { body: { organization_id: t.org.id, config } })

describe("notices: template configs (IAB TCF rules)", () => {
  it("accepts a valid app section and keeps the later sections as given", async () => {
    const t = await tenant()
    const config = {
      ...app({
        all: true,
        exclude: [5],
        enabled: true,
        version: 2,
        include: [3, 4],
        restrictions: [
          { id: "r1", purposeId: ["2", "7"], restrictionType: "req-li", vendors: { restrictionType: "all", ids: [], purposeId: ["2"] } },
          { id: "r2", purposeId: ["1"], restrictionType: "req-consent", vendors: { restrictionType: "list", ids: [8], purposeId: [] } }
        ],
        stacks: { auto: true, ids: [] }
      }),
      preferences: { anything: ["goes", { here: 1 }] }
    }
    const r = await template(t, config)
    expect(r.status, r.text).toBe(201)
    expect(r.body.config).toEqual(config)
  })

  it("no field of config.app is required: lists left out are stored and answered empty", async () => {
    const t = await tenant()
    const onlyIab = await template(t, { app: { vendors: { iab: { all: true, version: 2 } } } })
    expect(onlyIab.status, onlyIab.text).toBe(201)
    const filled = {
      app: {
        essentialPurposes: [],
        vendors: { include: [], iab: { all: true, version: 2, include: [], exclude: [], restrictions: [] } }
      }
    }
    expect(onlyIab.body.config).toEqual(filled)
    expect((await t.call("GET", `/v1/widgets/notices/templates/configs/${onlyIab.body.id}`)).body.config).toEqual(filled)
    const empty = { app: { essentialPurposes: [], vendors: { include: [] } } }
    for (const [config, expected] of [
      [{ app: {} }, empty],
      [{}, empty],
      [{ preferences: { x: 1 } }, { ...empty, preferences: { x: 1 } }],
      [
        { app: { vendors: { iab: { restrictions: [{ id: "r", purposeId: ["2"], restrictionType: "allow", vendors: { restrictionType: "all" } }], stacks: {} } } } },
        {
          app: {
            essentialPurposes: [],
            vendors: {
              include: [],
              iab: {
                include: [],
                exclude: [],
                restrictions: [{ id: "r", purposeId: ["2"], restrictionType: "allow", vendors: { restrictionType: "all", ids: [], purposeId: [] } }],
                stacks: { ids: [] }
              }
            }
          }
        }
      ]
    ] as const) {
      const r = await template(t, config)
      expect([config, r.status], r.text).toEqual([config, 201])
      expect(r.body.config).toEqual(expected)
    }
    // A change is filled the same way.
    const p = await t.call("PATCH", `/v1/widgets/notices/templates/configs/${onlyIab.body.id}`, {
      body: { config: { app: { essentialPurposes: ["c1"] } } }
    })
    expect(p.status, p.text).toBe(200)
    expect(p.body.config).toEqual({ app: { essentialPurposes: ["c1"], vendors: { include: [] } } })
  })

  it("what is given is still typed and still meets the TCF rules", async () => {
    const t = await tenant()
    for (
      const [config, field] of [
        [{ app: { essentialPurposes: "c1" } }, "config.app.essentialPurposes"],
        [{ app: { vendors: [] } }, "config.app.vendors"],
        [{ app: null }, "config.app"],
        [{ app: { vendors: { iab: { include: ["x"] } } } }, "config.app.vendors.iab.include.0"],
        [{ app: { vendors: { iab: { exclude: [1] } } } }, "config.app.vendors.iab.exclude"],
        [{
          app: { vendors: { iab: { restrictions: [{ id: "r", purposeId: ["3"], restrictionType: "req-li", vendors: { restrictionType: "all" } }] } } }
        }, "config.app.vendors.iab.restrictions.0.purposeId"],
        [{
          app: { vendors: { iab: { restrictions: [{ id: "r", purposeId: ["2"], restrictionType: "allow", vendors: { restrictionType: "list" } }] } } }
        }, "config.app.vendors.iab.restrictions.0.vendors.ids"],
        [{
          app: { vendors: { iab: { restrictions: [{ id: "r", restrictionType: "allow", vendors: { restrictionType: "all" } }] } } }
        }, "config.app.vendors.iab.restrictions.0.purposeId"]
      ] as const
    ) {
      const r = await template(t, config)
      expect400(r)
      expect([config, Object.keys(r.body.errors)]).toEqual([config, expect.arrayContaining([field])])
    }
  })

  it("TCF version is 1 or 2", async () => {
    const t = await tenant()
    for (const version of [0, 3, 1.5]) expect400(await template(t, app({ version })))
    expect((await template(t, app({ version: 1 }))).status).toBe(201)
  })

  it("restrictionType is one of allow, disallow, req-consent, req-li", async () => {
    const t = await tenant()
    const r = await template(t, app({
      restrictions: [{ id: "r", purposeId: ["2"], restrictionType: "require", vendors: { restrictionType: "all" } }]
    }))
    expect400(r)
    for (const rt of ["allow", "disallow", "req-consent"]) {
      const ok = await template(t, app({
        restrictions: [{ id: "r", purposeId: ["1"], restrictionType: rt, vendors: { restrictionType: "all" } }]
      }))
      expect(ok.status, ok.text).toBe(201)
    }
  })

  it("req-li is refused for purposes 1, 3, 4, 5 and 6", async () => {
    const t = await tenant()
    for (const p of ["1", "3", "4", "5", "6"]) {
      const r = await template(t, app({
        restrictions: [{ id: "r", purposeId: ["2", p], restrictionType: "req-li", vendors: { restrictionType: "all" } }]
      }))
      expect400(r)
      expect(Object.keys(r.body.errors)).toEqual(["config.app.vendors.iab.restrictions.0.purposeId"])
    }
    const ok = await template(t, app({
      restrictions: [{ id: "r", purposeId: ["2", "7", "8", "9", "10"], restrictionType: "req-li", vendors: { restrictionType: "all" } }]
    }))
    expect(ok.status, ok.text).toBe(201)
    // Also on change.
    expect400(await t.call("PATCH", `/v1/widgets/notices/templates/configs/${ok.body.id}`, {
      body: {
        config: app({ restrictions: [{ id: "r", purposeId: ["3"], restrictionType: "req-li", vendors: { restrictionType: "all" } }] })
      }
    }))
  })

  it("restriction purpose ids are TCF purpose ids, \"1\" to \"11\": nothing else slips past the req-li rule", async () => {
    const t = await tenant()
    for (const p of ["1x", "1,3", "3 4", "1\u0000", " 3", "3 ", "03", "0", "12", "-1", "1.0", "", "٣", "constructor"]) {
      for (const restrictionType of ["req-li", "allow"]) {
        const r = await template(t, app({
          restrictions: [{ id: "r", purposeId: ["2", p], restrictionType, vendors: { restrictionType: "all" } }]
        }))
        expect400(r)
        expect(Object.keys(r.body.errors), JSON.stringify(p)).toContain("config.app.vendors.iab.restrictions.0.purposeId.1")
      }
      const scoped = await template(t, app({
        restrictions: [{ id: "r", purposeId: ["2"], restrictionType: "allow", vendors: { restrictionType: "all", purposeId: [p] } }]
      }))
      expect400(scoped)
      expect(Object.keys(scoped.body.errors), JSON.stringify(p)).toContain("config.app.vendors.iab.restrictions.0.vendors.purposeId.0")
    }
    const ok = await template(t, app({
      restrictions: [{ id: "r", purposeId: ["2", "7", "11"], restrictionType: "req-li", vendors: { restrictionType: "all", purposeId: ["1", "11"] } }]
    }))
    expect(ok.status, ok.text).toBe(201)
  })

  it("vendors.restrictionType list requires vendor ids", async () => {
    const t = await tenant()
    for (const vendors of [{ restrictionType: "list" }, { restrictionType: "list", ids: [] }]) {
      const r = await template(t, app({ restrictions: [{ id: "r", purposeId: ["2"], restrictionType: "allow", vendors }] }))
      expect400(r)
      expect(Object.keys(r.body.errors)).toEqual(["config.app.vendors.iab.restrictions.0.vendors.ids"])
    }
    expect400(await template(t, app({
      restrictions: [{ id: "r", purposeId: ["2"], restrictionType: "allow", vendors: { restrictionType: "some" } }]
    })))
  })

  it("exclude is only meaningful with all: true", async () => {
    const t = await tenant()
    const r = await template(t, app({ exclude: [1, 2] }))
    expect400(r)
    expect(Object.keys(r.body.errors)).toEqual(["config.app.vendors.iab.exclude"])
    expect400(await template(t, app({ all: false, exclude: [1] })))
    expect((await template(t, app({ all: true, exclude: [1] }))).status).toBe(201)
  })
})

describe("notices: tenant isolation", () => {
  it("404 on another organization's objects, 403 to create into or filter on it", async () => {
    const a = await tenant()
    const b = await tenant()
    const x = await newText(a)
    const c = await newContent(a, x.id)
    const nc = await a.call("POST", "/v1/widgets/notices/configs", { body: { organization_id: a.org.id, config: {} } })
    const tc = await template(a, app({}))
    for (
      const [path, id] of [
        ["widgets/notices/texts", x.id],
        ["widgets/notices/texts-contents", c.id],
        ["widgets/notices/configs", nc.body.id],
        ["widgets/notices/templates/configs", tc.body.id]
      ]
    ) {
      expect404(await b.call("GET", `/v1/${path}/${id}`))
      expect404(await b.call("PATCH", `/v1/${path}/${id}`, { body: {} }))
      expect403(await b.call("GET", `/v1/${path}?organization_id=${a.org.id}`))
      const mine = await b.call("GET", `/v1/${path}`)
      expect(mine.status, mine.text).toBe(200)
      expect(mine.body.total).toBe(0)
    }
    expect404(await b.call("DELETE", `/v1/widgets/notices/configs/${nc.body.id}`))
    expect403(await b.call("POST", "/v1/widgets/notices/texts", { body: { organization_id: a.org.id, name: "x" } }))
    expect403(await b.call("POST", "/v1/widgets/notices/texts-contents", {
      body: { organization_id: a.org.id, text_id: x.id, content: "x" }
    }))
    expect403(await b.call("POST", "/v1/widgets/notices/configs", { body: { organization_id: a.org.id, config: {} } }))
    expect403(await b.call("POST", "/v1/widgets/notices/templates/configs", {
      body: { organization_id: a.org.id, config: app({}) }
    }))
  })
})

describe("consents: server-side TC string", () => {
  it("encodes an event's choices; decoding gives them back", async () => {
    const t = await op.tenant()
    const flags = await op.featuresOf(t.org.id)
    await op.call("PATCH", `/v1/premium-features/${flags.id}`, { body: { consents_api: true } })
    const call = as(server.url, t.token)
    const e = await call("POST", "/v1/consents/events", {
      body: {
        organization_id: t.org.id,
        user: { organization_user_id: "u1" },
        consents: {
          purposes: [
            { id: "1", enabled: true },
            { id: "2", enabled: false },
            { id: "3", enabled: true },
            { id: "7", enabled: false, enabled_li: true },
            { id: "custom-purpose", enabled: true }
          ],
          vendors: { enabled: ["1", "8", "not-iab"], disabled: ["2"], enabled_li: ["2"] }
        }
      }
    })
    expect(e.status, e.text).toBe(201)
    const r = await call("GET", `/v1/consents/events/${e.body.id}/tcstring`)
    expect(r.status, r.text).toBe(200)
    expect(typeof r.body.tc_string).toBe("string")
    const model = TCString.decode(r.body.tc_string)
    expect([...model.purposeConsents.values()].sort((a, b) => a - b)).toEqual([1, 3])
    expect([...model.purposeLegitimateInterests.values()]).toEqual([7])
    expect(model.vendorConsents.has(1)).toBe(true)
    expect(model.vendorConsents.has(8)).toBe(true)
    expect(model.vendorConsents.has(2)).toBe(false)
    expect(model.vendorLegitimateInterests.has(2)).toBe(true)
    expect(model.vendorListVersion).toBe(vendorList.vendorListVersion)
    expect(model.created?.toISOString().slice(0, 10)).toBe(String(e.body.created_at).slice(0, 10))
    // Another organization's event is a 404.
    const other = await tenant()
    expect404(await other.call("GET", `/v1/consents/events/${e.body.id}/tcstring`))
  })
})

describe("notices and exports: OpenAPI", () => {
  it("describes every new service", async () => {
    const r = await fetch(`${server.url}/openapi.json`)
    const doc = await r.json() as { paths: Record<string, Record<string, unknown>>; components: { schemas: Record<string, any> } }
    for (
      const p of [
        "/v1/widgets/notices/texts",
        "/v1/widgets/notices/texts/{id}",
        "/v1/widgets/notices/texts-contents/{id}",
        "/v1/widgets/notices/configs",
        "/v1/widgets/notices/templates/configs/{id}",
        "/v1/widgets/notices/generators/sdk",
        "/v1/exports/configs",
        "/v1/exports/execute",
        "/v1/exports/runs/{id}",
        "/v1/consents/events/{id}/tcstring"
      ]
    ) expect(doc.paths[p], p).toBeTruthy()
    expect(doc.paths["/v1/widgets/notices/texts/{id}"]!.delete).toBeUndefined()
    expect(doc.paths["/v1/widgets/notices/generators/sdk"]!.post).toBeTruthy()
    expect(Object.keys(doc.components.schemas.SdkConfigurationInput.properties)).toContain("gcm_ad_personalization_default_status")
  })
})
