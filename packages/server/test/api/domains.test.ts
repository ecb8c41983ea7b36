import * as Effect from "effect/Effect"
import { beforeEach, describe, expect, it } from "vitest"
import { dnsProvisioner } from "@cmp/platform-node"
import { as, expect400, expect403, expect409, operatorOf, start, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

/** Domains: FQDN ids, type from the managed zone, the status machine of api.md, provisioning, page hosts' proofs. */

/** The TXT records the server's resolver answers, by name, each as its chunks; a name absent has none. */
const txt: Record<string, Array<Array<string>>> = {}
/** Names whose look-up gets no answer (the resolver's error code). */
const unanswered: Record<string, string> = {}
const resolveTxt = async (name: string) => {
  const code = unanswered[name]
  if (code !== undefined) throw Object.assign(new Error(code), { code })
  const found = txt[name]
  if (!found) throw Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" })
  return found
}

const { server, op, tenant, tenants: [a] } = useServer({ settings: { managedZone: "cmp-managed.net" }, dns: { resolveTxt } }, { tenants: 1 })
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

describe("proven page hosts (usages privacy-center and preference-center)", () => {
  // Each test its own organization: its page hosts count against domains_per_delivery_cloud.
  let t: Awaited<ReturnType<typeof tenant>>
  beforeEach(async () => {
    t = await tenant()
  })
  const asT = (method: string, path: string, options: Record<string, unknown> = {}) => t.call(method, path, options)
  const make = async (usage: string, id = fqdn()) => {
    const r = await asT("POST", "/v1/domains", { body: { id, organization_id: t.org.id, usage } })
    expect(r.status, r.text).toBe(201)
    return r.body
  }
  const page = (usage = "privacy-center", id = fqdn()) => make(usage, id)
  const schedule = (id: string) => asT("PATCH", `/v1/domains/${id}`, { body: { status: "scheduled" } })

  it("a page host gets its own random TXT record to publish, output only; a cmp domain gets none", async () => {
    const one = await page()
    const two = await page("preference-center")
    for (const d of [one, two]) {
      expect(d.verification).toEqual({ record: `_cmp-verify.${d.id}`, value: expect.stringMatching(/^[A-Za-z0-9_-]{32}$/) })
      expect(d.failure_reason).toBeNull()
      expect((await asT("GET", `/v1/domains/${d.id}`)).body.verification).toEqual(d.verification)
    }
    expect(one.verification.value).not.toBe(two.verification.value)
    expect(await make("cmp")).toMatchObject({ verification: null, failure_reason: null })
    const given = await asT("POST", "/v1/domains", {
      body: { id: fqdn(), organization_id: t.org.id, usage: "privacy-center", verification: { record: "x", value: "mine" } }
    })
    expect400(given)
    expect(given.body.errors.verification).toMatch(/output only/)
    for (const body of [{ verification: { record: "x", value: "mine" } }, { failure_reason: "none" }]) {
      expect400(await asT("PATCH", `/v1/domains/${one.id}`, { body }))
    }
    // A PUT keeps them: they are not the client's to replace.
    const put = await asT("PUT", `/v1/domains/${one.id}`, { body: { enabled: true, description: "privacy" } })
    expect(put.body.verification).toEqual(one.verification)
  })

  it("deploying a custom page host ends ready only when its TXT record holds the value; else failed, saying why", async () => {
    for (const usage of ["privacy-center", "preference-center"]) {
      const d = await page(usage)
      const record = d.verification.record
      // No record at all: the development provisioner alone would have made it ready.
      const none = await schedule(d.id)
      expect(none.status, none.text).toBe(200)
      expect(none.body).toMatchObject({ status: "failed", failure_reason: `No TXT record ${record} holds the domain's verification value` })
      expect((await asT("GET", `/v1/domains/${d.id}`)).body).toMatchObject({ status: "failed", failure_reason: none.body.failure_reason })
      // Another value (someone else's claim, a typo) proves nothing.
      txt[record] = [["v=spf1 -all"], [`${d.verification.value}x`]]
      expect((await schedule(d.id)).body.status).toBe("failed")
      // A look-up without an answer fails too, and says so.
      unanswered[record] = "ESERVFAIL"
      const lost = await schedule(d.id)
      expect(lost.body).toMatchObject({ status: "failed", failure_reason: `The TXT record ${record} could not be looked up (ESERVFAIL)` })
      delete unanswered[record]
      // The value among other records, split in chunks as long records are: ready, no reason left.
      const half = d.verification.value.length / 2
      txt[record] = [["v=spf1 -all"], [d.verification.value.slice(0, half), d.verification.value.slice(half)]]
      const ready = await schedule(d.id)
      expect(ready.body).toMatchObject({ status: "ready", failure_reason: null })
    }
  })

  it("the TXT record of another page host does not prove this one", async () => {
    const proven = await page()
    const other = await page()
    txt[proven.verification.record] = [[proven.verification.value]]
    txt[other.verification.record] = [[proven.verification.value]]
    expect((await schedule(proven.id)).body.status).toBe("ready")
    expect((await schedule(other.id)).body.status).toBe("failed")
  })

  it("a client may not set a page host ready itself; the operator may, after a check made by hand", async () => {
    const d = await page()
    const asked = await asT("PATCH", `/v1/domains/${d.id}`, { body: { status: "ready" } })
    expect400(asked)
    expect(asked.body.errors.status).toContain("scheduled")
    expect(asked.body.message).toContain("only the operator")
    const byOperator = await op.call("PATCH", `/v1/domains/${d.id}`, { body: { status: "ready" } })
    expect(byOperator.status, byOperator.text).toBe(200)
    expect(byOperator.body).toMatchObject({ id: d.id, status: "ready", failure_reason: null })
    expect((await asT("GET", `/v1/domains/${d.id}`)).body.status).toBe("ready")
    // From failed too: the reason goes with the failure.
    const f = await page()
    expect((await schedule(f.id)).body.status).toBe("failed")
    expect((await op.call("PATCH", `/v1/domains/${f.id}`, { body: { status: "ready" } })).body).toMatchObject({ status: "ready", failure_reason: null })
    // Not a disabled one, and never a cmp domain, which keeps the provisioner's rule.
    const off = await page()
    await asT("PATCH", `/v1/domains/${off.id}`, { body: { enabled: false } })
    expect400(await op.call("PATCH", `/v1/domains/${off.id}`, { body: { status: "ready" } }))
    const cmp = await make("cmp")
    const refused = await op.call("PATCH", `/v1/domains/${cmp.id}`, { body: { status: "ready" } })
    expect400(refused)
    expect(refused.body.message).not.toContain("only the operator")
  })

  it("a managed page host (the operator's own zone) and a cmp domain keep the provisioner's rule", async () => {
    const managed = await page("privacy-center", `${unique("shop")}.cmp-managed.net`)
    expect(managed.type).toBe("managed")
    expect((await schedule(managed.id)).body).toMatchObject({ status: "ready", failure_reason: null })
    const cmp = await make("cmp")
    expect((await schedule(cmp.id)).body).toMatchObject({ status: "ready", verification: null, failure_reason: null })
  })
})

describe("proven page hosts, whatever the provisioner", () => {
  it("with the DNS provisioner, a page host pointing here is still failed without its TXT record; a cmp domain needs only the CNAME", async () => {
    const records: Record<string, Array<Array<string>>> = {}
    const service = Effect.runSync(dnsProvisioner({ target: "edge.cmp.example", resolveCname: async () => ["edge.cmp.example"] }))
    const s = await start({
      provisioner: { kind: "custom", service },
      dns: { resolveTxt: async (name) => records[name] ?? [] }
    })
    try {
      const o = await operatorOf(s.url)
      const t = await o.tenant()
      const asT = as(s.url, t.token)
      const make = async (usage: string) => {
        const r = await asT("POST", "/v1/domains", { body: { id: `${unique(usage)}.example.com`, organization_id: t.org.id, usage } })
        expect(r.status, r.text).toBe(201)
        return r.body
      }
      const pageHost = await make("privacy-center")
      const cmp = await make("cmp")
      const scheduleT = (id: string) => asT("PATCH", `/v1/domains/${id}`, { body: { status: "scheduled" } })
      expect((await scheduleT(cmp.id)).body.status).toBe("ready")
      expect((await scheduleT(pageHost.id)).body).toMatchObject({ status: "failed", failure_reason: expect.stringContaining("No TXT record") })
      records[pageHost.verification.record] = [[pageHost.verification.value]]
      expect((await scheduleT(pageHost.id)).body).toMatchObject({ status: "ready", failure_reason: null })
    } finally {
      await s.close()
    }
  })

  it("a provisioner's refusal is a reason too", async () => {
    const refusing = Effect.runSync(dnsProvisioner({ target: "edge.cmp.example", resolveCname: async () => ["elsewhere.example"] }))
    const s = await start({ provisioner: { kind: "custom", service: refusing } })
    try {
      const o = await operatorOf(s.url)
      const t = await o.tenant()
      const asT = as(s.url, t.token)
      const id = `${unique("cmp")}.example.com`
      expect((await asT("POST", "/v1/domains", { body: { id, organization_id: t.org.id, usage: "cmp" } })).status).toBe(201)
      const r = await asT("PATCH", `/v1/domains/${id}`, { body: { status: "scheduled" } })
      expect(r.body).toMatchObject({ status: "failed", failure_reason: "The provisioner could not deploy the domain" })
    } finally {
      await s.close()
    }
  })
})

describe("release of page hosts not proven within 7 days", () => {
  it("a page host not ready 7 days after its creation is removed; a ready one, a cmp domain and a younger one stay", async () => {
    const records: Record<string, Array<Array<string>>> = {}
    const s = await start({ domainRelease: { everyMs: 25 }, dns: { resolveTxt: async (name) => records[name] ?? [] } })
    try {
      const o = await operatorOf(s.url)
      const t = await o.tenant()
      const asT = as(s.url, t.token)
      const make = async (usage: string) => {
        const r = await asT("POST", "/v1/domains", { body: { id: `${unique(usage)}.example.com`, organization_id: t.org.id, usage } })
        expect(r.status, r.text).toBe(201)
        return r.body.id as string
      }
      const scheduleT = (id: string) => asT("PATCH", `/v1/domains/${id}`, { body: { status: "scheduled" } })
      const draft = await make("privacy-center")
      const failed = await make("preference-center")
      expect((await scheduleT(failed)).body.status).toBe("failed")
      const proven = await make("privacy-center")
      const provenRow = (await asT("GET", `/v1/domains/${proven}`)).body
      records[provenRow.verification.record] = [[provenRow.verification.value]]
      expect((await scheduleT(proven)).body.status).toBe("ready")
      const byHand = await make("preference-center")
      expect((await o.call("PATCH", `/v1/domains/${byHand}`, { body: { status: "ready" } })).body.status).toBe("ready")
      const cmp = await make("cmp")
      // Sessions do not outlive the days the clock moves: the operator signs in again to look.
      const statusOf = async (id: string) => (await (await operatorOf(s.url)).call("GET", `/v1/domains/${id}`)).status
      const rounds = () => new Promise((resolve) => setTimeout(resolve, 200))

      // A minute short of seven days: several rounds run, nothing goes.
      s.clock.advance(7 * 24 * 3600_000 - 60_000)
      await rounds()
      expect(await Promise.all([draft, failed, proven, byHand, cmp].map(statusOf))).toEqual([200, 200, 200, 200, 200])
      const later = await (await operatorOf(s.url)).tenant()
      const younger = `${unique("younger")}.example.com`
      const made = await as(s.url, later.token)("POST", "/v1/domains", { body: { id: younger, organization_id: later.org.id, usage: "privacy-center" } })
      expect(made.status, made.text).toBe(201)

      // Past the seven days of the first ones: they are released, the rest stays.
      s.clock.advance(120_000)
      const until = Date.now() + 10_000
      while ((await statusOf(draft)) !== 404 || (await statusOf(failed)) !== 404) {
        if (Date.now() > until) throw new Error("the unproven page hosts were not released")
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      expect(await Promise.all([proven, byHand, cmp, younger].map(statusOf))).toEqual([200, 200, 200, 200])
      // Released as any removal: the name is free for whoever proves it.
      const other = await (await operatorOf(s.url)).tenant()
      const claimed = await as(s.url, other.token)("POST", "/v1/domains", { body: { id: draft, organization_id: other.org.id, usage: "privacy-center" } })
      expect(claimed.status, claimed.text).toBe(201)
      expect(claimed.body.verification.value).not.toBe(undefined)
    } finally {
      await s.close()
    }
  })
})
