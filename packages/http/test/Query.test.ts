import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { HttpApi } from "../src/index.js"
import { body, type Caller, memoryApi, tenants } from "./requests.js"

/**
 * The query string of a find, read as Feathers clients write it (`qs` brackets): what it parses
 * into, and the 400 that names the parameter a client got wrong.
 */
let api: HttpApi
let operator: Caller

beforeAll(async () => {
  api = await memoryApi()
  const t = await tenants(api)
  operator = t.operator
  const org = await t.organization("Query")
  for (const name of ["a", "b", "c", "x y"]) {
    await operator("POST", "/v1/keys", { organization_id: org.id, name, description: name === "b" ? null : "d" })
  }
})
afterAll(() => api?.dispose())

const names = async (query: string) => {
  const r = await operator("GET", `/v1/keys?${query}`)
  expect(r.status, query).toBe(200)
  return (body(r).data as Array<{ name: string }>).map((k) => k.name)
}

/** The 400 a query is answered with: its `errors`. */
const refused = async (query: string) => {
  const r = await operator("GET", `/v1/keys?${query}`)
  expect(r.status, query).toBe(400)
  const b = body(r)
  expect(b).toMatchObject({ name: "BadRequest", code: 400, className: "bad-request" })
  expect(b.message, query).toMatch(/^Invalid query: /)
  return b.errors as Record<string, string>
}

describe("find queries", () => {
  it("brackets make operators, lists, $or, sort and select; + and %20 are spaces", async () => {
    expect(await names("name[$in][]=a&name[$in][]=c&$sort[name]=-1")).toEqual(["c", "a"])
    expect(await names("name[$in][0]=b&name[$in][1]=c&$sort[name]=1")).toEqual(["b", "c"])
    expect(await names("$or[0][name]=a&$or[1][description]=null&$sort[name]=1")).toEqual(["a", "b"])
    expect(await names("name[$nin][]=c&name[$nin][]=x+y&$sort[name]=-1&$limit=1")).toEqual(["b"])
    const selected = body(await operator("GET", "/v1/keys?name=a&$select[]=name"))
    expect(selected.data).toEqual([{ id: selected.data[0].id, name: "a" }])
    expect(await names("name=x+y")).toEqual(["x y"])
    expect(await names("name=x%20y")).toEqual(["x y"])
    expect(await names("name=x%2By")).toEqual([])
  })

  it("a bad parameter is a 400 naming it", async () => {
    expect(await refused("colour=red")).toEqual({ colour: "is not a field of this resource" })
    expect(await refused("$limit=ten")).toEqual({ $limit: "must be a non-negative integer" })
    expect(await refused("$skip=-1")).toEqual({ $skip: "must be a non-negative integer" })
    expect(await refused("$sort=name")).toEqual({ $sort: "must be of the form $sort[field]=1 or -1" })
    expect(await refused("$sort[colour]=1")).toEqual({ "$sort.colour": "is not a field of this resource" })
    expect(await refused("name[$like]=a")).toEqual({ "name.$like": "is not a supported operator" })
    expect(await refused("enabled=maybe")).toEqual({ enabled: "must be true or false" })
    expect(await refused("$unknown=1")).toEqual({ $unknown: "is not a supported query parameter" })
  })

  it("names an object's own keys would hide are refused like any unknown field, never dropped", async () => {
    for (const name of ["constructor", "toString", "hasOwnProperty", "valueOf"]) {
      expect(await refused(`${name}=x`), name).toEqual({ [name]: "is not a field of this resource" })
    }
    expect(await refused("$or[0][constructor]=x")).toEqual({ "$or.0.constructor": "is not a field of this resource" })
  })

  it("__proto__ as a name, in any spelling or position, is refused; as a value it is a value", async () => {
    const proto = { query: "__proto__ is not a field of this resource" }
    for (const query of ["__proto__=x", "__proto__[name]=a", "name[__proto__]=a", "%5F%5Fproto%5F%5F=x", "$or[0][__PROTO__]=a", "name=a&__proto__"]) {
      expect(await refused(query), query).toEqual(proto)
    }
    expect(await names("name=__proto__")).toEqual([])
    expect(await names("description=__proto__")).toEqual([])
  })
})
