import * as crypto from "node:crypto"
import { beforeAll, describe, expect, it } from "vitest"
import { as, expect400, expect403, operatorOf, type Reply, start, type Tenant } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * Cursor paging of consent events and users (`$cursor`): keyset pages in `created_at`, then
 * key order, `{ data, limit, cursor }`, each record once while records keep arriving; the
 * cursor is bound to the query it was issued for, and scope applies to every page.
 */

type Caller = ReturnType<typeof as>
type ConsentTenant = Tenant & { readonly call: Caller }

const consentTenant = (): Promise<ConsentTenant> => tenant({ consents_api: true })

const { server, op, tenant } = useServer()

const enc = encodeURIComponent
const T = "2026-01-05T08:00:00"

interface EventSpec {
  readonly id: string
  readonly user: string
  readonly created_at: string
  readonly status?: "confirmed" | "pending_approval"
  /** Of the user, when the event creates it. */
  readonly country?: string
  readonly regulation?: string
  readonly purpose?: string
}

const postEvent = async (t: ConsentTenant, e: EventSpec) => {
  const r = await t.call("POST", "/v1/consents/events", {
    body: {
      id: e.id,
      organization_id: t.org.id,
      created_at: e.created_at,
      ...(e.status ? { status: e.status } : {}),
      ...(e.regulation ? { regulation: e.regulation } : {}),
      user: { id: e.user, ...(e.country ? { country: e.country } : {}) },
      consents: { purposes: [{ id: e.purpose ?? "analytics", enabled: true }] }
    }
  })
  expect(r.status, r.text).toBe(201)
  return r.body
}

const compare = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0)

/** Ids of one organization in the walk's order: created_at, then id (all ids sort alike everywhere). */
const expectedOrder = (rows: ReadonlyArray<{ id: string; created_at: string }>) =>
  [...rows].sort((a, b) => compare(a.created_at, b.created_at) || compare(a.id, b.id)).map((r) => r.id)

const page = async (call: Caller, path: string, query: string, cursor: string) => {
  const r = await call("GET", `/v1/${path}?${query}${query ? "&" : ""}$cursor=${enc(cursor)}`)
  expect(r.status, r.text).toBe(200)
  expect(Object.keys(r.body).sort()).toEqual(["cursor", "data", "limit"])
  return r.body as { data: Array<any>; limit: number; cursor: string | null }
}

/**
 * Every page from the first; `between(n)` runs after the n-th page. Answers the records and
 * the size of each page.
 */
const walk = async (call: Caller, path: string, query: string, between: (n: number) => Promise<void> = async () => {}) => {
  const data: Array<any> = []
  const sizes: Array<number> = []
  let cursor = ""
  for (let n = 1; n <= 100; n++) {
    const p = await page(call, path, query, cursor)
    data.push(...p.data)
    sizes.push(p.data.length)
    if (p.cursor === null) return { data, sizes }
    expect(typeof p.cursor).toBe("string")
    expect(p.cursor).not.toBe(cursor)
    cursor = p.cursor
    await between(n)
  }
  throw new Error("the walk did not end")
}

const errorKeys = (r: Reply) => Object.keys(r.body.errors ?? {})

describe("walking consent events", () => {
  it("every event once, in created_at then id order, with ties on created_at; the last page says cursor null", async () => {
    const t = await consentTenant()
    // Posted out of order; three share one instant, two are a millisecond apart.
    const specs: Array<EventSpec> = [
      { id: "e05", user: "u1", created_at: `${T}.000Z` },
      { id: "e02", user: "u2", created_at: `${T}.000Z` },
      { id: "e09", user: "u1", created_at: "2026-01-04T23:59:59.999Z" },
      { id: "e07", user: "u3", created_at: `${T}.001Z` },
      { id: "e01", user: "u2", created_at: `${T}.010Z` },
      { id: "e03", user: "u1", created_at: `${T}.000Z` },
      { id: "e08", user: "u3", created_at: "2026-02-01T00:00:00.000Z" }
    ]
    for (const s of specs) await postEvent(t, s)
    const order = expectedOrder(specs)
    expect(order).toEqual(["e09", "e02", "e03", "e05", "e07", "e01", "e08"])

    const first = await page(t.call, "consents/events", "$limit=2", "")
    expect(first.limit).toBe(2)
    expect(first.data.map((e) => e.id)).toEqual(["e09", "e02"])
    // The whole event, as find answers it.
    expect(first.data[0]).toMatchObject({ id: "e09", organization_id: t.org.id, created_at: "2026-01-04T23:59:59.999Z", version: 1 })

    for (const limit of [1, 2, 3, 7, 100]) {
      const { data, sizes } = await walk(t.call, "consents/events", `$limit=${limit}`)
      expect(data.map((e) => e.id), `pages of ${limit}`).toEqual(order)
      // A full last page already says null: no empty page after it (7 events in pages of 7).
      expect(sizes.at(-1), `pages of ${limit}`).toBeGreaterThan(0)
      expect(sizes.length, `pages of ${limit}`).toBe(Math.ceil(order.length / limit))
    }
    // Without $limit, pages of the default size.
    expect((await page(t.call, "consents/events", "", "")).limit).toBe(100)
  })

  it("without $cursor the usual envelope: total, limit, skip, data", async () => {
    const t = await consentTenant()
    await postEvent(t, { id: "e1", user: "u1", created_at: `${T}.000Z` })
    await postEvent(t, { id: "e2", user: "u1", created_at: `${T}.001Z` })
    const r = await t.call("GET", "/v1/consents/events?$limit=1")
    expect(r.status, r.text).toBe(200)
    expect(r.body).toMatchObject({ total: 2, limit: 1, skip: 0 })
    expect(r.body).not.toHaveProperty("cursor")
  })

  it("events added during a walk: ahead of the cursor they come, behind it they never do, nothing comes twice", async () => {
    const t = await consentTenant()
    const specs: Array<EventSpec> = [
      { id: "e10", user: "u1", created_at: `${T}.000Z` },
      { id: "e20", user: "u1", created_at: `${T}.000Z` },
      { id: "e30", user: "u1", created_at: `${T}.000Z` },
      { id: "e40", user: "u1", created_at: `${T}.500Z` },
      { id: "e50", user: "u1", created_at: "2026-01-06T00:00:00.000Z" }
    ]
    for (const s of specs) await postEvent(t, s)
    const { data } = await walk(t.call, "consents/events", "$limit=2", async (n) => {
      if (n !== 1) return
      // The first page ended at e20 (the second of three ties).
      await postEvent(t, { id: "e00", user: "u2", created_at: `${T}.000Z` }) // the same instant, an id before
      await postEvent(t, { id: "e15", user: "u2", created_at: `${T}.000Z` }) // the same instant, an id before
      await postEvent(t, { id: "e01", user: "u2", created_at: "2025-12-31T00:00:00.000Z" }) // earlier
      await postEvent(t, { id: "e25", user: "u2", created_at: `${T}.000Z` }) // the same instant, an id after
      await postEvent(t, { id: "e45", user: "u2", created_at: `${T}.700Z` }) // later, among the rest
      await postEvent(t, { id: "e99", user: "u2", created_at: "2027-01-01T00:00:00.000Z" }) // after everything
    })
    expect(data.map((e) => e.id)).toEqual(["e10", "e20", "e25", "e30", "e40", "e45", "e50", "e99"])
  })

  it("filters hold on every page; $select combines with $cursor", async () => {
    const t = await consentTenant()
    const specs: Array<EventSpec> = [
      { id: "e1", user: "ua", created_at: `${T}.000Z` },
      { id: "e2", user: "ub", created_at: `${T}.000Z` },
      { id: "e3", user: "ua", created_at: `${T}.001Z`, status: "pending_approval" },
      { id: "e4", user: "ua", created_at: `${T}.002Z` },
      { id: "e5", user: "ub", created_at: `${T}.002Z`, status: "pending_approval" },
      { id: "e6", user: "ua", created_at: `${T}.003Z` },
      { id: "e7", user: "ua", created_at: `${T}.000Z`, status: "pending_approval" }
    ]
    for (const s of specs) await postEvent(t, s)
    const byUser = await walk(t.call, "consents/events", "user_id=ua&$limit=2")
    expect(byUser.data.map((e) => e.id)).toEqual(["e1", "e7", "e3", "e4", "e6"])
    const pending = await walk(t.call, "consents/events", "status=pending_approval&$limit=1")
    expect(pending.data.map((e) => e.id)).toEqual(["e7", "e3", "e5"])
    const both = await walk(t.call, "consents/events", "user_id=ua&status[$ne]=pending_approval&$limit=1")
    expect(both.data.map((e) => e.id)).toEqual(["e1", "e4", "e6"])
    const selected = await walk(t.call, "consents/events", "$select[]=status&$limit=3")
    expect(selected.data.map((e) => e.id)).toEqual(["e1", "e2", "e7", "e3", "e4", "e5", "e6"])
    for (const e of selected.data) expect(Object.keys(e).sort()).toEqual(["id", "status"])
  })
})

describe("walking consent users", () => {
  it("every user once, in created_at then id order; users created at the same instant are ordered by id", async () => {
    const t = await consentTenant()
    const created: Array<{ id: string; created_at: string }> = []
    // The server clock stands still between advances: users created in a row share created_at.
    // Their ids are chosen (through the events that create them), so ids and creation order differ.
    for (const [id, advance] of [["u05", 0], ["u02", 0], ["u08", 1], ["u01", 0], ["u07", 1000], ["u03", 0], ["u04", 0]] as const) {
      server.clock.advance(advance)
      await postEvent(t, { id: `e-${id}`, user: id, created_at: `${T}.000Z` })
      const r = await t.call("GET", `/v1/consents/users/${id}`)
      expect(r.status, r.text).toBe(200)
      created.push({ id: r.body.id, created_at: r.body.created_at })
    }
    // Users created through this service (with server ids) come in the same walk.
    server.clock.advance(1)
    const direct = await t.call("POST", "/v1/consents/users", { body: { organization_id: t.org.id } })
    expect(direct.status, direct.text).toBe(201)
    created.push({ id: direct.body.id, created_at: direct.body.created_at })
    const order = expectedOrder(created)
    expect(order).toEqual(["u02", "u05", "u01", "u08", "u03", "u04", "u07", direct.body.id])
    for (const limit of [1, 2, 3, 8]) {
      const { data } = await walk(t.call, "consents/users", `$limit=${limit}`)
      expect(data.map((u) => u.id), `pages of ${limit}`).toEqual(order)
    }
    // Users an event creates join the walk like any other.
    const withAdded = await walk(t.call, "consents/users", "$limit=3", async (n) => {
      if (n !== 1) return
      server.clock.advance(1)
      await postEvent(t, { id: "e1", user: "u06", created_at: `${T}.000Z` })
    })
    expect(withAdded.data.map((u) => u.id)).toEqual([...order, "u06"])
  })

  it("filters hold on every page", async () => {
    const t = await consentTenant()
    for (const [id, country] of [["u4", "FR"], ["u2", "DE"], ["u3", "FR"], ["u1", "FR"], ["u5", "DE"]]) {
      await postEvent(t, { id: `e-${id}`, user: id, country, created_at: `${T}.000Z` })
    }
    const { data } = await walk(t.call, "consents/users", "country=FR&$limit=1")
    expect(data.map((u) => u.id)).toEqual(["u1", "u3", "u4"])
  })
})

describe("consent users in another regulation's view", () => {
  it("regulation=ccpa shows each user's ccpa state on every page, and is bound into the cursor", async () => {
    const t = await consentTenant()
    await postEvent(t, { id: "e1", user: "u1", created_at: `${T}.000Z`, regulation: "ccpa", purpose: "sale" })
    await postEvent(t, { id: "e2", user: "u2", created_at: `${T}.000Z` })
    await postEvent(t, { id: "e3", user: "u3", created_at: `${T}.000Z`, regulation: "ccpa", purpose: "share" })
    const shown = (data: Array<any>) => data.map((u) => [u.id, u.regulation, u.consents.purposes.map((p: any) => p.id)])
    const ccpa = await walk(t.call, "consents/users", "regulation=ccpa&$limit=1")
    expect(shown(ccpa.data)).toEqual([["u1", "ccpa", ["sale"]], ["u2", "ccpa", []], ["u3", "ccpa", ["share"]]])
    const gdpr = await walk(t.call, "consents/users", "$limit=2")
    expect(shown(gdpr.data)).toEqual([["u1", "gdpr", []], ["u2", "gdpr", ["analytics"]], ["u3", "gdpr", []]])
    const first = await page(t.call, "consents/users", "regulation=ccpa&$limit=1", "")
    for (const q of ["regulation=gdpr&$limit=1", "$limit=1"]) {
      const r = await t.call("GET", `/v1/consents/users?${q}&$cursor=${enc(first.cursor!)}`)
      expect400(r)
      expect(errorKeys(r), q).toEqual(["$cursor"])
    }
  })
})

describe("a cursor is bound to its query", () => {
  let t: ConsentTenant
  let cursor: string
  beforeAll(async () => {
    t = await consentTenant()
    for (const [i, s] of ["confirmed", "pending_approval", "confirmed", "confirmed"].entries()) {
      await postEvent(t, { id: `e${i}`, user: "u1", created_at: `${T}.00${i}Z`, status: s as EventSpec["status"] })
    }
    cursor = (await page(t.call, "consents/events", "status=confirmed&$limit=1", "")).cursor!
    expect(typeof cursor).toBe("string")
  })
  const next = (query: string, c = cursor) => t.call("GET", `/v1/consents/events?${query}&$cursor=${enc(c)}`)

  it("the same query continues, whatever the order of its parameters", async () => {
    const same = await next("status=confirmed&$limit=1")
    expect(same.status, same.text).toBe(200)
    expect(same.body.data.map((e: any) => e.id)).toEqual(["e2"])
    const reordered = await t.call("GET", `/v1/consents/events?$cursor=${enc(cursor)}&$limit=1&status=confirmed`)
    expect(reordered.status, reordered.text).toBe(200)
    expect(reordered.body.data.map((e: any) => e.id)).toEqual(["e2"])
  })

  it("with other filters, another $limit, or on another service it is a 400 naming $cursor", async () => {
    for (
      const q of ["status=pending_approval&$limit=1", "$limit=1", "status=confirmed&user_id=u1&$limit=1", "status=confirmed&$limit=2", "status=confirmed"]
    ) {
      const r = await next(q)
      expect400(r)
      expect(errorKeys(r), q).toEqual(["$cursor"])
    }
    const users = await t.call("GET", `/v1/consents/users?status=confirmed&$limit=1&$cursor=${enc(cursor)}`)
    expect400(users)
  })

  it("a malformed or altered cursor is a 400 naming $cursor", async () => {
    const json = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url")
    const inside = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
    const bad = [
      "not a cursor",
      "%%%",
      cursor.slice(0, -3),
      cursor + "x",
      json("just a string"),
      json({ ...inside, v: inside.v + 1 }),
      json({ ...inside, v: 1 }),
      json({ ...inside, k: inside.k.slice(1) }),
      json({ ...inside, k: ["yesterday", ...inside.k.slice(1)] }),
      json({ ...inside, k: [1, 2, 3] }),
      json({ ...inside, c: "another-query" }),
      json({ v: inside.v, k: inside.k }),
      Buffer.from([0xff, 0xfe, 0x7b]).toString("base64url"),
      "A".repeat(5000)
    ]
    for (const c of bad) {
      const r = await next("status=confirmed&$limit=1", c)
      expect400(r)
      expect(errorKeys(r), c.slice(0, 60)).toEqual(["$cursor"])
    }
    const asList = await t.call("GET", `/v1/consents/events?status=confirmed&$limit=1&$cursor[]=${enc(cursor)}`)
    expect400(asList)
    expect(errorKeys(asList)).toEqual(["$cursor"])
  })

  it("a cursor edited by the client, its check computed again without the server's key, is a 400", async () => {
    const json = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url")
    const sha256 = (data: string, bytes = 32) => crypto.createHash("sha256").update(data).digest().subarray(0, bytes).toString("base64url")
    const inside = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
    // Back to before the first event, and on to another filter: both would page what the cursor never allowed.
    const back = [`${T}.000Z`, inside.k[1], ""]
    const forged = [
      // As cursors were once made: a plain digest of the service and the query beside the position.
      json({ v: 1, q: sha256(JSON.stringify(["consents/events", { $limit: "1", status: "confirmed" }]), 16), k: back }),
      json({ v: 1, q: sha256(JSON.stringify(["consents/events", { $limit: "1", status: "pending_approval" }]), 16), k: inside.k }),
      // The current layout, with the check of the edited content computed as a plain digest.
      json({ ...inside, k: back, c: sha256(JSON.stringify([inside.v, JSON.stringify(["consents/events", { $limit: "1", status: "confirmed" }]), back])) }),
      // The check of the cursor kept, the position moved.
      json({ ...inside, k: back })
    ]
    for (const [c, q] of [[forged[0]!, "status=confirmed&$limit=1"], [forged[1]!, "status=pending_approval&$limit=1"], [forged[2]!, "status=confirmed&$limit=1"], [forged[3]!, "status=confirmed&$limit=1"]]) {
      const r = await next(q, c)
      expect400(r)
      expect(errorKeys(r), c.slice(0, 60)).toEqual(["$cursor"])
    }
  })

  it("a cursor of another server, with another key, is a 400 there", async () => {
    const other = await start()
    try {
      const otherOp = await operatorOf(other.url)
      const o = await otherOp.tenant()
      const flags = await otherOp.featuresOf(o.org.id)
      expect((await otherOp.call("PATCH", `/v1/premium-features/${flags.id}`, { body: { consents_api: true } })).status).toBe(200)
      const call = as(other.url, o.token)
      for (const [i, at] of [0, 1, 2].entries()) {
        const r = await call("POST", "/v1/consents/events", {
          body: { id: `e${i}`, organization_id: o.org.id, created_at: `${T}.00${at}Z`, user: { id: "u1" }, consents: { purposes: [{ id: "analytics", enabled: true }] } }
        })
        expect(r.status, r.text).toBe(201)
      }
      // Its own cursor pages; this server's cursor of the same query does not.
      const own = await page(call, "consents/events", "status=confirmed&$limit=1", "")
      expect((await page(call, "consents/events", "status=confirmed&$limit=1", own.cursor!)).data.map((e) => e.id)).toEqual(["e1"])
      const foreign = await call("GET", `/v1/consents/events?status=confirmed&$limit=1&$cursor=${enc(cursor)}`)
      expect400(foreign)
      expect(errorKeys(foreign)).toEqual(["$cursor"])
    } finally {
      await other.close()
    }
  }, 30_000)

  it("$sort or $skip with $cursor is a 400 naming them; $limit=0 with it too", async () => {
    for (const [q, key] of [["$sort[created_at]=1", "$sort"], ["$skip=1", "$skip"], ["$skip=0", "$skip"], ["$limit=0", "$limit"]]) {
      const r = await t.call("GET", `/v1/consents/events?${q}&$cursor=`)
      expect400(r)
      expect(errorKeys(r), q).toEqual([key])
    }
    const later = await t.call("GET", `/v1/consents/events?status=confirmed&$limit=1&$sort[id]=1&$cursor=${enc(cursor)}`)
    expect400(later)
    expect(errorKeys(later)).toEqual(["$sort"])
  })

  it("services that do not page by cursor refuse $cursor as an unknown parameter", async () => {
    const r = await t.call("GET", "/v1/keys?$cursor=")
    expect400(r)
    expect(errorKeys(r)).toEqual(["$cursor"])
  })
})

describe("scope applies to every page", () => {
  it("a client walks only its organization; another organization's cursor pages it into nothing of that organization", async () => {
    const a = await consentTenant()
    const b = await consentTenant()
    // Interleaved in time, with the same ids in both organizations.
    for (const [i, ms] of [0, 2, 4, 6].entries()) await postEvent(a, { id: `e${i}`, user: "u1", created_at: `${T}.00${ms}Z` })
    for (const [i, ms] of [1, 3, 5, 7].entries()) await postEvent(b, { id: `e${i}`, user: "u1", created_at: `${T}.00${ms}Z` })
    const walkA = await walk(a.call, "consents/events", "$limit=1")
    expect(walkA.data.map((e) => [e.organization_id, e.id])).toEqual([0, 1, 2, 3].map((i) => [a.org.id, `e${i}`]))
    // B's cursor after its second event (…003Z): A with the same query gets only its own later events.
    const bFirst = await page(b.call, "consents/events", "$limit=2", "")
    expect(bFirst.data.map((e) => e.organization_id)).toEqual([b.org.id, b.org.id])
    const intoA = await page(a.call, "consents/events", "$limit=2", bFirst.cursor!)
    expect(intoA.data.map((e) => [e.organization_id, e.id])).toEqual([[a.org.id, "e2"], [a.org.id, "e3"]])
    // Naming the other organization is refused, as on any find.
    expect403(await a.call("GET", `/v1/consents/events?organization_id=${b.org.id}&$cursor=`))
    // The operator walks both in one order; the same instant in both goes to the organization id.
    await postEvent(a, { id: "e9", user: "u1", created_at: `${T}.009Z` })
    await postEvent(b, { id: "e9", user: "u1", created_at: `${T}.009Z` })
    const both = await walk(op.call, "consents/events", `organization_id[$in][]=${a.org.id}&organization_id[$in][]=${b.org.id}&$limit=3`)
    const tied = [a.org.id, b.org.id].sort(compare)
    expect(both.data.map((e) => [e.created_at, e.organization_id])).toEqual([
      ...[0, 1, 2, 3, 4, 5, 6, 7].map((ms) => [`${T}.00${ms}Z`, ms % 2 === 0 ? a.org.id : b.org.id]),
      [`${T}.009Z`, tied[0]],
      [`${T}.009Z`, tied[1]]
    ])
    const onlyB = await walk(op.call, "consents/events", `organization_id=${b.org.id}&$limit=3`)
    expect(onlyB.data.map((e) => [e.organization_id, e.id])).toEqual([0, 1, 2, 3, 9].map((i) => [b.org.id, `e${i}`]))
  })

  it("an organization without the consents_api feature gets 403 with $cursor too", async () => {
    const t = await op.tenant()
    expect403(await as(server.url, t.token)("GET", "/v1/consents/events?$cursor="))
    expect403(await as(server.url, t.token)("GET", "/v1/consents/users?$cursor="))
  })
})

describe("the OpenAPI document", () => {
  it("documents $cursor and the cursor page on consent events and users only", async () => {
    const doc = (await op.call("GET", "/openapi.json")).body
    for (const path of ["/v1/consents/events", "/v1/consents/users"]) {
      const find = doc.paths[path].get
      expect(find.parameters.map((p: any) => p.name), path).toContain("$cursor")
      const variants = find.responses["200"].content["application/json"].schema.oneOf
      expect(variants.map((v: any) => [...v.required].sort()), path).toEqual([["data", "limit", "skip", "total"], ["cursor", "data", "limit"]])
    }
    expect(doc.paths["/v1/keys"].get.parameters.map((p: any) => p.name)).not.toContain("$cursor")
  })
})
