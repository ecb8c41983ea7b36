import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ADMIN, as, call, expect403, expect404, expect405, expect409, memberOf, unique } from "./helpers.js"
import { type TestTenant, useServer } from "./fixture.js"

/**
 * The audit trail (`/v1/audit-logs`): every change of a configuration record leaves one entry
 * naming who made it, from which address, and the names of the fields it set, in the change's
 * own transaction; consent records leave none; no value (a secret, an e-mail address) is ever in
 * it. An organization reads its own entries, the operator every entry; nobody writes them.
 */

let exportsRoot: string
beforeAll(() => {
  exportsRoot = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-audit-"))
})
afterAll(() => {
  if (exportsRoot) fs.rmSync(exportsRoot, { recursive: true, force: true })
})

const cert = fs.readFileSync(path.join(import.meta.dirname, "fixtures", "localhost-cert.pem"), "utf8")

// One proxy in front: the address an entry names is the last one of `X-Forwarded-For`, which the proxy appended.
const { server, op, tenant } = useServer(() => ({ trustProxy: true, webhookAllowHosts: ["127.0.0.1"], exportsRoot }))

const ALL_FEATURES = { webhooks: true, consents_api: true, store_cmp_consents: true, sso: true }

let addresses = 0
/** A documentation address of its own for each request, so an entry names the one request that made it. */
const nextAddress = () => `198.51.100.${++addresses % 250}`
/** What the proxy sends: the client's own header (any text) with the address the proxy saw appended. */
const from = (address: string) => ({ "x-forwarded-for": `192.0.2.99, ${address}` })

type Caller = TestTenant["call"]
/** A write through one proxy from `address`. */
const write = (by: Caller, address: string, method: string, url: string, body?: unknown) =>
  by(method, url, { headers: from(address), ...(body === undefined ? {} : { body }) })

/** The entries of one record, as the operator reads them. */
const entriesOf = async (resource: string, id: string, by: Caller = op.call) => {
  const r = await by("GET", `/v1/audit-logs?resource=${encodeURIComponent(resource)}&resource_id=${encodeURIComponent(id)}&$limit=100`)
  expect(r.status, r.text).toBe(200)
  return r.body.data as Array<any>
}

interface Family {
  readonly path: string
  /** The operator makes it (an operator-only create). */
  readonly operatorCreates?: boolean
  readonly create: (t: TestTenant, objs: Record<string, any>) => Record<string, unknown>
  readonly createFields?: ReadonlyArray<string>
  readonly patch?: (t: TestTenant, objs: Record<string, any>) => Record<string, unknown>
  readonly patchFields?: ReadonlyArray<string>
  /** No remove for this family (or only through its organization). */
  readonly keep?: boolean
  /** The entry's organization (default the tenant's). */
  readonly operatorWide?: boolean
}

const app = { app: { essentialPurposes: ["c1"], vendors: { include: ["v1"], iab: {} } } }

/** Each audited family, created, patched and removed by the tenant's key (or the operator's where only it may). */
const FAMILIES: ReadonlyArray<Family> = [
  { path: "keys", create: (t) => ({ organization_id: t.org.id, name: unique("k"), description: "d" }), patch: () => ({ description: "changed" }) },
  { path: "secrets", create: (t) => ({ organization_id: t.org.id, name: unique("s") }), patch: () => ({ description: "changed" }) },
  {
    path: "members",
    create: (t) => ({ organization_id: t.org.id, name: "Ada", email: `${unique("ada")}@example.com` }),
    patch: () => ({ saml_active: true })
  },
  {
    path: "webhooks",
    create: (t) => ({ organization_id: t.org.id, url: "http://127.0.0.1:9/hook" }),
    patch: () => ({ url: "http://127.0.0.1:9/changed" })
  },
  { path: "properties", create: (t) => ({ organization_id: t.org.id, name: "p", website: "https://www.audit.example" }), patch: () => ({ name: "q" }) },
  {
    path: "cookies",
    create: (_t, o) => ({ name: unique("c"), domain: "audit.example", taxonomy_id: "t", property_id: o.properties.id }),
    patch: () => ({ name: unique("c") })
  },
  { path: "vendors", create: (_t, o) => ({ property_id: o.properties.id, metadata_id: unique("v") }), patch: () => ({ status: "published" }) },
  { path: "privacy-centers", create: (t) => ({ organization_id: t.org.id, name: "pc", legal_name: "legal" }), patch: () => ({ name: "pc2" }) },
  {
    path: "domains",
    create: (t) => ({ id: `${unique("d")}.audit.example`, organization_id: t.org.id, usage: "cmp", description: "d" }),
    patch: () => ({ description: "changed" })
  },
  {
    path: "widgets/notices/texts",
    create: (t) => ({ organization_id: t.org.id, name: "text", platforms: ["web"] }),
    patch: () => ({ name: "t2" }),
    keep: true
  },
  {
    path: "widgets/notices/texts-contents",
    create: (t, o) => ({ organization_id: t.org.id, text_id: o["widgets/notices/texts"].id, content: "hello" }),
    patch: () => ({ content: "bye" }),
    // Kept as the proof of what users saw.
    keep: true
  },
  {
    path: "widgets/notices/configs",
    create: (t) => ({ organization_id: t.org.id, config: { platform: "web", text_mode: "custom", notice_deployment_id: "dep" } }),
    patch: () => ({ config: { platform: "amp" } })
  },
  {
    path: "widgets/notices/templates/configs",
    create: (t) => ({ organization_id: t.org.id, template_id: "tpl", config: app }),
    patch: () => ({ template_id: "tpl2" })
  },
  {
    path: "consents/policies",
    create: (t, o) => ({
      organization_id: t.org.id,
      regulation: "gdpr",
      consent_duration: 13,
      consent_duration_unit: "months",
      notice_text_id: o["widgets/notices/texts"].id,
      essential_purpose_ids: ["e"]
    }),
    patch: () => ({ consent_duration: 6 })
  },
  {
    path: "exports/configs",
    create: (t) => ({ organization_id: t.org.id, name: "export", destinations: [{ type: "directory", path: "audit" }] }),
    patch: () => ({ name: "export2" })
  },
  {
    path: "sso-connections",
    create: (t) => ({ organization_id: t.org.id, idp_certificate: cert, idp_sign_in_endpoint: "https://idp.audit.example/sso" }),
    patch: (t) => ({ organization_id: t.org.id, idp_sign_saml_request: true }),
    patchFields: ["idp_sign_saml_request"],
    keep: true
  },
  {
    path: "organizations-source-systems",
    create: (t) => ({ organization_id: t.org.id, source_system: "sp", source_system_id: unique("ss") })
  },
  {
    path: "platform-integrations",
    operatorCreates: true,
    create: (t) => ({ organization_id: t.org.id, name: "shop", description: "plugin" }),
    patch: () => ({ name: "shop2" })
  },
  {
    path: "analytics/dashboards",
    operatorCreates: true,
    operatorWide: true,
    create: () => ({
      name: "dash",
      type: "tool-a",
      product: "cmp",
      aggregation_period: "daily",
      category: "analytics",
      target_url: "https://dash.example.com/a"
    }),
    patch: () => ({ name: "dash2" })
  }
]

describe("every audited family", () => {
  it("a create, a patch and a remove each leave one entry: action, resource, id, field names, principal, address", async () => {
    const t = await tenant(ALL_FEATURES)
    const objs: Record<string, any> = {}
    const problems: Array<string> = []
    const check = (what: string, actual: unknown, expected: unknown) => {
      if (JSON.stringify(actual) !== JSON.stringify(expected)) problems.push(`${what}: ${JSON.stringify(actual)} (expected ${JSON.stringify(expected)})`)
    }
    for (const f of FAMILIES) {
      const by = f.operatorCreates ? op.call : t.call
      const principal = { kind: "api_key", id: f.operatorCreates ? ADMIN.key : t.key.id }
      const body = f.create(t, objs)
      const addressOf: Record<string, string> = { create: nextAddress() }
      const made = await write(by, addressOf.create!, "POST", `/v1/${f.path}`, body)
      expect(made.status, `${f.path}: ${made.text}`).toBe(201)
      objs[f.path] = made.body
      const id = made.body.id as string
      if (f.patch) {
        addressOf.patch = nextAddress()
        const r = await write(by, addressOf.patch, "PATCH", `/v1/${f.path}/${encodeURIComponent(id)}`, f.patch(t, objs))
        expect(r.status, `${f.path}: ${r.text}`).toBe(200)
      }
      const entries = await entriesOf(f.path, id)
      for (const e of entries) {
        check(`${f.path} ${e.action} principal`, e.principal, principal)
        check(`${f.path} ${e.action} address`, e.address, addressOf[e.action])
        check(`${f.path} ${e.action} organization`, e.organization_id, f.operatorWide ? null : t.org.id)
        check(`${f.path} ${e.action} resource`, [e.resource, e.resource_id], [f.path, id])
      }
      check(`${f.path} actions`, entries.map((e) => e.action).sort(), f.patch ? ["create", "patch"] : ["create"])
      const created = entries.find((e) => e.action === "create")
      check(`${f.path} create fields`, created?.fields, f.createFields ?? Object.keys(body).filter((k) => k !== "id").sort())
      const patched = entries.find((e) => e.action === "patch")
      if (f.patch) check(`${f.path} patch fields`, patched?.fields, f.patchFields ?? Object.keys(f.patch(t, objs)).sort())
    }
    // Removed in reverse order, so nothing is removed before what refers to it.
    for (const f of [...FAMILIES].reverse()) {
      if (f.keep) continue
      const by = f.operatorCreates ? op.call : t.call
      const id = objs[f.path].id as string
      const address = nextAddress()
      const r = await write(by, address, "DELETE", `/v1/${f.path}/${encodeURIComponent(id)}`)
      if (r.status !== 200) {
        problems.push(`DELETE ${f.path}: ${r.status} ${r.text.slice(0, 200)}`)
        continue
      }
      const removed = (await entriesOf(f.path, id)).filter((e) => e.action === "remove")
      check(`${f.path} remove`, removed.map((e) => [e.fields, e.address]), [[[], address]])
    }
    expect(problems).toEqual([])
  }, 120_000)

  it("organizations, quotas and premium features: the operator's creates and changes, and a tenant's own patch", async () => {
    const address = nextAddress()
    const org = await write(op.call, address, "POST", "/v1/organizations", { name: unique("org"), website: "https://a.example" })
    expect(org.status, org.text).toBe(201)
    const made = await entriesOf("organizations", org.body.id)
    expect(made).toEqual([expect.objectContaining({
      organization_id: org.body.id,
      action: "create",
      fields: ["name", "website"],
      address,
      principal: { kind: "api_key", id: ADMIN.key }
    })])
    // Its quotas and premium features are made with it, by the same principal.
    const quota = await op.quotaOf(org.body.id)
    const features = await op.featuresOf(org.body.id)
    for (const [resource, id] of [["quotas", quota.id], ["premium-features", features.id]]) {
      const [entry, ...rest] = await entriesOf(resource, id)
      expect(rest).toEqual([])
      expect(entry).toMatchObject({ organization_id: org.body.id, action: "create", address })
      expect(entry.fields).toContain("organization_id")
    }
    const q = await write(op.call, nextAddress(), "PATCH", `/v1/quotas/${quota.id}`, { secrets: quota.secrets + 1 })
    expect(q.status, q.text).toBe(200)
    expect((await entriesOf("quotas", quota.id)).find((e) => e.action === "patch")?.fields).toEqual(["secrets"])
    const f = await write(op.call, nextAddress(), "PATCH", `/v1/premium-features/${features.id}`, { webhooks: !features.webhooks })
    expect(f.status, f.text).toBe(200)
    expect((await entriesOf("premium-features", features.id)).find((e) => e.action === "patch")?.fields).toEqual(["webhooks"])
    // A patch that sets a field to the value it has changes nothing, and names nothing.
    const t = await tenant()
    const same = await write(t.call, nextAddress(), "PATCH", `/v1/organizations/${t.org.id}`, { name: t.org.name, website: "https://b.example" })
    expect(same.status, same.text).toBe(200)
    const patched = (await entriesOf("organizations", t.org.id, t.call)).filter((e) => e.action === "patch")
    expect(patched.map((e) => [e.fields, e.principal])).toEqual([[["website"], { kind: "api_key", id: t.key.id }]])
  })
})

describe("principals and addresses", () => {
  it("a key is named by its id; without a proxy header, the socket's address", async () => {
    const t = await tenant()
    const made = await t.call("POST", "/v1/properties", { body: { organization_id: t.org.id, name: "p" } })
    expect(made.status, made.text).toBe(201)
    const [entry] = await entriesOf("properties", made.body.id, t.call)
    expect(["127.0.0.1", "::1", "::ffff:127.0.0.1"]).toContain(entry.address)
    expect(entry.principal).toEqual({ kind: "api_key", id: t.key.id })
  })

  it("a member's change names its person, a platform integration's names the integration", async () => {
    const t = await tenant()
    const member = await memberOf(server.url, t)
    const members = await t.call("GET", `/v1/members?organization_id=${t.org.id}`)
    const personId = members.body.data[0].user_id as string
    const byMember = await write(member, nextAddress(), "POST", "/v1/properties", { organization_id: t.org.id, name: "by member" })
    expect(byMember.status, byMember.text).toBe(201)
    expect((await entriesOf("properties", byMember.body.id, member))[0].principal).toEqual({ kind: "member", id: personId })
    // The invitation the member accepted: made by the tenant's key, with no e-mail address in it.
    const invited = (await entriesOf("members", members.body.data[0].id, t.call))
    expect(invited.map((e) => [e.action, e.principal.kind])).toEqual([["create", "api_key"]])

    const integration = await op.call("POST", "/v1/platform-integrations", { body: { organization_id: t.org.id, name: "shop" } })
    expect(integration.status, integration.text).toBe(201)
    const session = await call(server.url, "POST", "/v1/platform-integrations/sessions", { headers: { "x-platform-authorization": integration.body.token } })
    expect(session.status, session.text).toBe(201)
    const shop = as(server.url, session.body.access_token)
    const byShop = await write(shop, nextAddress(), "POST", "/v1/properties", { organization_id: t.org.id, name: "by shop" })
    expect(byShop.status, byShop.text).toBe(201)
    expect((await entriesOf("properties", byShop.body.id, t.call))[0].principal).toEqual({ kind: "integration", id: integration.body.id })
  })

  it("a member's own organization: the organization, its quotas, features and membership, all by the member", async () => {
    const t = await tenant()
    const member = await memberOf(server.url, t)
    const made = await write(member, nextAddress(), "POST", "/v1/organizations", { name: unique("own") })
    expect(made.status, made.text).toBe(201)
    const mine = await member("GET", `/v1/audit-logs?organization_id=${made.body.id}&$limit=50`)
    expect(mine.status, mine.text).toBe(200)
    expect(mine.body.data.map((e: any) => `${e.action} ${e.resource}`).sort()).toEqual([
      "create members",
      "create organizations",
      "create premium-features",
      "create quotas"
    ])
    expect(new Set(mine.body.data.map((e: any) => e.principal.kind))).toEqual(new Set(["member"]))
  })

  it("the first start's records are the host's", async () => {
    const r = await op.call("GET", "/v1/audit-logs?principal_kind=host&principal_id=bootstrap&$limit=50")
    expect(r.status, r.text).toBe(200)
    expect(r.body.data.map((e: any) => e.resource).sort()).toEqual(["keys", "organizations", "premium-features", "quotas"])
    expect(r.body.data.every((e: any) => e.address === null)).toBe(true)
  })
})

describe("changes a write makes beside its record", () => {
  it("a new default notice text clears the previous one's `default`: a patch of that text, by the same principal", async () => {
    const t = await tenant()
    const text = (name: string) => t.call("POST", "/v1/widgets/notices/texts", { body: { organization_id: t.org.id, name, platforms: ["web"], default: true } })
    const first = await text("first")
    expect(first.status, first.text).toBe(201)
    const address = nextAddress()
    const second = await write(t.call, address, "POST", "/v1/widgets/notices/texts", { organization_id: t.org.id, name: "second", platforms: ["web"], default: true })
    expect(second.status, second.text).toBe(201)
    const cleared = (await entriesOf("widgets/notices/texts", first.body.id, t.call)).filter((e) => e.action === "patch")
    expect(cleared).toEqual([expect.objectContaining({ fields: ["default"], address, principal: { kind: "api_key", id: t.key.id } })])
  })
})

describe("rotations and failed writes", () => {
  it("each rotation is a `rotate` entry naming the credential's field", async () => {
    const t = await tenant(ALL_FEATURES)
    const key = await t.call("POST", "/v1/keys", { body: { organization_id: t.org.id, name: unique("k") } })
    const hook = await t.call("POST", "/v1/webhooks", { body: { organization_id: t.org.id, url: "http://127.0.0.1:9/r" } })
    expect([key.status, hook.status]).toEqual([201, 201])
    const rotations: ReadonlyArray<[string, string, string, string]> = [
      ["keys", key.body.id, `/v1/keys/${key.body.id}/rotate-secret`, "secret"],
      ["organizations", t.org.id, `/v1/organizations/${t.org.id}/rotate-public-key`, "public_api_key"],
      ["webhooks", hook.body.id, `/v1/webhooks/${hook.body.id}/rotate-secret`, "signing_secret"]
    ]
    for (const [resource, id, url, field] of rotations) {
      const address = nextAddress()
      const r = await write(t.call, address, "POST", url, {})
      expect(r.status, r.text).toBe(200)
      const rotated = (await entriesOf(resource, id, t.call)).filter((e) => e.action === "rotate")
      expect(rotated).toEqual([expect.objectContaining({ fields: [field], address, organization_id: t.org.id, principal: { kind: "api_key", id: t.key.id } })])
    }
  })

  it("a refused write leaves no entry: an invalid body, a stale version, a quota reached, a refused rotation", async () => {
    const t = await tenant(ALL_FEATURES)
    const before = (await t.call("GET", "/v1/audit-logs?$limit=0")).body.total as number
    expect((await t.call("POST", "/v1/properties", { body: { organization_id: t.org.id, name: 42 } })).status).toBe(400)
    const p = await t.call("POST", "/v1/properties", { body: { organization_id: t.org.id, name: "p" } })
    expect(p.status, p.text).toBe(201)
    expect409(await t.call("PATCH", `/v1/properties/${p.body.id}`, { body: { name: "q", version: p.body.version + 5 } }))
    const quota = await op.quotaOf(t.org.id)
    const zero = await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { secrets: 0 } })
    expect(zero.status, zero.text).toBe(200)
    expect403(await t.call("POST", "/v1/secrets", { body: { organization_id: t.org.id, name: "s" } }))
    expect((await t.call("POST", `/v1/keys/${t.key.id}/rotate-secret`, { body: { previous_secret_expires_at: "2099-01-01T00:00:00.000Z" } })).status).toBe(400)
    const after = await t.call("GET", "/v1/audit-logs?$limit=50")
    // The property's create and the operator's quota patch, nothing else.
    expect(after.body.total).toBe(before + 2)
    expect(after.body.data.map((e: any) => `${e.action} ${e.resource}`)).toEqual(expect.arrayContaining(["create properties", "patch quotas"]))
  })

  it("consent users and events leave no entry", async () => {
    const t = await tenant(ALL_FEATURES)
    const before = (await t.call("GET", "/v1/audit-logs?$limit=0")).body.total as number
    const user = await t.call("POST", "/v1/consents/users", { body: { organization_id: t.org.id, organization_user_id: unique("u") } })
    expect(user.status, user.text).toBe(201)
    const event = await t.call("POST", "/v1/consents/events", {
      body: { organization_id: t.org.id, user: { id: user.body.id }, consents: { purposes: [{ id: "1", enabled: true }] } }
    })
    expect(event.status, event.text).toBe(201)
    expect((await t.call("PATCH", `/v1/consents/users/${user.body.id}`, { body: { country: "DE" } })).status).toBe(200)
    expect((await t.call("DELETE", `/v1/consents/users/${user.body.id}`)).status).toBe(200)
    expect((await t.call("GET", "/v1/audit-logs?$limit=0")).body.total).toBe(before)
  })
})

describe("what an entry never holds", () => {
  it("no secret, credential or e-mail address is in the trail", async () => {
    const t = await tenant(ALL_FEATURES)
    const shown: Array<string> = [t.secret]
    const email = `${unique("private")}@example.com`
    const clientSecret = `cs-${unique("secret")}-value`
    const hook = await t.call("POST", "/v1/webhooks", {
      body: {
        organization_id: t.org.id,
        url: "http://127.0.0.1:9/s",
        auth: { token_url: "http://127.0.0.1:9/token", client_id: "c", client_secret: clientSecret }
      }
    })
    expect(hook.status, hook.text).toBe(201)
    shown.push(clientSecret, hook.body.signing_secret)
    const patched = await t.call("PATCH", `/v1/webhooks/${hook.body.id}`, {
      body: { auth: { token_url: "http://127.0.0.1:9/token", client_id: "c", client_secret: `${clientSecret}-2` } }
    })
    expect(patched.status, patched.text).toBe(200)
    shown.push(`${clientSecret}-2`)
    const key = await t.call("POST", "/v1/keys", { body: { organization_id: t.org.id, name: unique("k") } })
    const secret = await t.call("POST", "/v1/secrets", { body: { organization_id: t.org.id, name: unique("s") } })
    const member = await t.call("POST", "/v1/members", { body: { organization_id: t.org.id, name: "Grace", email } })
    expect([key.status, secret.status, member.status]).toEqual([201, 201, 201])
    shown.push(key.body.secret, secret.body.secret, member.body.invitation.token)
    const rotatedKey = await t.call("POST", `/v1/keys/${key.body.id}/rotate-secret`, { body: {} })
    const rotatedHook = await t.call("POST", `/v1/webhooks/${hook.body.id}/rotate-secret`, { body: {} })
    const rotatedOrg = await t.call("POST", `/v1/organizations/${t.org.id}/rotate-public-key`, { body: {} })
    expect([rotatedKey.status, rotatedHook.status, rotatedOrg.status]).toEqual([200, 200, 200])
    shown.push(rotatedKey.body.secret, rotatedHook.body.signing_secret, rotatedOrg.body.public_api_key, t.org.public_api_key)
    const entries = await t.call("GET", "/v1/audit-logs?$limit=200")
    expect(entries.status).toBe(200)
    expect(entries.body.data.length).toBeGreaterThanOrEqual(9)
    const all = await op.call("GET", "/v1/audit-logs?$limit=1000")
    for (const body of [entries.text, all.text]) {
      for (const value of shown) {
        expect(typeof value).toBe("string")
        expect(body.includes(value), `a shown value in the trail: ${value.slice(0, 6)}…`).toBe(false)
      }
      expect(body.toLowerCase().includes(email.toLowerCase())).toBe(false)
    }
    const webhookPatch = (await entriesOf("webhooks", hook.body.id, t.call)).find((e) => e.action === "patch")
    expect(webhookPatch?.fields).toEqual(["auth"])
  })
})

describe("who reads which entries", () => {
  it("an organization reads its own; another's is a 404; the operator reads both and operator-wide ones; a member reads its organization's", async () => {
    const a = await tenant()
    const b = await tenant()
    const pa = await a.call("POST", "/v1/properties", { body: { organization_id: a.org.id, name: "a" } })
    const pb = await b.call("POST", "/v1/properties", { body: { organization_id: b.org.id, name: "b" } })
    expect([pa.status, pb.status]).toEqual([201, 201])
    const ofA = await a.call("GET", "/v1/audit-logs?$limit=200")
    expect(ofA.status).toBe(200)
    expect(ofA.body.data.length).toBeGreaterThan(0)
    expect(ofA.body.data.every((e: any) => e.organization_id === a.org.id)).toBe(true)
    const entryOfB = (await entriesOf("properties", pb.body.id, b.call))[0]
    expect((await b.call("GET", `/v1/audit-logs/${entryOfB.id}`)).body).toEqual(entryOfB)
    expect404(await a.call("GET", `/v1/audit-logs/${entryOfB.id}`))
    // Naming B's organization in a filter finds nothing of it.
    const filtered = await a.call("GET", `/v1/audit-logs?organization_id=${b.org.id}`)
    expect(filtered.status === 403 || (filtered.status === 200 && filtered.body.total === 0), filtered.text).toBe(true)
    expect((await op.call("GET", `/v1/audit-logs/${entryOfB.id}`)).status).toBe(200)
    const both = await op.call("GET", `/v1/audit-logs?organization_id[$in][]=${a.org.id}&organization_id[$in][]=${b.org.id}&$limit=200`)
    expect(new Set(both.body.data.map((e: any) => e.organization_id))).toEqual(new Set([a.org.id, b.org.id]))
    const dash = await op.call("POST", "/v1/analytics/dashboards", {
      body: { name: "d", type: "tool-a", product: "cmp", aggregation_period: "daily", category: "analytics", target_url: "https://dash.example.com/w" }
    })
    expect(dash.status, dash.text).toBe(201)
    const wide = await op.call("GET", `/v1/audit-logs?organization_id=null&resource=analytics/dashboards&resource_id=${dash.body.id}`)
    expect(wide.status, wide.text).toBe(200)
    expect(wide.body.data).toHaveLength(1)
    const [dashEntry] = wide.body.data
    expect(dashEntry.organization_id).toBeNull()
    expect404(await a.call("GET", `/v1/audit-logs/${dashEntry.id}`))
    const member = await memberOf(server.url, a)
    const seen = await member("GET", "/v1/audit-logs?$limit=200")
    expect(seen.status, seen.text).toBe(200)
    expect(seen.body.data.length).toBeGreaterThan(0)
    expect(seen.body.data.every((e: any) => e.organization_id === a.org.id)).toBe(true)
    expect404(await member("GET", `/v1/audit-logs/${entryOfB.id}`))
  })

  it("entries outlive their organization: the operator still reads them", async () => {
    const t = await tenant()
    const p = await t.call("POST", "/v1/properties", { body: { organization_id: t.org.id, name: "gone" } })
    expect(p.status, p.text).toBe(201)
    const removed = await write(op.call, nextAddress(), "DELETE", `/v1/organizations/${t.org.id}`)
    expect(removed.status, removed.text).toBe(200)
    const left = await op.call("GET", `/v1/audit-logs?organization_id=${t.org.id}&$limit=100`)
    expect(left.status, left.text).toBe(200)
    expect(left.body.data.map((e: any) => `${e.action} ${e.resource}`)).toEqual(
      expect.arrayContaining(["create organizations", "create properties", "remove organizations"])
    )
  })

  it("filters and cursor paging", async () => {
    const t = await tenant()
    for (let i = 0; i < 3; i++) {
      server.clock.advance(1000)
      expect((await t.call("POST", "/v1/properties", { body: { organization_id: t.org.id, name: `p${i}` } })).status).toBe(201)
    }
    const first = await t.call("GET", "/v1/audit-logs?resource=properties&action=create&$limit=2&$cursor=")
    expect(first.status, first.text).toBe(200)
    expect(first.body.data.map((e: any) => e.resource)).toEqual(["properties", "properties"])
    const next = await t.call("GET", `/v1/audit-logs?resource=properties&action=create&$limit=2&$cursor=${encodeURIComponent(first.body.cursor)}`)
    expect(next.status, next.text).toBe(200)
    expect(next.body.data).toHaveLength(1)
    expect(next.body.cursor).toBeNull()
    expect([...first.body.data, ...next.body.data].map((e: any) => e.created_at)).toEqual(
      [...first.body.data, ...next.body.data].map((e: any) => e.created_at).sort()
    )
    const byKey = await t.call("GET", `/v1/audit-logs?principal_kind=api_key&principal_id=${t.key.id}&$limit=0`)
    expect(byKey.body.total).toBe(3)
    expect((await t.call("GET", "/v1/audit-logs?nonsense=1")).status).toBe(400)
  })
})

describe("nobody writes the trail", () => {
  it("every write is a 405, the operator's too", async () => {
    const t = await tenant()
    const [entry] = (await t.call("GET", "/v1/audit-logs?$limit=1")).body.data
    expect(entry).toBeDefined()
    for (const by of [t.call, op.call]) {
      expect405(await by("POST", "/v1/audit-logs", { body: { organization_id: t.org.id } }))
      expect405(await by("PUT", `/v1/audit-logs/${entry.id}`, { body: {} }))
      expect405(await by("PATCH", `/v1/audit-logs/${entry.id}`, { body: {} }))
      expect405(await by("DELETE", `/v1/audit-logs/${entry.id}`))
    }
    expect((await t.call("GET", `/v1/audit-logs/${entry.id}`)).body).toEqual(entry)
  })
})
