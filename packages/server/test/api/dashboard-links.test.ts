import { verifySignedUrl } from "@cmp/platform-node"
import { beforeAll, describe, expect, it } from "vitest"
import { client, expect400, expect403, memberOf, START, type Tenant } from "./helpers.js"
import { type Caller, useServer } from "./fixture.js"

/**
 * `analytics/dashboards-urls` signs each link for one organization: the caller's only one, or
 * the one it names with `?organization_id=`. The organization is part of the signed URL, so the
 * dashboard host knows whose data to show and a link cannot be turned into another's.
 */
const URL_KEY = "test-url-signing-key-0123456789-abcdef"
let a: Tenant & { call: Caller }
let b: Tenant & { call: Caller }
let c: Tenant & { call: Caller }
let platformId: string
let ofA: string
let ofB: string

const entry = async (organizationId: string | undefined, order: number) => {
  const r = await op.call("POST", "/v1/analytics/dashboards", {
    body: {
      name: `Consents ${order}`,
      type: "tool-a",
      product: "cmp",
      aggregation_period: "daily",
      category: "analytics",
      order,
      target_url: "https://dash.example.com/d/1?theme=dark",
      ...(organizationId === undefined ? {} : { organization_id: organizationId })
    }
  })
  expect(r.status, r.text).toBe(201)
  return r.body.id as string
}

const path = (query = "") => `/v1/analytics/dashboards-urls?$sort[order]=1${query}`
const ids = (r: { body: { data: Array<{ id: string }> } }) => r.body.data.map((d) => d.id)
/** The organization each link of a page was signed for, after checking the signature. */
const signedFor = (r: { body: { data: Array<{ url: string }> } }) =>
  r.body.data.map((d) => {
    expect(verifySignedUrl(URL_KEY, d.url, START / 1000)).toBe(true)
    return new URL(d.url).searchParams.get("organization_id")
  })

const { server, op, tenant } = useServer({ urlSigningKey: URL_KEY })

beforeAll(async () => {
  a = await tenant()
  b = await tenant()
  c = await tenant()
  platformId = await entry(undefined, 1)
  ofA = await entry(a.org.id, 2)
  ofB = await entry(b.org.id, 3)
})

describe("dashboards-urls: whose links", () => {
  it("a client's own organization is implied, and may be named", async () => {
    for (const r of [await a.call("GET", path()), await a.call("GET", path(`&organization_id=${a.org.id}`))]) {
      expect(r.status, r.text).toBe(200)
      expect(ids(r)).toEqual([platformId, ofA])
      expect(signedFor(r)).toEqual([a.org.id, a.org.id])
    }
  })

  it("the platform's entries are signed for each organization that asks", async () => {
    const fromA = (await a.call("GET", path(`&id=${platformId}`))).body.data[0].url
    const fromC = (await c.call("GET", path(`&id=${platformId}`))).body.data[0].url
    expect(new URL(fromA).searchParams.get("organization_id")).toBe(a.org.id)
    expect(new URL(fromC).searchParams.get("organization_id")).toBe(c.org.id)
    // The organization is signed: a link cannot be turned into another organization's.
    expect(verifySignedUrl(URL_KEY, fromA.replace(a.org.id, c.org.id), START / 1000)).toBe(false)
  })

  it("another organization is 403 for a client, in every form", async () => {
    for (
      const q of [
        `&organization_id=${b.org.id}`,
        `&organization_id=${encodeURIComponent("no-such-org")}`
      ]
    ) expect403(await a.call("GET", path(q)))
  })

  it("one organization only: a list, an operator or an empty value is 400", async () => {
    for (
      const q of [
        `&organization_id[$in][]=${a.org.id}`,
        `&organization_id[$in][]=${a.org.id}&organization_id[$in][]=${b.org.id}`,
        `&organization_id=${a.org.id}&organization_id=${b.org.id}`,
        `&organization_id[$ne]=${b.org.id}`,
        "&organization_id="
      ]
    ) {
      const r = await a.call("GET", path(q))
      expect400(r)
      expect(Object.keys(r.body.errors)).toEqual(["organization_id"])
    }
  })

  it("the operator names the organization: 400 without it, that organization's links with it", async () => {
    const none = await op.call("GET", path())
    expect400(none)
    expect(none.body.errors.organization_id).toMatch(/required/)
    const forB = await op.call("GET", path(`&organization_id=${b.org.id}`))
    expect(forB.status, forB.text).toBe(200)
    expect(ids(forB)).toEqual([platformId, ofB])
    expect(signedFor(forB)).toEqual([b.org.id, b.org.id])
    expect400(await op.call("GET", path("&organization_id=no-such-org")))
  })

  it("a member of several names one; a member of one has it implied", async () => {
    const both = await memberOf(server.url, a, b)
    const none = await both("GET", path())
    expect400(none)
    expect(none.body.errors.organization_id).toMatch(/required/)
    const forA = await both("GET", path(`&organization_id=${a.org.id}`))
    expect(ids(forA)).toEqual([platformId, ofA])
    expect(signedFor(forA)).toEqual([a.org.id, a.org.id])
    const forB = await both("GET", path(`&organization_id=${b.org.id}`))
    expect(ids(forB)).toEqual([platformId, ofB])
    expect403(await both("GET", path(`&organization_id=${c.org.id}`)))

    const onlyC = await memberOf(server.url, c)
    const implied = await onlyC("GET", path())
    expect(implied.status, implied.text).toBe(200)
    expect(ids(implied)).toEqual([platformId])
    expect(signedFor(implied)).toEqual([c.org.id])
    expect403(await onlyC("GET", path(`&organization_id=${a.org.id}`)))
  })

  it("other filters, paging and $select still apply within the organization", async () => {
    const paged = await op.call("GET", path(`&organization_id=${a.org.id}&$limit=1&$skip=1&$select[]=name`))
    expect(paged.status, paged.text).toBe(200)
    expect(paged.body).toMatchObject({ total: 2, limit: 1, skip: 1 })
    expect(paged.body.data).toEqual([{ id: ofA, name: "Consents 2" }])
  })
})
