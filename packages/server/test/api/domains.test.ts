import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import { dnsProvisioner } from "@cmp/platform-node"
import { as, expect400, expect403, expect409, operatorOf, start, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

/** Domains: FQDN ids, type from the managed zone, the status machine of api.md, provisioning. */

const { server, op, tenants: [a] } = useServer({ settings: { managedZone: "cmp-managed.net" } }, { tenants: 1 })
const asA = a.call

const fqdn = () => `${unique("d")}.example.com`
const create = async (id = fqdn(), extra: Record<string, unknown> = {}) => {
  const r = await asA("POST", "/v1/domains", { body: { id, organization_id: a.org.id, usage: "cmp", ...extra } })
  expect(r.status, r.text).toBe(201)
  return r.body
}

describe("domains", () => {
  it("the id is a validated FQDN, lower-cased; every method answers", async () => {
    const name = fqdn()
    const d = await create(`${name.toUpperCase()}.`)
    expect(d).toMatchObject({ id: name, status: "draft", enabled: true, type: "custom", usage: "cmp", version: 1 })
    for (const bad of ["localhost", "exa mple.com", "-bad.example.com", "http://x.example.com", "a..b.com", "x".repeat(64) + ".com"]) {
      const r = await asA("POST", "/v1/domains", { body: { id: bad, organization_id: a.org.id, usage: "cmp" } })
      expect400(r)
      expect(r.body.errors.id, bad).toBeDefined()
    }
    expect409(await asA("POST", "/v1/domains", { body: { id: name, organization_id: a.org.id, usage: "cmp" } }))
    expect((await asA("GET", `/v1/domains/${name}`)).body).toEqual(d)
    expect((await asA("GET", `/v1/domains?usage=cmp`)).body.data.map((x: { id: string }) => x.id)).toContain(name)
    const put = await asA("PUT", `/v1/domains/${name}`, { body: { enabled: true, description: "main", bots_crawl: "allow_all" } })
    expect(put.body).toMatchObject({ description: "main", bots_crawl: "allow_all", status: "draft" })
    expect400(await asA("PATCH", `/v1/domains/${name}`, { body: { bots_crawl: "some" } }))
    expect((await asA("DELETE", `/v1/domains/${name}`)).status).toBe(200)
  })

  it("usage is required and one of the three; type is output only and set from the managed zone", async () => {
    expect400(await asA("POST", "/v1/domains", { body: { id: fqdn(), organization_id: a.org.id } }))
    expect400(await asA("POST", "/v1/domains", { body: { id: fqdn(), organization_id: a.org.id, usage: "web" } }))
    const r = await asA("POST", "/v1/domains", { body: { id: fqdn(), organization_id: a.org.id, usage: "cmp", type: "managed" } })
    expect400(r)
    expect(r.body.errors.type).toMatch(/output only/)
    const managed = await create(`${unique("shop")}.cmp-managed.net`, { usage: "privacy-center" })
    expect(managed.type).toBe("managed")
    expect((await create(`${unique("x")}.notcmp-managed.net`)).type).toBe("custom")
  })

  it("id, organization_id, usage and type are not updatable", async () => {
    const d = await create()
    for (const body of [{ usage: "privacy-center" }, { organization_id: "other" }, { type: "managed" }]) {
      expect400(await asA("PATCH", `/v1/domains/${d.id}`, { body }))
    }
    const ignoredId = await asA("PATCH", `/v1/domains/${d.id}`, { body: { id: "other.example.com", description: "x" } })
    expect(ignoredId.body.id).toBe(d.id)
  })

  it("status moves only as api.md allows; a refused move is a 400 naming the allowed next states", async () => {
    const d = await create()
    for (const status of ["ready", "deploying", "deleting", "failed", "to_be_deleted"]) {
      const r = await asA("PATCH", `/v1/domains/${d.id}`, { body: { status } })
      expect400(r)
      expect(r.body.errors.status).toContain("scheduled")
      expect(r.body.message).toContain("allowed next states: scheduled")
    }
    // The default provisioner completes at once: scheduled → deploying → ready.
    const ready = await asA("PATCH", `/v1/domains/${d.id}`, { body: { status: "scheduled" } })
    expect(ready.status, ready.text).toBe(200)
    expect(ready.body.status).toBe("ready")
    const r = await asA("PATCH", `/v1/domains/${d.id}`, { body: { status: "scheduled" } })
    expect400(r)
    expect(r.body.errors.status).toContain("to_be_deleted")
    expect(r.body.errors.status).not.toContain("scheduled,")
    // Asking for the current state changes nothing.
    expect((await asA("PATCH", `/v1/domains/${d.id}`, { body: { status: "ready" } })).body.status).toBe("ready")
    // ready → to_be_deleted → deleting → removed: the domain is gone.
    const deleting = await asA("PATCH", `/v1/domains/${d.id}`, { body: { status: "to_be_deleted" } })
    expect(deleting.status, deleting.text).toBe(200)
    expect(deleting.body.status).toBe("to_be_deleted")
    expect((await asA("GET", `/v1/domains/${d.id}`)).status).toBe(404)
  })

  it("a name reads, changes and goes by any spelling it could be created with", async () => {
    const name = fqdn()
    await create(name)
    const spelled = `${name.toUpperCase()}.`
    expect((await asA("GET", `/v1/domains/${spelled}`)).body.id).toBe(name)
    expect((await asA("PATCH", `/v1/domains/${spelled}`, { body: { description: "x" } })).body).toMatchObject({ id: name, description: "x" })
    expect((await asA("DELETE", `/v1/domains/${spelled}`)).status).toBe(200)
    expect((await asA("GET", `/v1/domains/${name}`)).status).toBe(404)
  })

  it("another organization's name: its create answers as a duplicate of one's own, reads as an unknown name", async () => {
    const b = await op.tenant()
    const asB = as(server.url, b.token)
    const name = fqdn()
    await create(name)
    const ownDuplicate = await asA("POST", "/v1/domains", { body: { id: name, organization_id: a.org.id, usage: "cmp" } })
    const foreign = await asB("POST", "/v1/domains", { body: { id: `${name.toUpperCase()}.`, organization_id: b.org.id, usage: "cmp" } })
    expect409(foreign)
    // Nothing in the answer tells whose name it is, nor its state.
    expect(foreign.body).toEqual(ownDuplicate.body)
    const unknown = fqdn()
    const read = await asB("GET", `/v1/domains/${name}`)
    const readUnknown = await asB("GET", `/v1/domains/${unknown}`)
    expect([read.status, readUnknown.status]).toEqual([404, 404])
    expect(read.body.message.replace(name, "<id>")).toBe(readUnknown.body.message.replace(unknown, "<id>"))
    expect((await asB("PATCH", `/v1/domains/${name}`, { body: { description: "mine" } })).status).toBe(404)
    expect((await asB("DELETE", `/v1/domains/${name}`)).status).toBe(404)
    expect((await asB("GET", `/v1/domains?id=${name}`)).body.data).toEqual([])
  })

  it("the operator releases a name its holder never proved (still a draft), and another organization may claim it", async () => {
    const b = await op.tenant()
    const asB = as(server.url, b.token)
    const name = fqdn()
    await create(name)
    expect409(await asB("POST", "/v1/domains", { body: { id: name, organization_id: b.org.id, usage: "cmp" } }))
    const released = await op.call("DELETE", `/v1/domains/${name}`)
    expect(released.status, released.text).toBe(200)
    expect(released.body).toMatchObject({ id: name, organization_id: a.org.id, status: "draft" })
    const claimed = await asB("POST", "/v1/domains", { body: { id: name, organization_id: b.org.id, usage: "cmp" } })
    expect(claimed.status, claimed.text).toBe(201)
    expect((await asA("GET", `/v1/domains/${name}`)).status).toBe(404)
  })

  it("enabled: false de-provisions a ready domain; a disabled domain cannot be scheduled", async () => {
    const d = await create()
    await asA("PATCH", `/v1/domains/${d.id}`, { body: { status: "scheduled" } })
    const off = await asA("PATCH", `/v1/domains/${d.id}`, { body: { enabled: false } })
    expect(off.body).toMatchObject({ enabled: false, status: "draft" })
    expect400(await asA("PATCH", `/v1/domains/${d.id}`, { body: { status: "scheduled" } }))
    const on = await asA("PATCH", `/v1/domains/${d.id}`, { body: { enabled: true, status: "scheduled" } })
    expect(on.body).toMatchObject({ enabled: true, status: "ready" })
  })

  it("custom domains count against domains_per_delivery_cloud (403 naming the quota); managed ones do not", async () => {
    const t = await op.tenant()
    const quota = await op.quotaOf(t.org.id)
    expect((await op.call("PATCH", `/v1/quotas/${quota.id}`, { body: { domains_per_delivery_cloud: 1 } })).status).toBe(200)
    const asT = as(server.url, t.token)
    const body = (id: string) => ({ body: { id, organization_id: t.org.id, usage: "cmp" } })
    expect((await asT("POST", "/v1/domains", body(fqdn()))).status).toBe(201)
    const over = await asT("POST", "/v1/domains", body(fqdn()))
    expect403(over)
    expect(over.body.errors.domains_per_delivery_cloud).toBeDefined()
    expect((await asT("POST", "/v1/domains", body(`${unique("m")}.cmp-managed.net`))).status).toBe(201)
  })
})

describe("DNS provisioner", () => {
  it("a custom domain is ready when its CNAME points at the target, failed otherwise; failed can be retried", async () => {
    const cnames: Record<string, Array<string>> = {}
    const service = Effect.runSync(dnsProvisioner({
      target: "edge.cmp.example.",
      resolveCname: async (h) => {
        const found = cnames[h]
        if (!found) throw Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" })
        return found
      }
    }))
    const s = await start({ provisioner: { kind: "custom", service } })
    try {
      const o = await operatorOf(s.url)
      const t = await o.tenant()
      const asT = as(s.url, t.token)
      const good = `${unique("good")}.example.com`
      const bad = `${unique("bad")}.example.com`
      cnames[good] = ["EDGE.cmp.example"]
      cnames[bad] = ["elsewhere.example"]
      for (const id of [good, bad]) {
        expect((await asT("POST", "/v1/domains", { body: { id, organization_id: t.org.id, usage: "cmp" } })).status).toBe(201)
      }
      expect((await asT("PATCH", `/v1/domains/${good}`, { body: { status: "scheduled" } })).body.status).toBe("ready")
      expect((await asT("PATCH", `/v1/domains/${bad}`, { body: { status: "scheduled" } })).body.status).toBe("failed")
      cnames[bad] = ["edge.cmp.example"]
      expect((await asT("PATCH", `/v1/domains/${bad}`, { body: { status: "scheduled" } })).body.status).toBe("ready")
      const unresolved = `${unique("none")}.example.com`
      await asT("POST", "/v1/domains", { body: { id: unresolved, organization_id: t.org.id, usage: "cmp" } })
      expect((await asT("PATCH", `/v1/domains/${unresolved}`, { body: { status: "scheduled" } })).body.status).toBe("failed")
    } finally {
      await s.close()
    }
  })
})
