import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { checkCertificatePem } from "@cmp/platform-node"
import { as, expect400, expect403 } from "./helpers.js"
import { useServer } from "./fixture.js"

/** Privacy centers (spec section 8.5) and SSO connections. */

const cert = fs.readFileSync(path.join(import.meta.dirname, "fixtures", "localhost-cert.pem"), "utf8")
const key = fs.readFileSync(path.join(import.meta.dirname, "fixtures", "localhost-key.pem"), "utf8")

const { server, op, tenants: [a] } = useServer({}, { tenants: 1 })
const asA = a.call

const center = (extra: Record<string, unknown> = {}) =>
  asA("POST", "/v1/privacy-centers", { body: { organization_id: a.org.id, name: "Privacy", ...extra } })

describe("privacy centers", () => {
  it("answers every method; auth_required defaults to false", async () => {
    const r = await center({
      website: "https://example.com",
      custom_domains: ["privacy.example.com"],
      contact: { email: "dpo@example.com", schedule: "+33 1 23 45 67 89", address: "1 rue" },
      customization: { logo: "https://cdn.example.com/logo.png", colors: { primary: "#123456" } },
      legal_name: "Example SA",
      display_cookies: "list",
      privacy_policy: "# Policy",
      content: { title: "Hello" },
      languages: ["en", "fr-FR"]
    })
    expect(r.status, r.text).toBe(201)
    expect(r.body).toMatchObject({ auth_required: false, organization_id: a.org.id, languages: ["en", "fr-FR"], version: 1 })
    expect((await asA("GET", `/v1/privacy-centers/${r.body.id}`)).body).toEqual(r.body)
    expect((await asA("GET", "/v1/privacy-centers")).body.total).toBeGreaterThan(0)
    const put = await asA("PUT", `/v1/privacy-centers/${r.body.id}`, { body: { name: "P2", auth_required: true } })
    expect(put.body).toMatchObject({ name: "P2", auth_required: true })
    expect(put.body.custom_domains ?? null).toBeNull()
    expect((await asA("PATCH", `/v1/privacy-centers/${r.body.id}`, { body: { languages: null } })).status).toBe(200)
    expect((await asA("DELETE", `/v1/privacy-centers/${r.body.id}`)).status).toBe(200)
  })

  it("content is checked where it uses the page's keys, and stored as sent", async () => {
    const content = {
      en: { title: "Your privacy", intro: "Choose below.", purposes: { ads: "Advertising" } },
      "fr-FR": { title: "Votre vie privée" },
      purposes: [{ id: "ads", name: "Advertising", description: "Ads on our sites" }, { id: "analytics", name: "Analytics" }],
      regulation: "ccpa",
      brand: { anything: ["the organization's own", 1] }
    }
    const r = await center({ content })
    expect(r.status, r.text).toBe(201)
    expect(r.body.content).toEqual(content)
    for (const [bad, field] of [
      [{ en: { title: 42 } }, "content.en.title"],
      [{ en: "Hello" }, "content.en"],
      [{ purposes: [{ id: "ads" }] }, "content.purposes.0.name"],
      [{ purposes: [{ id: "ads", name: "A" }, { id: "ads", name: "B" }] }, "content.purposes"],
      [{ regulation: 7 }, "content.regulation"],
      [{ notice_text_content_id: ["x"] }, "content.notice_text_content_id"]
    ] as const) {
      const refused = await center({ content: bad })
      expect400(refused)
      expect(Object.keys(refused.body.errors), JSON.stringify(bad)).toContain(field)
    }
    expect400(await asA("PATCH", `/v1/privacy-centers/${r.body.id}`, { body: { content: { en: { intro: ["x"] } } } }))
    const patched = await asA("PATCH", `/v1/privacy-centers/${r.body.id}`, { body: { name: "Renamed" } })
    expect(patched.status, patched.text).toBe(200)
    expect(patched.body.content).toEqual(content)
  })

  it("the logo must be an https URL", async () => {
    const r = await center({ customization: { logo: "http://cdn.example.com/logo.png" } })
    expect400(r)
    expect(r.body.errors["customization.logo"]).toMatch(/https/)
    expect400(await center({ customization: { logo: "javascript:alert(1)" } }))
    const ok = await center({ customization: { logo: "https://cdn.example.com/l.png" } })
    expect400(await asA("PATCH", `/v1/privacy-centers/${ok.body.id}`, { body: { customization: { logo: "http://x.example" } } }))
  })

  it("custom_domains carry no scheme and no slash", async () => {
    for (const d of ["https://privacy.example.com", "privacy.example.com/", "privacy.example.com/path", "not a host"]) {
      const r = await center({ custom_domains: [d] })
      expect400(r)
      expect(r.body.errors["custom_domains.0"], d).toBeDefined()
    }
  })

  it("custom_domains are host names only: no IP address in any form, no port; kept lower-cased", async () => {
    for (const d of ["10.0.0.1", "127.0.0.1", "169.254.169.254", "127.1", "0x7f.1", "[::1]", "::1", "::ffff:127.0.0.1",
      "privacy.example.com:8443", "privacy.example.com.", "privacy.123"]) {
      const r = await center({ custom_domains: ["ok.example.com", d] })
      expect400(r)
      expect(r.body.errors["custom_domains.1"], d).toBeDefined()
    }
    const r = await center({ custom_domains: ["Privacy.Example.COM", "privacy.example.com", "1password.example.com"] })
    expect(r.status, r.text).toBe(201)
    expect(r.body.custom_domains).toEqual(["privacy.example.com", "1password.example.com"])
    const patched = await asA("PATCH", `/v1/privacy-centers/${r.body.id}`, { body: { custom_domains: ["HELP.Example.org"] } })
    expect(patched.body.custom_domains).toEqual(["help.example.org"])
    expect400(await asA("PATCH", `/v1/privacy-centers/${r.body.id}`, { body: { custom_domains: ["192.168.1.1"] } }))
  })

  it("languages are two-letter or language-country codes; display_cookies and auth_required are checked", async () => {
    for (const languages of [["english"], ["EN"], ["en-us"], ["en_US"], ["e"]]) expect400(await center({ languages }))
    expect((await center({ languages: [] })).status).toBe(201)
    expect400(await center({ display_cookies: "grid" }))
    for (const v of ["list", "choices", "none"]) expect((await center({ display_cookies: v })).status).toBe(201)
    expect400(await center({ auth_required: "yes" }))
    expect400(await center({ name: "" }))
    expect400(await center({ contact: { email: "not-an-email" } }))
  })
})

describe("SSO connections", () => {
  const enableSso = async (organizationId: string) => {
    const flags = await op.featuresOf(organizationId)
    expect((await op.call("PATCH", `/v1/premium-features/${flags.id}`, { body: { sso: true } })).status).toBe(200)
  }
  const sso = (token: string, organizationId: string, extra: Record<string, unknown> = {}) =>
    as(server.url, token)("POST", "/v1/sso-connections", {
      body: { organization_id: organizationId, idp_certificate: cert, idp_sign_in_endpoint: "https://idp.example.com/sso", ...extra }
    })

  it("needs the premium feature sso", async () => {
    const t = await op.tenant()
    expect403(await sso(t.token, t.org.id))
    expect403(await as(server.url, t.token)("GET", "/v1/sso-connections"))
  })

  it("create (201) sets the output-only fields; find, get and patch answer; update and remove do not", async () => {
    const t = await op.tenant({ organization_group_id: "group-1" })
    await enableSso(t.org.id)
    const asT = as(server.url, t.token)
    const r = await sso(t.token, t.org.id, { idp_domain_aliases: ["example.com"] })
    expect(r.status, r.text).toBe(201)
    expect(r.body).toMatchObject({
      organization_id: t.org.id,
      organization_group_id: "group-1",
      idp_sign_saml_request: false,
      idp_domain_aliases: ["example.com"]
    })
    expect(r.body.idp_connection_id).toMatch(/^con_/)
    expect(typeof r.body.idp_connection_name).toBe("string")
    const second = await sso(t.token, t.org.id)
    expect(second.body.idp_connection_name).not.toBe(r.body.idp_connection_name)
    for (const f of ["idp_connection_id", "idp_connection_name", "organization_group_id"]) {
      expect400(await sso(t.token, t.org.id, { [f]: "x" }))
    }
    expect((await asT("GET", `/v1/sso-connections/${r.body.id}`)).body).toEqual(r.body)
    expect((await asT("GET", "/v1/sso-connections")).body.total).toBe(2)
    const patched = await asT("PATCH", `/v1/sso-connections/${r.body.id}`, {
      body: { organization_id: t.org.id, idp_sign_saml_request: true }
    })
    expect(patched.status, patched.text).toBe(200)
    expect(patched.body.idp_sign_saml_request).toBe(true)
    expect((await asT("PUT", `/v1/sso-connections/${r.body.id}`, { body: {} })).status).toBe(405)
    expect((await asT("DELETE", `/v1/sso-connections/${r.body.id}`)).status).toBe(405)
  })

  it("idp_certificate must parse as a certificate and idp_sign_in_endpoint be https; both required", async () => {
    const t = await op.tenant()
    await enableSso(t.org.id)
    const forged = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----"
    const r = await sso(t.token, t.org.id, { idp_certificate: forged })
    expect400(r)
    expect(r.body.errors.idp_certificate).toBeDefined()
    expect400(await sso(t.token, t.org.id, { idp_certificate: "hello" }))
    const http = await sso(t.token, t.org.id, { idp_sign_in_endpoint: "http://idp.example.com/sso" })
    expect400(http)
    expect(http.body.errors.idp_sign_in_endpoint).toBeDefined()
    expect400(await sso(t.token, t.org.id, { idp_sign_in_endpoint: undefined }))
    expect400(await sso(t.token, t.org.id, { idp_certificate: undefined }))
    const ok = await sso(t.token, t.org.id)
    expect400(await as(server.url, t.token)("PATCH", `/v1/sso-connections/${ok.body.id}`, {
      body: { organization_id: t.org.id, idp_certificate: forged }
    }))
  })

  it("idp_certificate is exactly one certificate; a private key in any field is a 400 that says so, never stored nor echoed", async () => {
    const t = await op.tenant()
    await enableSso(t.org.id)
    const asT = as(server.url, t.token)
    const keyMaterial = key.split("\n")[1]!
    expect(key).toMatch(/PRIVATE KEY/)
    const rsa = key.replace(/-----(BEGIN|END) PRIVATE KEY-----/g, "-----$1 RSA PRIVATE KEY-----")
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ idp_certificate: `${cert}\n${key}` }, "idp_certificate"],
      [{ idp_certificate: `${key}\n${cert}` }, "idp_certificate"],
      [{ idp_certificate: key }, "idp_certificate"],
      [{ idp_certificate: `${cert}${rsa}` }, "idp_certificate"],
      [{ idp_sign_in_endpoint: key }, "idp_sign_in_endpoint"],
      [{ idp_sign_out_endpoint: `https://idp.example.com/${key}` }, "idp_sign_out_endpoint"],
      [{ idp_domain_aliases: ["example.com", key] }, "idp_domain_aliases.1"],
      [{ idp_sign_saml_request: key }, "idp_sign_saml_request"],
      [{ notes: key }, "notes"]
    ]
    for (const [extra, field] of cases) {
      const r = await sso(t.token, t.org.id, extra)
      expect400(r)
      expect(r.body.errors[field], field).toMatch(/must not contain a private key/)
      expect(r.text).not.toContain(keyMaterial)
    }
    for (const pem of [`${cert}\n${cert}`, `${cert}\ntrailing text`, `leading text\n${cert}`, cert.replace("-----END CERTIFICATE-----", "")]) {
      const r = await sso(t.token, t.org.id, { idp_certificate: pem })
      expect400(r)
      expect(r.body.errors.idp_certificate).toMatch(/exactly one PEM certificate/)
    }
    expect((await asT("GET", "/v1/sso-connections")).body.total).toBe(0)
    const ok = await sso(t.token, t.org.id, { idp_certificate: `\n${cert}\n` })
    expect(ok.status, ok.text).toBe(201)
    const patched = await asT("PATCH", `/v1/sso-connections/${ok.body.id}`, {
      body: { organization_id: t.org.id, idp_certificate: `${cert}\n${key}` }
    })
    expect400(patched)
    expect(patched.body.errors.idp_certificate).toMatch(/must not contain a private key/)
    const after = await asT("GET", `/v1/sso-connections/${ok.body.id}`)
    expect(after.body).toEqual(ok.body)
    expect(after.text).not.toContain("PRIVATE KEY")
  })

  it("the certificate check itself takes one certificate and nothing beside it", () => {
    const now = Date.parse("2030-01-01T00:00:00Z")
    expect(checkCertificatePem(`${cert}\n${key}`, now)).toMatchObject({ _tag: "Some", value: expect.stringMatching(/private key/) })
    expect(checkCertificatePem(`${cert}\n${cert}`, now)._tag).toBe("Some")
    expect(checkCertificatePem(`${cert}junk`, now)._tag).toBe("Some")
    expect(checkCertificatePem(`  ${cert}  `, now)._tag).toBe("None")
  })

  it("an expired certificate is refused (node:crypto X509Certificate)", () => {
    expect(checkCertificatePem(cert, Date.parse("2030-01-01T00:00:00Z"))._tag).toBe("None")
    const expired = checkCertificatePem(cert, Date.parse("2127-01-01T00:00:00Z"))
    expect(expired._tag).toBe("Some")
    expect(checkCertificatePem("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----", 0)._tag).toBe("Some")
  })

  it("organization_id is required on patch and cannot move the connection", async () => {
    const t = await op.tenant()
    await enableSso(t.org.id)
    const asT = as(server.url, t.token)
    const c = await sso(t.token, t.org.id)
    const r = await asT("PATCH", `/v1/sso-connections/${c.body.id}`, { body: { idp_sign_saml_request: true } })
    expect400(r)
    expect(r.body.errors.organization_id).toBeDefined()
    const other = await op.createOrg()
    expect400(await op.call("PATCH", `/v1/sso-connections/${c.body.id}`, { body: { organization_id: other.id } }))
  })
})
