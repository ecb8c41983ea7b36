import { ConsentEventsResource, keyOf, Storage, UnitOfWork } from "@cmp/core"
import { GPP_TCFEU_USNAT, GPP_USP_USNAT, GPP_WITH_UNKNOWN_SECTION, TC_STRING } from "@cmp/test-support/consent-strings"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { as, call, expect400, type Reply, unique } from "./helpers.js"
import { type TestTenant, useServer } from "./fixture.js"

/**
 * GPP strings and TC strings on consent events: decoded with the IAB's libraries on every new
 * write, whoever writes (a key, the public key, a consent token), stored and merged like
 * `tcfcs`, and carried by webhooks, flattened payloads and exports.
 */

const root = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-gpp-exports-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

const { server, tenant } = useServer(() => ({
  webhookAllowHosts: ["127.0.0.1"],
  exportsRoot: root,
  publicRateLimit: { perKey: 1_000_000, perAddress: 1_000_000 }
}))

const ALL = { consents_api: true, webhooks: true, store_guest_cmp_consents: true, store_cmp_consents: true, batch_exports_manual_run: true }

const eventOf = (t: TestTenant, ouid: string, consents: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  organization_id: t.org.id,
  user: { organization_user_id: ouid },
  consents: { purposes: [{ id: "analytics", enabled: true }], ...consents },
  ...extra
})

const publicWrite = (t: TestTenant, body: unknown) =>
  call(server.url, "POST", "/v1/consents/events", { rawBody: JSON.stringify(body), headers: { "x-public-api-key": t.org.public_api_key } })

/** A 400 whose `errors` names `field` alone, its text matching `why`. */
const refused = (r: Reply, field: string, why: RegExp) => {
  expect400(r)
  expect(Object.keys(r.body.errors)).toEqual([field])
  expect(r.body.errors[field]).toMatch(why)
}

describe("gpp on events and users", () => {
  it("a valid GPP string is stored and shown on the event and the user, gpp_sid derived from it", async () => {
    const t = await tenant(ALL)
    const ouid = unique("gpp")
    const e = await t.call("POST", "/v1/consents/events", { body: eventOf(t, ouid, { gpp: GPP_USP_USNAT, tcfcs: TC_STRING }) })
    expect(e.status, e.text).toBe(201)
    expect(e.body.consents).toMatchObject({ gpp: GPP_USP_USNAT, gpp_sid: [6, 7], tcfcs: TC_STRING })
    const got = await t.call("GET", `/v1/consents/events/${e.body.id}`)
    expect(got.body.consents).toMatchObject({ gpp: GPP_USP_USNAT, gpp_sid: [6, 7] })
    const user = await t.call("GET", `/v1/consents/users/${e.body.user.id}`)
    expect(user.body.consents).toMatchObject({ gpp: GPP_USP_USNAT, gpp_sid: [6, 7], tcfcs: TC_STRING })

    // A later event without gpp keeps the user's; one with a new string replaces both fields.
    server.clock.advance(1000)
    const plain = await t.call("POST", "/v1/consents/events", { body: eventOf(t, ouid, {}) })
    expect(plain.status, plain.text).toBe(201)
    expect(plain.body.consents.gpp).toBeUndefined()
    expect((await t.call("GET", `/v1/consents/users/${e.body.user.id}`)).body.consents).toMatchObject({ gpp: GPP_USP_USNAT, gpp_sid: [6, 7] })
    server.clock.advance(1000)
    const next = await t.call("POST", "/v1/consents/events", { body: eventOf(t, ouid, { gpp: GPP_TCFEU_USNAT, gpp_sid: [7] }) })
    expect(next.status, next.text).toBe(201)
    expect(next.body.consents).toMatchObject({ gpp: GPP_TCFEU_USNAT, gpp_sid: [7] })
    expect((await t.call("GET", `/v1/consents/users/${e.body.user.id}`)).body.consents).toMatchObject({ gpp: GPP_TCFEU_USNAT, gpp_sid: [7] })
    // A user without a GPP string shows none.
    const other = await t.call("POST", "/v1/consents/events", { body: eventOf(t, unique("none"), {}) })
    const none = await t.call("GET", `/v1/consents/users/${other.body.user.id}`)
    expect(none.body.consents.gpp).toBeUndefined()
    expect(none.body.consents.gpp_sid).toBeUndefined()
  })

  it("a section the decoder does not know is kept, and listed in gpp_sid", async () => {
    const t = await tenant(ALL)
    const e = await t.call("POST", "/v1/consents/events", { body: eventOf(t, unique("u"), { gpp: GPP_WITH_UNKNOWN_SECTION }) })
    expect(e.status, e.text).toBe(201)
    expect(e.body.consents).toMatchObject({ gpp: GPP_WITH_UNKNOWN_SECTION, gpp_sid: [7, 30] })
    const given = await t.call("POST", "/v1/consents/events", { body: eventOf(t, unique("u"), { gpp: GPP_WITH_UNKNOWN_SECTION, gpp_sid: [30] }) })
    expect(given.status, given.text).toBe(201)
    expect(given.body.consents.gpp_sid).toEqual([30])
  })

  it("gpp_sid naming a section the string does not have is a 400 naming the field and the section", async () => {
    const t = await tenant(ALL)
    const r = await t.call("POST", "/v1/consents/events", { body: eventOf(t, unique("u"), { gpp: GPP_USP_USNAT, gpp_sid: [7, 2] }) })
    refused(r, "consents.gpp_sid", /^section 2 is not in the GPP string/)
    refused(await t.call("POST", "/v1/consents/events", { body: eventOf(t, unique("u"), { gpp_sid: [7] }) }), "consents.gpp_sid", /needs the GPP string/)
    expect400(await t.call("POST", "/v1/consents/events", { body: eventOf(t, unique("u"), { gpp: GPP_USP_USNAT, gpp_sid: [0] }) }))
    expect400(await t.call("POST", "/v1/consents/events", { body: eventOf(t, unique("u"), { gpp: GPP_USP_USNAT, gpp_sid: ["7"] }) }))
  })

  it("a gpp that does not decode is a 400 naming consents.gpp and saying why; nothing is written", async () => {
    const t = await tenant(ALL)
    const ouid = unique("bad")
    refused(await t.call("POST", "/v1/consents/events", { body: eventOf(t, ouid, { gpp: "not a gpp string" }) }), "consents.gpp", /GPP header/)
    refused(await t.call("POST", "/v1/consents/events", { body: eventOf(t, ouid, { gpp: "" }) }), "consents.gpp", /GPP header/)
    refused(await t.call("POST", "/v1/consents/events", { body: eventOf(t, ouid, { gpp: "DBABzw~1YNN" }) }), "consents.gpp", /more sections/)
    refused(
      await t.call("POST", "/v1/consents/events", { body: eventOf(t, ouid, { gpp: "DBABzw~1YNN~C!AAAAAAAACA" }) }),
      "consents.gpp",
      /^is not a GPP string: section 7 \(usnat\) does not decode/
    )
    const users = await t.call("GET", `/v1/consents/users?organization_user_id=${ouid}`)
    expect(users.body.total).toBe(0)
  })

  it("a gpp over 65,536 characters is a 400 naming consents.gpp", async () => {
    const t = await tenant(ALL)
    const r = await t.call("POST", "/v1/consents/events", { body: eventOf(t, unique("u"), { gpp: "D" + "A".repeat(65_536) }) })
    refused(r, "consents.gpp", /at most 65536 characters/)
  })

  it("a non-empty tcfcs that is not a TC string is a 400 naming consents.tcfcs, by key and by public key; an empty one is kept", async () => {
    const t = await tenant(ALL)
    refused(await t.call("POST", "/v1/consents/events", { body: eventOf(t, unique("u"), { tcfcs: "CQ" }) }), "consents.tcfcs", /TC string/)
    const guest = { organization_id: t.org.id, user: { id: unique("device") }, consents: { tcfcs: "CPmadeup" } }
    refused(await publicWrite(t, guest), "consents.tcfcs", /TC string/)
    refused(await publicWrite(t, { ...guest, consents: { gpp: "DBAB" } }), "consents.gpp", /GPP string/)
    const good = await publicWrite(t, { ...guest, consents: { tcfcs: TC_STRING, gpp: GPP_USP_USNAT } })
    expect(good.status, good.text).toBe(201)
    const stored = await t.call("GET", `/v1/consents/events/${good.body.id}`)
    expect(stored.body.consents).toEqual({ tcfcs: TC_STRING, gpp: GPP_USP_USNAT, gpp_sid: [6, 7] })
    const empty = await t.call("POST", "/v1/consents/events", { body: eventOf(t, unique("u"), { tcfcs: "" }) })
    expect(empty.status, empty.text).toBe(201)
    expect(empty.body.consents.tcfcs).toBe("")
  })

  it("a consent token's writes are checked too", async () => {
    const t = await tenant(ALL)
    const ouid = unique("token")
    const token = await t.call("POST", "/v1/consents/tokens", { body: { organization_id: t.org.id, organization_user_id: ouid } })
    expect(token.status, token.text).toBe(201)
    const asUser = as(server.url, token.body.id_token as string)
    refused(await asUser("POST", "/v1/consents/events", { body: eventOf(t, ouid, { gpp: "DBACLIY~x" }) }), "consents.gpp", /GPP string/)
    const ok = await asUser("POST", "/v1/consents/events", { body: eventOf(t, ouid, { gpp: GPP_USP_USNAT }) })
    expect(ok.status, ok.text).toBe(201)
    expect(ok.body.consents.gpp_sid).toEqual([6, 7])
  })

  it("patching an event checks the strings it changes; users' create and patch with consents are checked", async () => {
    const t = await tenant(ALL)
    const e = await t.call("POST", "/v1/consents/events", { body: eventOf(t, unique("u"), { gpp: GPP_USP_USNAT }, { status: "pending_approval" }) })
    expect(e.status, e.text).toBe(201)
    const patch = (consents: Record<string, unknown>) =>
      t.call("PATCH", `/v1/consents/events/${e.body.id}`, { body: { status: "pending_approval", consents } })
    refused(await patch({ gpp: GPP_USP_USNAT, gpp_sid: [2] }), "consents.gpp_sid", /section 2/)
    refused(await patch({ tcfcs: "nope" }), "consents.tcfcs", /TC string/)
    const same = await patch({ gpp: GPP_USP_USNAT })
    expect(same.status, same.text).toBe(200)
    expect(same.body.consents).toEqual({ gpp: GPP_USP_USNAT, gpp_sid: [6, 7] })
    const changed = await patch({ gpp: GPP_TCFEU_USNAT })
    expect(changed.status, changed.text).toBe(200)
    expect(changed.body.consents.gpp_sid).toEqual([2, 7])

    refused(
      await t.call("POST", "/v1/consents/users", { body: { organization_id: t.org.id, organization_user_id: unique("u"), consents: { gpp: "x" } } }),
      "consents.gpp",
      /GPP string/
    )
    const u = await t.call("POST", "/v1/consents/users", {
      body: { organization_id: t.org.id, organization_user_id: unique("u"), consents: { gpp: GPP_USP_USNAT } }
    })
    expect(u.status, u.text).toBe(201)
    expect(u.body.consents).toMatchObject({ gpp: GPP_USP_USNAT, gpp_sid: [6, 7] })
    refused(await t.call("PATCH", `/v1/consents/users/${u.body.id}`, { body: { consents: { tcfcs: "CQ" } } }), "consents.tcfcs", /TC string/)
  })
})

describe("stored strings", () => {
  /** Writes `consents` into a stored event as an older version of the server could have (no check). */
  const storeAsBefore = (organizationId: string, id: string, consents: Record<string, unknown>) =>
    server.api.runtime.runPromise(Effect.gen(function*() {
      const table = ConsentEventsResource.tableDef
      const repo = (yield* Storage).repository(table)
      yield* (yield* UnitOfWork).transaction(Effect.gen(function*() {
        const row = Option.getOrThrow(yield* repo.get({ organization_id: organizationId, id }))
        yield* repo.patch(keyOf(table, row), { consents: { ...row.consents, ...consents } }, row.version)
      }))
    }))

  it("are not checked again: an event stored with a made-up tcfcs reads, and a patch that keeps it passes", async () => {
    const t = await tenant(ALL)
    const e = await t.call("POST", "/v1/consents/events", { body: eventOf(t, unique("old"), {}, { status: "pending_approval" }) })
    expect(e.status, e.text).toBe(201)
    await storeAsBefore(t.org.id, e.body.id, { tcfcs: "CQ" })
    const got = await t.call("GET", `/v1/consents/events/${e.body.id}`)
    expect(got.status, got.text).toBe(200)
    expect(got.body.consents.tcfcs).toBe("CQ")
    const kept = await t.call("PATCH", `/v1/consents/events/${e.body.id}`, { body: { status: "confirmed", consents: got.body.consents } })
    expect(kept.status, kept.text).toBe(200)
    expect(kept.body.consents.tcfcs).toBe("CQ")
    expect((await t.call("GET", `/v1/consents/users/${e.body.user.id}`)).body.consents.tcfcs).toBe("CQ")
    // A new made-up string in its place is a new write, and is checked.
    const changed = await t.call("PATCH", `/v1/consents/events/${e.body.id}`, { body: { status: "confirmed", consents: { tcfcs: "CR" } } })
    refused(changed, "consents.tcfcs", /TC string/)
  })
})

describe("gpp in webhooks and exports", () => {
  it("webhook payloads, flattened ones too, and exports carry gpp and gpp_sid", async () => {
    const t = await tenant(ALL)
    const hook = async (flatten: boolean) => {
      const r = await t.call("POST", "/v1/webhooks", {
        body: { organization_id: t.org.id, url: `http://127.0.0.1:9/${flatten ? "flat" : "plain"}`, flatten, event_types: ["event.created", "user.created"] }
      })
      expect(r.status, r.text).toBe(201)
      return r.body.id as string
    }
    const plain = await hook(false)
    const flat = await hook(true)
    const e = await t.call("POST", "/v1/consents/events", { body: eventOf(t, unique("hook"), { gpp: GPP_USP_USNAT }) })
    expect(e.status, e.text).toBe(201)
    const deliveries = async (id: string) => {
      const r = await t.call("GET", `/v1/webhooks/deliveries?webhook_id=${id}&$limit=100`)
      expect(r.status, r.text).toBe(200)
      return r.body.data as Array<any>
    }
    const sent = await deliveries(plain)
    const created = sent.find((d) => d.event_type === "event.created")
    expect(created.payload.parameters.entity.consents).toMatchObject({ gpp: GPP_USP_USNAT, gpp_sid: [6, 7] })
    const userCreated = sent.find((d) => d.event_type === "user.created")
    expect(userCreated.payload.parameters.entity.consents).toMatchObject({ gpp: GPP_USP_USNAT, gpp_sid: [6, 7] })
    const flatCreated = (await deliveries(flat)).find((d) => d.event_type === "event.created")
    expect(flatCreated.payload.parameters__entity__consents__gpp).toBe(GPP_USP_USNAT)
    const sidKeys = Object.keys(flatCreated.payload).filter((k) => k.startsWith("parameters__entity__consents__gpp_sid"))
    expect(sidKeys.map((k) => flatCreated.payload[k])).toEqual([6, 7])

    const config = await t.call("POST", "/v1/exports/configs", {
      body: { organization_id: t.org.id, name: "gpp", destinations: [{ type: "directory", path: `gpp-${t.org.id}` }] }
    })
    expect(config.status, config.text).toBe(201)
    const now = server.clock.millis
    const run = await t.call("POST", "/v1/exports/execute", {
      body: {
        organization_id: t.org.id,
        export_config_id: config.body.id,
        from: new Date(now - 60_000).toISOString(),
        to: new Date(now + 60_000).toISOString()
      }
    })
    expect(run.status, run.text).toBe(201)
    const dir = path.join(root, `gpp-${t.org.id}`)
    const lines = fs.readdirSync(dir).flatMap((f) =>
      fs.readFileSync(path.join(dir, f), "utf8").split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l))
    )
    const exported = lines.find((l) => l.type === "event" && l.id === e.body.id)
    expect(exported.consents).toMatchObject({ gpp: GPP_USP_USNAT, gpp_sid: [6, 7] })
    const exportedUser = lines.find((l) => l.type === "user" && l.id === e.body.user.id)
    expect(exportedUser.consents).toMatchObject({ gpp: GPP_USP_USNAT, gpp_sid: [6, 7] })
  })
})
