import { beforeAll, describe, expect, it } from "vitest"
import { ADMIN, as, call, expect400, expect403, expect404, expect409, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

const { server, op, tenants: [a, b] } = useServer({}, { tenants: 2 })
const asA = a.call

const createKey = (body: Record<string, unknown>) => asA("POST", "/v1/keys", { body: { organization_id: a.org.id, ...body } })

describe("keys: create", () => {
  it("201 returns the secret once; get and find never return it nor its hash", async () => {
    const name = unique("app")
    const r = await createKey({ name, description: "mobile app" })
    expect(r.status).toBe(201)
    expect(r.body).toMatchObject({
      name,
      description: "mobile app",
      organization_id: a.org.id,
      enabled: true,
      is_internal: false,
      version: 1
    })
    expect(r.body.secret).toMatch(/^\S{20,}$/)
    expect(r.body.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    expect(r.body.updated_at).toBe(r.body.created_at)
    expect(r.body).not.toHaveProperty("secret_hash")

    const got = await asA("GET", `/v1/keys/${r.body.id}`)
    expect(got.status).toBe(200)
    expect(got.body).not.toHaveProperty("secret")
    expect(got.body).not.toHaveProperty("secret_hash")
    expect(got.text).not.toContain(r.body.secret)

    const found = await asA("GET", `/v1/keys?name=${encodeURIComponent(name)}`)
    expect(found.status).toBe(200)
    expect(found.body.data).toHaveLength(1)
    expect(found.body.data[0]).not.toHaveProperty("secret")
    expect(found.body.data[0]).not.toHaveProperty("secret_hash")

    // The secret logs in.
    const session = await call(server.url, "POST", "/v1/sessions", {
      body: { type: "api-key", key: r.body.id, secret: r.body.secret }
    })
    expect(session.status).toBe(201)
  })

  it("two keys get different ids and secrets", async () => {
    const k1 = await createKey({ name: unique("k") })
    const k2 = await createKey({ name: unique("k") })
    expect(k1.body.id).not.toBe(k2.body.id)
    expect(k1.body.secret).not.toBe(k2.body.secret)
  })

  it("a duplicate name in the same organization is 409 naming name; in another organization it is fine", async () => {
    const name = unique("dup")
    expect((await createKey({ name })).status).toBe(201)
    const again = await createKey({ name })
    expect409(again)
    expect(again.body.errors).toHaveProperty("name")
    expect(again.body.errors).not.toHaveProperty("organization_id")
    const other = await as(server.url, b.token)("POST", "/v1/keys", { body: { organization_id: b.org.id, name } })
    expect(other.status).toBe(201)
  })

  it("400 for a missing name or organization_id", async () => {
    const r = await asA("POST", "/v1/keys", { body: { organization_id: a.org.id } })
    expect400(r)
    expect(r.body.errors).toHaveProperty("name")
    const noOrg = await asA("POST", "/v1/keys", { body: { name: unique("k") } })
    expect400(noOrg)
    expect(noOrg.body.errors).toHaveProperty("organization_id")
  })

  it("400 naming an output-only field (secret, enabled) in create", async () => {
    const r = await createKey({ name: unique("k"), secret: "sk_mine" })
    expect400(r)
    expect(r.body.errors).toHaveProperty("secret")
    const hash = await createKey({ name: unique("k"), secret_hash: "x" })
    expect400(hash)
    expect(hash.body.errors).toHaveProperty("secret_hash")
  })

  it("400 naming an unknown field", async () => {
    const r = await createKey({ name: unique("k"), colour: "blue" })
    expect400(r)
    expect(r.body.errors).toHaveProperty("colour")
  })

  it("400 for a wrongly typed field", async () => {
    const r = await createKey({ name: 12 })
    expect400(r)
    expect(r.body.errors).toHaveProperty("name")
    const blank = await createKey({ name: "   " })
    expect400(blank)
  })

  it("a client creating an internal key is 403", async () => {
    const name = unique("internal")
    const r = await createKey({ name, is_internal: true })
    expect403(r)
    const found = await op.call("GET", `/v1/keys?name=${encodeURIComponent(name)}&is_internal=true`)
    expect(found.body.total).toBe(0)
  })
})

describe("keys: internal keys", () => {
  let internal: any

  beforeAll(async () => {
    internal = await op.createKey(a.org.id, { is_internal: true, name: unique("managed") })
    expect(internal.is_internal).toBe(true)
  })

  it("are left out of find unless is_internal=true is asked", async () => {
    const r = await asA("GET", "/v1/keys?$limit=1000")
    expect(r.status).toBe(200)
    expect(r.body.data.length).toBeGreaterThan(0)
    expect(r.body.data.every((k: any) => k.is_internal === false)).toBe(true)
    expect(r.body.data.map((k: any) => k.id)).not.toContain(internal.id)

    const opAll = await op.call("GET", `/v1/keys?organization_id=${a.org.id}&$limit=1000`)
    expect(opAll.body.data.map((k: any) => k.id)).not.toContain(internal.id)

    const opInternal = await op.call("GET", `/v1/keys?organization_id=${a.org.id}&is_internal=true`)
    expect(opInternal.status).toBe(200)
    expect(opInternal.body.data.map((k: any) => k.id)).toEqual([internal.id])

    const admins = await op.call("GET", "/v1/keys?is_internal=true")
    expect(admins.body.data.map((k: any) => k.id)).toContain(ADMIN.key)
  })

  it("only the operator may ask for them: a client asking is 403", async () => {
    expect403(await asA("GET", "/v1/keys?is_internal=true"))
    expect403(await asA("GET", "/v1/keys?is_internal[$ne]=false"))
    expect403(await asA("GET", "/v1/keys?is_internal[$in][]=true&is_internal[$in][]=false"))
    expect403(await asA("GET", "/v1/keys?$or[0][is_internal]=true&$or[1][name]=x"))
    // Asking for the public ones only is allowed.
    const pub = await asA("GET", "/v1/keys?is_internal=false")
    expect(pub.status).toBe(200)
    expect(pub.body.data.map((k: any) => k.id)).not.toContain(internal.id)
  })

  it("a client cannot read, change or remove an internal key of its own organization (404)", async () => {
    expect404(await asA("GET", `/v1/keys/${internal.id}`))
    expect404(await asA("PATCH", `/v1/keys/${internal.id}`, { body: { description: "mine" } }))
    expect404(await asA("PUT", `/v1/keys/${internal.id}`, { body: { name: "x", enabled: false } }))
    expect404(await asA("DELETE", `/v1/keys/${internal.id}`))
    const still = await op.call("GET", `/v1/keys/${internal.id}`)
    expect(still.status).toBe(200)
    expect(still.body.version).toBe(1)
  })

  it("an internal key of a customer organization is not an operator key", async () => {
    const t = await call(server.url, "POST", "/v1/sessions", {
      body: { type: "api-key", key: internal.id, secret: internal.secret }
    })
    expect(t.status).toBe(201)
    const r = await as(server.url, t.body.access_token)("GET", `/v1/organizations/${b.org.id}`)
    expect404(r)
    expect403(await as(server.url, t.body.access_token)("POST", "/v1/organizations", { body: { name: unique("o") } }))
  })
})

describe("keys: update, patch, versions", () => {
  it("PATCH changes only the given fields and increments version", async () => {
    const k = (await createKey({ name: unique("p"), description: "first" })).body
    server.clock.advance(1000)
    const r = await asA("PATCH", `/v1/keys/${k.id}`, { body: { description: "second" } })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ id: k.id, name: k.name, description: "second", enabled: true, version: 2 })
    expect(r.body.created_at).toBe(k.created_at)
    expect(Date.parse(r.body.updated_at)).toBe(Date.parse(k.updated_at) + 1000)
    expect(r.body).not.toHaveProperty("secret")
    const r3 = await asA("PATCH", `/v1/keys/${k.id}`, { body: { enabled: false } })
    expect(r3.body).toMatchObject({ description: "second", enabled: false, version: 3 })
    const got = await asA("GET", `/v1/keys/${k.id}`)
    expect(got.body).toMatchObject({ description: "second", enabled: false, version: 3 })
  })

  it("PUT replaces every updatable field (absent optional ones are cleared)", async () => {
    const k = (await createKey({ name: unique("u"), description: "to be cleared" })).body
    const newName = unique("u2")
    const r = await asA("PUT", `/v1/keys/${k.id}`, { body: { name: newName, enabled: false } })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ id: k.id, name: newName, enabled: false, version: 2, organization_id: a.org.id })
    expect(r.body.description ?? null).toBeNull()
    expect(r.body.created_at).toBe(k.created_at)
    const got = await asA("GET", `/v1/keys/${k.id}`)
    expect(got.body.description ?? null).toBeNull()
    expect(got.body.name).toBe(newName)
  })

  it("PUT without a required field is 400 and changes nothing", async () => {
    const k = (await createKey({ name: unique("u"), description: "keep" })).body
    const r = await asA("PUT", `/v1/keys/${k.id}`, { body: { description: "only" } })
    expect400(r)
    expect(r.body.errors).toHaveProperty("name")
    const got = await asA("GET", `/v1/keys/${k.id}`)
    expect(got.body).toMatchObject({ description: "keep", version: 1 })
  })

  it("the current version is accepted; a stale version is 409 and changes nothing", async () => {
    const k = (await createKey({ name: unique("v"), description: "v1" })).body
    const ok = await asA("PATCH", `/v1/keys/${k.id}`, { body: { description: "v2", version: 1 } })
    expect(ok.status).toBe(200)
    expect(ok.body.version).toBe(2)

    const stale = await asA("PATCH", `/v1/keys/${k.id}`, { body: { description: "lost", version: 1 } })
    expect409(stale)
    expect(stale.body.errors).toHaveProperty("version")
    const stalePut = await asA("PUT", `/v1/keys/${k.id}`, { body: { name: "lost", enabled: false, version: 1 } })
    expect409(stalePut)

    const got = await asA("GET", `/v1/keys/${k.id}`)
    expect(got.body).toMatchObject({ description: "v2", version: 2, name: k.name, enabled: true })

    const future = await asA("PATCH", `/v1/keys/${k.id}`, { body: { description: "lost", version: 7 } })
    expect409(future)
    const bad = await asA("PATCH", `/v1/keys/${k.id}`, { body: { description: "lost", version: "2" } })
    expect400(bad)
    expect(bad.body.errors).toHaveProperty("version")
    expect((await asA("GET", `/v1/keys/${k.id}`)).body).toMatchObject({ description: "v2", version: 2 })
  })

  it("id, created_at and updated_at in a patch body are ignored", async () => {
    const k = (await createKey({ name: unique("i") })).body
    const r = await asA("PATCH", `/v1/keys/${k.id}`, {
      body: {
        id: "another-id",
        created_at: "2000-01-01T00:00:00.000Z",
        updated_at: "2000-01-01T00:00:00.000Z",
        description: "d"
      }
    })
    expect(r.status).toBe(200)
    expect(r.body.id).toBe(k.id)
    expect(r.body.created_at).toBe(k.created_at)
    expect(r.body.updated_at).not.toBe("2000-01-01T00:00:00.000Z")
    expect(r.body.description).toBe("d")
    expect404(await asA("GET", "/v1/keys/another-id"))
  })

  it("an output-only field in a patch (is_internal, organization_id, secret) is 400 naming it", async () => {
    const k = (await createKey({ name: unique("o") })).body
    for (const [field, value] of [["is_internal", true], ["is_internal", false], ["secret", "x"], [
      "organization_id",
      b.org.id
    ]] as const) {
      const r = await asA("PATCH", `/v1/keys/${k.id}`, { body: { [field]: value } })
      expect400(r)
      expect(r.body.errors).toHaveProperty(field)
    }
    const put = await asA("PUT", `/v1/keys/${k.id}`, { body: { name: k.name, enabled: true, is_internal: true } })
    expect400(put)
    expect(put.body.errors).toHaveProperty("is_internal")
    expect((await asA("GET", `/v1/keys/${k.id}`)).body).toMatchObject({ version: 1, organization_id: a.org.id })
  })

  it("an unknown field in a patch is 400 naming it", async () => {
    const k = (await createKey({ name: unique("o") })).body
    const r = await asA("PATCH", `/v1/keys/${k.id}`, { body: { nickname: "x" } })
    expect400(r)
    expect(r.body.errors).toHaveProperty("nickname")
  })

  it("renaming onto an existing name is 409", async () => {
    const k1 = (await createKey({ name: unique("r") })).body
    const k2 = (await createKey({ name: unique("r") })).body
    const r = await asA("PATCH", `/v1/keys/${k2.id}`, { body: { name: k1.name } })
    expect409(r)
    expect(r.body.errors).toHaveProperty("name")
    expect((await asA("GET", `/v1/keys/${k2.id}`)).body).toMatchObject({ name: k2.name, version: 1 })
  })

  it("404 for unknown ids on get, patch, put and delete", async () => {
    expect404(await asA("GET", "/v1/keys/nope"))
    expect404(await asA("PATCH", "/v1/keys/nope", { body: { description: "x" } }))
    expect404(await asA("PUT", "/v1/keys/nope", { body: { name: "x", enabled: true } }))
    expect404(await asA("DELETE", "/v1/keys/nope"))
  })
})

describe("keys: remove", () => {
  it("200 returns the removed object, then get is 404 and the key cannot log in", async () => {
    const k = (await createKey({ name: unique("gone"), description: "bye" })).body
    const r = await asA("DELETE", `/v1/keys/${k.id}`)
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ id: k.id, name: k.name, description: "bye", organization_id: a.org.id })
    expect(r.body).not.toHaveProperty("secret")
    expect(r.body).not.toHaveProperty("secret_hash")
    expect404(await asA("GET", `/v1/keys/${k.id}`))
    expect404(await asA("DELETE", `/v1/keys/${k.id}`))
    const login = await call(server.url, "POST", "/v1/sessions", {
      body: { type: "api-key", key: k.id, secret: k.secret }
    })
    expect400(login)
  })
})
