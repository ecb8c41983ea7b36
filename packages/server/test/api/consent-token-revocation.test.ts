import type { RunningServer } from "@cmp/http-express"
import { SignJWT } from "jose"
import { beforeAll, describe, expect, it } from "vitest"
import { as, client, expect400, expect401, JWT_SECRET, memberOf, operatorOf, storeKind, unique } from "./helpers.js"
import { type Caller, type TestTenant, useServer } from "./fixture.js"
import { refusedWithin, useTwoPgServers } from "./two-pg-servers.js"

/**
 * A consent token names who minted it and dies with them: a key deleted or disabled, an
 * integration removed or disabled, a member removed from the organization, the organization
 * removed, or the tokens it revoked (`consent_tokens_revoked_before`); an erased user's tokens
 * too, and they do not make the user again. Tokens that name no issuer are refused.
 */

const { server, op, tenant } = useServer({ jwtSecret: JWT_SECRET })

const FULL = { consents_api: true, store_cmp_consents: true }

const purposes = (...list: Array<[string, boolean]>) => list.map(([id, enabled]) => ({ id, enabled }))

/** A token minted by `minter` (any backend caller) for a user of `t`, and a caller bound to it. */
const tokenBy = async (minter: Caller, t: TestTenant, organizationUserId: string = unique("crm"), lifetime = 2_678_400) => {
  const r = await minter("POST", "/v1/consents/tokens", { body: { organization_id: t.org.id, organization_user_id: organizationUserId, lifetime } })
  expect(r.status, r.text).toBe(201)
  return { organizationUserId, token: r.body.id_token as string, call: as(server.url, r.body.id_token as string) }
}

type Token = Awaited<ReturnType<typeof tokenBy>>

const read = (tk: Token) => tk.call("GET", `/v1/consents/users/${encodeURIComponent(tk.organizationUserId)}?$by_organization_user_id=true`)
const write = (tk: Token, t: TestTenant) =>
  tk.call("POST", "/v1/consents/events", {
    body: { organization_id: t.org.id, user: { organization_user_id: tk.organizationUserId }, consents: { purposes: purposes(["analytics", true]) } }
  })

/** The token records and reads its user. */
const expectWorks = async (tk: Token, t: TestTenant) => {
  const w = await write(tk, t)
  expect(w.status, w.text).toBe(201)
  const r = await read(tk)
  expect(r.status, r.text).toBe(200)
}

/** The token neither reads nor records: 401 both. */
const expectRefused = async (tk: Token, t: TestTenant) => {
  expect401(await read(tk))
  expect401(await write(tk, t))
  expect401(await tk.call("GET", "/v1/consents/events"))
}

/** A second client key of `t`, and a caller with its access token. */
const keyOf = async (t: TestTenant) => {
  const key = await op.createKey(t.org.id)
  return { key, call: as(server.url, await client(server.url).login(key.id, key.secret)) }
}

describe("a consent token dies with the key that minted it", () => {
  let t: TestTenant
  beforeAll(async () => {
    t = await tenant(FULL)
  })

  it("a deleted key: its tokens are 401 for reads and writes; another key's still work", async () => {
    const doomed = await keyOf(t)
    const tk = await tokenBy(doomed.call, t)
    const other = await tokenBy(t.call, t)
    await expectWorks(tk, t)
    expect((await t.call("DELETE", `/v1/keys/${doomed.key.id}`)).status).toBe(200)
    await expectRefused(tk, t)
    await expectWorks(other, t)
  })

  it("a disabled key: its tokens are 401 (unlike its access tokens, which run until they expire)", async () => {
    const disabled = await keyOf(t)
    const tk = await tokenBy(disabled.call, t)
    await expectWorks(tk, t)
    const patched = await t.call("PATCH", `/v1/keys/${disabled.key.id}`, { body: { enabled: false } })
    expect(patched.status, patched.text).toBe(200)
    await expectRefused(tk, t)
    expect((await disabled.call("GET", "/v1/keys")).status).toBe(200)
  })

  it("a deleted operator key: the tokens it minted are 401", async () => {
    const key = await op.createKey("operator", { is_internal: true })
    const operator = as(server.url, await client(server.url).login(key.id, key.secret))
    const tk = await tokenBy(operator, t)
    await expectWorks(tk, t)
    expect((await op.call("DELETE", `/v1/keys/${key.id}`)).status).toBe(200)
    await expectRefused(tk, t)
  })
})

describe("a consent token dies with its organization, member or integration", () => {
  it("a removed organization: its tokens are 401", async () => {
    const t = await tenant(FULL)
    const tk = await tokenBy(op.call, t)
    const byClient = await tokenBy(t.call, t)
    await expectWorks(tk, t)
    expect((await op.call("DELETE", `/v1/organizations/${t.org.id}`)).status).toBe(200)
    await expectRefused(tk, t)
    await expectRefused(byClient, t)
  })

  it("a member removed from the organization: the tokens it minted there are 401; those it minted elsewhere work", async () => {
    const t = await tenant(FULL)
    const u = await tenant(FULL)
    const member = await memberOf(server.url, t, u)
    const tk = await tokenBy(member, t)
    const elsewhere = await tokenBy(member, u)
    await expectWorks(tk, t)
    const members = await t.call("GET", `/v1/members?organization_id=${t.org.id}`)
    expect(members.status, members.text).toBe(200)
    const membership = (members.body.data as Array<any>).find((m) => m.organization_id === t.org.id)
    expect((await t.call("DELETE", `/v1/members/${membership.id}`)).status).toBe(200)
    await expectRefused(tk, t)
    await expectWorks(elsewhere, u)
  })

  it("a removed or disabled platform integration: the tokens it minted are 401", async () => {
    const t = await tenant(FULL)
    for (const end of ["remove", "disable"] as const) {
      const registered = await op.call("POST", "/v1/platform-integrations", { body: { name: "Shop plugin", organization_id: t.org.id } })
      expect(registered.status, registered.text).toBe(201)
      const session = await client(server.url).call("POST", "/v1/platform-integrations/sessions", {
        headers: { "x-platform-authorization": registered.body.token }
      })
      expect(session.status, session.text).toBe(201)
      const tk = await tokenBy(as(server.url, session.body.access_token), t)
      await expectWorks(tk, t)
      const ended = end === "remove"
        ? await op.call("DELETE", `/v1/platform-integrations/${registered.body.id}`)
        : await op.call("PATCH", `/v1/platform-integrations/${registered.body.id}`, { body: { enabled: false } })
      expect(ended.status, ended.text).toBe(200)
      await expectRefused(tk, t)
    }
  })

  it("a token that names no issuer (minted before tokens named one) is 401", async () => {
    const t = await tenant(FULL)
    const tk = await tokenBy(t.call, t)
    const claims = JSON.parse(Buffer.from(tk.token.split(".")[1]!, "base64url").toString("utf8")) as Record<string, unknown>
    expect(claims.issuer).toEqual({ kind: "client", id: t.key.id })
    const { issuer: _issuer, ...legacy } = claims
    const forged = await new SignJWT(legacy).setProtectedHeader({ alg: "HS256", typ: "JWT" }).sign(new TextEncoder().encode(JWT_SECRET))
    await expectRefused({ ...tk, token: forged, call: as(server.url, forged) }, t)
    await expectWorks(tk, t)
  })
})

describe("consent_tokens_revoked_before", () => {
  it("refuses the tokens issued before it, whoever minted them; tokens minted after work", async () => {
    const t = await tenant(FULL)
    const older = await tokenBy(t.call, t)
    const byOperator = await tokenBy(op.call, t)
    await expectWorks(older, t)
    server.clock.advance(5000)
    const at = new Date(server.clock.millis).toISOString()
    const patched = await t.call("PATCH", `/v1/organizations/${t.org.id}`, { body: { consent_tokens_revoked_before: at } })
    expect(patched.status, patched.text).toBe(200)
    expect(patched.body.consent_tokens_revoked_before).toBe(at)
    await expectRefused(older, t)
    await expectRefused(byOperator, t)
    server.clock.advance(1000)
    await expectWorks(await tokenBy(t.call, t), t)
  })

  it("is null on a new organization; a date ahead of the server's clock is taken as now; a PUT that leaves it out keeps it", async () => {
    const t = await tenant(FULL)
    expect((await t.call("GET", `/v1/organizations/${t.org.id}`)).body.consent_tokens_revoked_before).toBeNull()
    const ahead = new Date(server.clock.millis + 86_400_000).toISOString()
    const patched = await op.call("PATCH", `/v1/organizations/${t.org.id}`, { body: { consent_tokens_revoked_before: ahead } })
    expect(patched.status, patched.text).toBe(200)
    const now = new Date(server.clock.millis).toISOString()
    expect(patched.body.consent_tokens_revoked_before).toBe(now)
    const put = await t.call("PUT", `/v1/organizations/${t.org.id}`, { body: { name: patched.body.name } })
    expect(put.status, put.text).toBe(200)
    expect(put.body.consent_tokens_revoked_before).toBe(now)
    expect400(await t.call("PATCH", `/v1/organizations/${t.org.id}`, { body: { consent_tokens_revoked_before: "yesterday" } }))
  })

  it("set back to null, the tokens it refused work again", async () => {
    const t = await tenant(FULL)
    const tk = await tokenBy(t.call, t)
    server.clock.advance(2000)
    await t.call("PATCH", `/v1/organizations/${t.org.id}`, { body: { consent_tokens_revoked_before: new Date(server.clock.millis).toISOString() } })
    await expectRefused(tk, t)
    const cleared = await t.call("PATCH", `/v1/organizations/${t.org.id}`, { body: { consent_tokens_revoked_before: null } })
    expect(cleared.status, cleared.text).toBe(200)
    await expectWorks(tk, t)
  })
})

describe("an erased user", () => {
  it("its tokens are 401 and do not make the user again; a token minted after the erasure works", async () => {
    const t = await tenant(FULL)
    const tk = await tokenBy(t.call, t)
    const other = await tokenBy(t.call, t)
    await expectWorks(tk, t)
    const user = await read(tk)
    expect((await t.call("DELETE", `/v1/consents/users/${user.body.id}`)).status).toBe(200)
    await expectRefused(tk, t)
    const byOuid = `/v1/consents/users/${encodeURIComponent(tk.organizationUserId)}?$by_organization_user_id=true`
    expect((await t.call("GET", byOuid)).status).toBe(404)
    await expectWorks(other, t)
    server.clock.advance(1000)
    const again = await tokenBy(t.call, t, tk.organizationUserId)
    await expectWorks(again, t)
    expect((await t.call("GET", byOuid)).status).toBe(200)
  })
})

describe.runIf(storeKind === "postgres")("two servers on one PostgreSQL database", () => {
  const servers = useTwoPgServers({ jwtSecret: JWT_SECRET })

  it("a key disabled, a revocation date or an erasure through one server is refused by the other within a second", async () => {
    const [a, b] = servers as [RunningServer, RunningServer]
    const opA = await operatorOf(a.url)
    const t = await opA.tenant()
    const flags = await opA.call("GET", `/v1/premium-features?organization_id=${t.org.id}`)
    expect((await opA.call("PATCH", `/v1/premium-features/${flags.body.data[0].id}`, { body: FULL })).status).toBe(200)
    const mint = async (minter: string) => {
      const r = await as(a.url, minter)("POST", "/v1/consents/tokens", { body: { organization_id: t.org.id, organization_user_id: unique("crm") } })
      expect(r.status, r.text).toBe(201)
      return { ouid: r.body.organization_user_id as string, onB: as(b.url, r.body.id_token as string) }
    }
    const readOnB = async (tk: Awaited<ReturnType<typeof mint>>) =>
      (await tk.onB("GET", `/v1/consents/users/${encodeURIComponent(tk.ouid)}?$by_organization_user_id=true`)).status
    const writeOnB = async (tk: Awaited<ReturnType<typeof mint>>) =>
      (await tk.onB("POST", "/v1/consents/events", {
        body: { organization_id: t.org.id, user: { organization_user_id: tk.ouid }, consents: { purposes: purposes(["analytics", true]) } }
      })).status

    // A key disabled through A: B's kept answer for it is warm when it happens.
    const key = await opA.createKey(t.org.id)
    const byKey = await mint(await client(a.url).login(key.id, key.secret))
    expect(await writeOnB(byKey)).toBe(201)
    expect((await opA.call("PATCH", `/v1/keys/${key.id}`, { body: { enabled: false } })).status).toBe(200)
    await refusedWithin(1500, async () => (await readOnB(byKey)) === 401)

    // An erasure through A.
    const erased = await mint(t.token)
    expect(await writeOnB(erased)).toBe(201)
    const user = await as(a.url, t.token)("GET", `/v1/consents/users/${encodeURIComponent(erased.ouid)}?$by_organization_user_id=true`)
    expect((await as(a.url, t.token)("DELETE", `/v1/consents/users/${user.body.id}`)).status).toBe(200)
    await refusedWithin(1500, async () => (await writeOnB(erased)) === 401)

    // A revocation date set through A.
    const revoked = await mint(t.token)
    expect(await writeOnB(revoked)).toBe(201)
    expect(await readOnB(revoked)).toBe(200)
    await new Promise((resolve) => setTimeout(resolve, 1100))
    const at = new Date().toISOString()
    expect((await as(a.url, t.token)("PATCH", `/v1/organizations/${t.org.id}`, { body: { consent_tokens_revoked_before: at } })).status).toBe(200)
    await refusedWithin(1500, async () => (await readOnB(revoked)) === 401)
  }, 30_000)
})
