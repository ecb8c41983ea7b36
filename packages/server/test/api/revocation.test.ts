import type { RunningServer } from "@cmp/http-express"
import { describe, expect, it } from "vitest"
import { as, call, client, expect401, expect403, memberOf, operatorOf, start, storeKind, unique } from "./helpers.js"
import { useServer } from "./fixture.js"
import { refusedWithin, useTwoPgServers } from "./two-pg-servers.js"

/**
 * Deleting a key or a platform integration ends the sessions it opened, on every server of the
 * database; disabling one only stops new sessions. A person's self-registered organizations are
 * counted against `ORGANIZATIONS_PER_PERSON` for good.
 */

const { server, op } = useServer()

const integrationSession = async (base: string, token: string) => {
  const r = await call(base, "POST", "/v1/platform-integrations/sessions", { headers: { "x-platform-authorization": token } })
  expect(r.status, r.text).toBe(201)
  return r.body.access_token as string
}

/** Every way a token was still useful: a read, a new key, a new internal key, a new organization. */
const expectRefused = async (base: string, token: string, organizationId: string) => {
  const caller = as(base, token)
  expect401(await caller("GET", "/v1/keys"))
  expect401(await caller("GET", `/v1/organizations/${organizationId}`))
  expect401(await caller("POST", "/v1/keys", { body: { organization_id: organizationId, name: unique("key") } }))
  expect401(await caller("POST", "/v1/keys", { body: { organization_id: organizationId, name: unique("key"), is_internal: true } }))
  expect401(await caller("POST", "/v1/organizations", { body: { name: unique("org") } }))
}

describe("deleting a credential ends its sessions at once", () => {
  it("a deleted client key's token is 401 for reads and writes", async () => {
    const t = await op.tenant()
    const asT = as(server.url, t.token)
    expect((await asT("GET", `/v1/keys/${t.key.id}`)).status).toBe(200)
    const made = await asT("POST", "/v1/keys", { body: { organization_id: t.org.id, name: unique("key") } })
    expect(made.status, made.text).toBe(201)
    expect((await op.call("DELETE", `/v1/keys/${t.key.id}`)).status).toBe(200)
    await expectRefused(server.url, t.token, t.org.id)
    // The key made before the deletion is a credential of its own and still works.
    expect((await as(server.url, await client(server.url).login(made.body.id, made.body.secret))("GET", "/v1/keys")).status).toBe(200)
  })

  it("a deleted internal operator key's token can no longer create organizations or keys", async () => {
    const key = await op.createKey("operator", { is_internal: true })
    const token = await client(server.url).login(key.id, key.secret)
    const asK = as(server.url, token)
    expect((await asK("POST", "/v1/organizations", { body: { name: unique("org") } })).status).toBe(201)
    expect((await op.call("DELETE", `/v1/keys/${key.id}`)).status).toBe(200)
    await expectRefused(server.url, token, "operator")
  })

  it("a deleted platform integration's session token is 401 for reads and writes", async () => {
    const t = await op.tenant()
    const registered = await op.call("POST", "/v1/platform-integrations", { body: { name: "Shop plugin", organization_id: t.org.id } })
    expect(registered.status, registered.text).toBe(201)
    const token = await integrationSession(server.url, registered.body.token)
    const asI = as(server.url, token)
    expect((await asI("GET", `/v1/organizations/${t.org.id}`)).status).toBe(200)
    expect((await asI("POST", "/v1/keys", { body: { organization_id: t.org.id, name: unique("key") } })).status).toBe(201)
    expect((await op.call("DELETE", `/v1/platform-integrations/${registered.body.id}`)).status).toBe(200)
    await expectRefused(server.url, token, t.org.id)
  })

  it("removing an organization ends the sessions of its keys and integrations", async () => {
    const t = await op.tenant()
    const registered = await op.call("POST", "/v1/platform-integrations", { body: { name: "Shop plugin", organization_id: t.org.id } })
    const integrationToken = await integrationSession(server.url, registered.body.token)
    expect((await as(server.url, t.token)("GET", "/v1/keys")).status).toBe(200)
    expect((await as(server.url, integrationToken)("GET", "/v1/keys")).status).toBe(200)
    expect((await op.call("DELETE", `/v1/organizations/${t.org.id}`)).status).toBe(200)
    expect401(await as(server.url, t.token)("GET", "/v1/keys"))
    expect401(await as(server.url, integrationToken)("GET", "/v1/keys"))
  })

  it("a disabled key's existing token keeps working until it expires; the key opens no new session", async () => {
    const t = await op.tenant()
    const asT = as(server.url, t.token)
    expect((await op.call("PATCH", `/v1/keys/${t.key.id}`, { body: { enabled: false } })).status).toBe(200)
    expect((await asT("GET", "/v1/keys")).status).toBe(200)
    expect((await asT("POST", "/v1/keys", { body: { organization_id: t.org.id, name: unique("key") } })).status).toBe(201)
    const again = await client(server.url).call("POST", "/v1/sessions", { body: { type: "api-key", key: t.key.id, secret: t.secret } })
    expect(again.status).toBe(400)
    server.clock.advance(3599 * 1000)
    expect((await asT("GET", "/v1/keys")).status).toBe(200)
    server.clock.advance(2000)
    expect401(await asT("GET", "/v1/keys"))
  })
})

describe("ORGANIZATIONS_PER_PERSON", () => {
  it("a member creates up to the limit (10 by default), then 403; losing every membership does not reset it", async () => {
    // A fresh server: the limit belongs to the person, and the clock of the suite above moved.
    const own = await start()
    try {
      const o = await operatorOf(own.url)
      const home = await o.tenant()
      const member = await memberOf(own.url, home)
      const created: Array<string> = []
      for (let i = 0; i < 10; i++) {
        const r = await member("POST", "/v1/organizations", { body: { name: unique("mine") } })
        expect(r.status, r.text).toBe(201)
        expect(r.body.self_register).toBe(true)
        created.push(r.body.id)
      }
      const over = await member("POST", "/v1/organizations", { body: { name: unique("mine") } })
      expect403(over)
      expect(over.body.errors).toEqual({ organizations_per_person: "limit of 10 reached" })

      // Every membership removed: the person belongs nowhere, and still may not create more.
      for (const orgId of [home.org.id, ...created]) {
        const members = await o.call("GET", `/v1/members?organization_id=${orgId}`)
        expect(members.status, members.text).toBe(200)
        for (const m of members.body.data) expect((await o.call("DELETE", `/v1/members/${m.id}`)).status).toBe(200)
      }
      expect((await member("GET", "/v1/organizations")).body.data).toEqual([])
      expect403(await member("POST", "/v1/organizations", { body: { name: unique("mine") } }))

      // The operator is not limited.
      for (let i = 0; i < 11; i++) await o.createOrg()
    } finally {
      await own.close()
    }
  }, 30_000)

  it("the limit comes from the settings", async () => {
    const own = await start({ settings: { organizationsPerPerson: 1 } })
    try {
      const o = await operatorOf(own.url)
      const member = await memberOf(own.url, await o.tenant())
      expect((await member("POST", "/v1/organizations", { body: { name: unique("mine") } })).status).toBe(201)
      const over = await member("POST", "/v1/organizations", { body: { name: unique("mine") } })
      expect403(over)
      expect(over.body.errors).toEqual({ organizations_per_person: "limit of 1 reached" })
    } finally {
      await own.close()
    }
  }, 30_000)
})

describe.runIf(storeKind === "postgres")("two servers on one PostgreSQL database", () => {
  const servers = useTwoPgServers()

  it("a key or an integration deleted through one server is refused by the other within a second", async () => {
    const [a, b] = servers as [RunningServer, RunningServer]
    const opA = await operatorOf(a.url)
    const t = await opA.tenant()
    const registered = await opA.call("POST", "/v1/platform-integrations", { body: { name: "Shop plugin", organization_id: t.org.id } })
    expect(registered.status, registered.text).toBe(201)
    const integrationToken = await integrationSession(b.url, registered.body.token)
    // Both tokens are in use on B (its look-ups are warm) when A deletes their credentials.
    expect((await as(b.url, t.token)("GET", "/v1/keys")).status).toBe(200)
    expect((await as(b.url, integrationToken)("GET", "/v1/keys")).status).toBe(200)

    expect((await opA.call("DELETE", `/v1/keys/${t.key.id}`)).status).toBe(200)
    expect401(await as(a.url, t.token)("GET", "/v1/keys"))
    await refusedWithin(1500, async () => (await as(b.url, t.token)("GET", "/v1/keys")).status === 401)
    expect401(await as(b.url, t.token)("POST", "/v1/keys", { body: { organization_id: t.org.id, name: unique("key") } }))

    expect((await opA.call("DELETE", `/v1/platform-integrations/${registered.body.id}`)).status).toBe(200)
    expect401(await as(a.url, integrationToken)("GET", "/v1/keys"))
    await refusedWithin(1500, async () => (await as(b.url, integrationToken)("GET", "/v1/keys")).status === 401)
    expect401(await as(b.url, integrationToken)("POST", "/v1/keys", { body: { organization_id: t.org.id, name: unique("key") } }))
  }, 30_000)
})
