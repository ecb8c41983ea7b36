import { beforeAll, describe, expect, it } from "vitest"
import { as, expect400, operatorOf, start } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * The find query syntax through HTTP, on `keys`. The organization holds its own login key
 * (created first) and five more, one second apart.
 */

const keys: Record<string, any> = {}

const specs = [
  { name: "alpha", description: "first", enabled: true },
  { name: "bravo", description: null, enabled: false },
  { name: "charlie", description: "third", enabled: true },
  { name: "delta", description: null, enabled: true },
  { name: "echo", description: "fifth", enabled: false }
] as const

const { server, op, tenants: [t] } = useServer({}, { tenants: 1 })
const asT = t.call

beforeAll(async () => {
  keys.own = t.key
  for (const s of specs) {
    server.clock.advance(1000)
    const body: Record<string, unknown> = { organization_id: t.org.id, name: s.name }
    if (s.description !== null) body.description = s.description
    const r = await asT("POST", "/v1/keys", { body })
    expect(r.status).toBe(201)
    if (!s.enabled) {
      const p = await asT("PATCH", `/v1/keys/${r.body.id}`, { body: { enabled: false } })
      expect(p.status).toBe(200)
    }
    keys[s.name] = r.body
  }
  // Keys of another organization must never show up.
  const other = await op.tenant()
  await as(server.url, other.token)("POST", "/v1/keys", { body: { organization_id: other.org.id, name: "alpha" } })
})

const find = async (query: string) => {
  const r = await asT("GET", `/v1/keys?${query}`)
  expect(r.status, `${query}: ${r.text}`).toBe(200)
  return r.body as { total: number; limit: number; skip: number; data: Array<any> }
}
const names = (page: { data: Array<any> }) => page.data.map((k) => (k.id === keys.own.id ? "own" : k.name))
const sorted = (xs: Array<string>) => [...xs].sort()

describe("paging", () => {
  it("the default page: total, limit 100, skip 0, oldest first", async () => {
    const page = await find("")
    expect(page).toMatchObject({ total: 6, limit: 100, skip: 0 })
    expect(names(page)).toEqual(["own", "alpha", "bravo", "charlie", "delta", "echo"])
  })

  it("$limit and $skip page through in a stable order", async () => {
    const p1 = await find("$limit=2")
    const p2 = await find("$limit=2&$skip=2")
    const p3 = await find("$limit=2&$skip=4")
    const p4 = await find("$limit=2&$skip=6")
    expect(p1).toMatchObject({ total: 6, limit: 2, skip: 0 })
    expect(p2).toMatchObject({ total: 6, limit: 2, skip: 2 })
    expect([...names(p1), ...names(p2), ...names(p3)]).toEqual(["own", "alpha", "bravo", "charlie", "delta", "echo"])
    expect(p4.data).toEqual([])
    expect(p4.total).toBe(6)
  })

  it("$limit=0 gives only the total", async () => {
    const page = await find("$limit=0")
    expect(page).toMatchObject({ total: 6, limit: 0, data: [] })
  })

  it("$limit above 1000 is clamped to 1000", async () => {
    const page = await find("$limit=5000")
    expect(page.limit).toBe(1000)
    expect(page.data).toHaveLength(6)
  })

  it("$limit and $skip above their maximum are clamped however many digits they have", async () => {
    for (const v of ["1234567890", "9007199254740993", "99999999999999999999999999"]) {
      const page = await find(`$limit=${v}`)
      expect(page.limit).toBe(1000)
      expect(page.data).toHaveLength(6)
    }
    const far = await find("$skip=99999999999999999999999999")
    expect(far).toMatchObject({ total: 6, skip: 2147483647, data: [] })
  })

  it("a negative or non-numeric $limit or $skip is 400", async () => {
    for (const q of ["$limit=-1", "$limit=abc", "$skip=-5", "$skip=x", "$limit[]=1"]) {
      expect400(await asT("GET", `/v1/keys?${q}`))
    }
  })

  it("total counts the filtered rows, not the page", async () => {
    const page = await find("enabled=true&$limit=1")
    expect(page.total).toBe(4)
    expect(page.data).toHaveLength(1)
  })
})

describe("$sort and $select", () => {
  it("$sort[name]=1 ascending and -1 descending", async () => {
    const asc = names(await find("$sort[name]=1"))
    const desc = names(await find("$sort[name]=-1"))
    const expected = [...asc].sort((x, y) => (keyName(x) < keyName(y) ? -1 : 1))
    expect(asc).toEqual(expected)
    expect(desc).toEqual([...asc].reverse())
    expect(asc.indexOf("alpha")).toBeLessThan(asc.indexOf("echo"))
  })

  it("$sort[created_at]=-1 gives newest first; encoded brackets work", async () => {
    expect(names(await find("$sort[created_at]=-1"))).toEqual(["echo", "delta", "charlie", "bravo", "alpha", "own"])
    expect(names(await find("%24sort%5Bcreated_at%5D=-1"))).toEqual(["echo", "delta", "charlie", "bravo", "alpha", "own"])
  })

  it("sorts on two keys", async () => {
    const page = await find("$sort[enabled]=1&$sort[name]=-1")
    expect(names(page)).toEqual(["echo", "bravo", ...names(await find("enabled=true&$sort[name]=-1"))])
  })

  it("a bad sort direction is 400", async () => {
    expect400(await asT("GET", "/v1/keys?$sort[name]=up"))
    expect400(await asT("GET", "/v1/keys?$sort=name"))
  })

  it("$select returns only the selected fields and id", async () => {
    const page = await find("$select[]=name&name=alpha")
    expect(page.data).toEqual([{ id: keys.alpha.id, name: "alpha" }])
    const two = await find("$select[]=name&$select[]=enabled&$sort[name]=1&$limit=1")
    expect(Object.keys(two.data[0]).sort()).toEqual(["enabled", "id", "name"])
    const csv = await find("$select=name,description&name=charlie")
    expect(csv.data).toEqual([{ id: keys.charlie.id, name: "charlie", description: "third" }])
  })

  it("$select of an unknown or hidden field is 400", async () => {
    for (const q of ["$select[]=colour", "$select[]=secret_hash", "$select[]=secret", "$select[]=name%3BDROP"]) {
      const r = await asT("GET", `/v1/keys?${q}`)
      expect400(r)
    }
  })
})

const keyName = (n: string) => (n === "own" ? keys.own.name : n)

describe("filters", () => {
  it("equality", async () => {
    expect(names(await find("name=alpha"))).toEqual(["alpha"])
    expect(names(await find("name=nope"))).toEqual([])
    expect(names(await find(`id=${keys.delta.id}`))).toEqual(["delta"])
    expect(names(await find("description=third"))).toEqual(["charlie"])
  })

  it("null equality: description=null", async () => {
    expect(sorted(names(await find("description=null")))).toEqual(["bravo", "delta", "own"])
  })

  it("boolean filter enabled=false / true", async () => {
    expect(names(await find("enabled=false"))).toEqual(["bravo", "echo"])
    expect(names(await find("enabled=true"))).toEqual(["own", "alpha", "charlie", "delta"])
    expect400(await asT("GET", "/v1/keys?enabled=maybe"))
  })

  it("$in in every qs form", async () => {
    for (
      const q of [
        "name[$in][]=alpha&name[$in][]=bravo",
        "name[$in]=alpha&name[$in]=bravo",
        "name[$in][0]=alpha&name[$in][1]=bravo",
        "name%5B%24in%5D%5B%5D=alpha&name%5B%24in%5D%5B%5D=bravo",
        "name%5B%24in%5D=alpha&name%5B%24in%5D=bravo",
        "name=alpha&name=bravo"
      ]
    ) {
      expect(sorted(names(await find(q))), q).toEqual(["alpha", "bravo"])
    }
    expect(names(await find("name[$in]=charlie"))).toEqual(["charlie"])
  })

  it("$in with null", async () => {
    expect(sorted(names(await find("description[$in][]=null&description[$in][]=first")))).toEqual(
      ["alpha", "bravo", "delta", "own"]
    )
  })

  it("$nin", async () => {
    expect(names(await find("name[$nin][]=alpha&name[$nin][]=bravo"))).toEqual(["own", "charlie", "delta", "echo"])
    // Rows with a null description are not in the list, so they match.
    expect(sorted(names(await find("description[$nin][]=first&description[$nin][]=third")))).toEqual(
      ["bravo", "delta", "echo", "own"]
    )
  })

  it("$ne", async () => {
    expect(names(await find("name[$ne]=alpha"))).toEqual(["own", "bravo", "charlie", "delta", "echo"])
    expect(names(await find("description[$ne]=null"))).toEqual(["alpha", "charlie", "echo"])
    // A null description is not equal to "first".
    expect(sorted(names(await find("description[$ne]=first")))).toEqual(["bravo", "charlie", "delta", "echo", "own"])
  })

  it("$lt, $lte, $gt, $gte on created_at", async () => {
    const at = encodeURIComponent(keys.charlie.created_at)
    expect(names(await find(`created_at[$lt]=${at}`))).toEqual(["own", "alpha", "bravo"])
    expect(names(await find(`created_at[$lte]=${at}`))).toEqual(["own", "alpha", "bravo", "charlie"])
    expect(names(await find(`created_at[$gt]=${at}`))).toEqual(["delta", "echo"])
    expect(names(await find(`created_at[$gte]=${at}`))).toEqual(["charlie", "delta", "echo"])
    const from = encodeURIComponent(keys.alpha.created_at)
    const to = encodeURIComponent(keys.echo.created_at)
    expect(names(await find(`created_at[$gt]=${from}&created_at[$lt]=${to}`))).toEqual(["bravo", "charlie", "delta"])
    // Without milliseconds or with an offset, the same instant.
    const plain = new Date(keys.charlie.created_at).toISOString().replace(".000Z", "Z")
    expect(names(await find(`created_at[$gte]=${encodeURIComponent(plain)}`))).toEqual(["charlie", "delta", "echo"])
  })

  it("a created_at that is not a date is 400", async () => {
    const r = await asT("GET", "/v1/keys?created_at[$lt]=yesterday")
    expect400(r)
    expect(Object.keys(r.body.errors).join()).toContain("created_at")
  })

  it("$or", async () => {
    expect(names(await find("$or[0][name]=alpha&$or[1][description]=third"))).toEqual(["alpha", "charlie"])
    expect(names(await find("%24or%5B0%5D%5Bname%5D=alpha&%24or%5B1%5D%5Bdescription%5D=third"))).toEqual(
      ["alpha", "charlie"]
    )
    // An $or combined with another filter: both must hold.
    expect(names(await find("$or[0][name]=alpha&$or[1][name]=bravo&enabled=false"))).toEqual(["bravo"])
    // Conditions inside one branch are a conjunction.
    expect(names(await find("$or[0][name]=alpha&$or[0][enabled]=false&$or[1][name]=echo"))).toEqual(["echo"])
  })

  it("a malformed $or or an unknown operator is 400", async () => {
    expect400(await asT("GET", "/v1/keys?$or=alpha"))
    expect400(await asT("GET", "/v1/keys?$or[0][colour]=red"))
    expect400(await asT("GET", "/v1/keys?name[$like]=al%25"))
    expect400(await asT("GET", "/v1/keys?name[$regex]=.*"))
  })

  it("a filter on an unknown field is 400 naming it", async () => {
    const r = await asT("GET", "/v1/keys?colour=red")
    expect400(r)
    expect(r.body.errors).toHaveProperty("colour")
    for (const q of ["secret_hash=x", "secret=x", "$foo=1", "constructor=x", "toString=x", "hasOwnProperty=x"]) {
      expect400(await asT("GET", `/v1/keys?${q}`))
    }
  })

  it("SQL metacharacters in a value are data: 200 with no result", async () => {
    for (
      const v of ["' OR 1=1 --", "alpha' OR '1'='1", "\"; DROP TABLE api_keys; --", "alpha%", "%", "_____", "*"]
    ) {
      const page = await find(`name=${encodeURIComponent(v)}`)
      expect(page.total, v).toBe(0)
      const inList = await find(`name[$in][]=${encodeURIComponent(v)}`)
      expect(inList.total, v).toBe(0)
    }
    expect((await find("")).total).toBe(6)
  })

  it("SQL in a sort key, a select or an operator is 400", async () => {
    for (
      const q of [
        "$sort[name;DROP TABLE api_keys]=1",
        `$sort[${encodeURIComponent("name DESC, (SELECT 1)")}]=1`,
        "$sort[name]=1;DROP",
        `$select[]=${encodeURIComponent("name FROM api_keys --")}`,
        `${encodeURIComponent("name = name OR 1")}=1`,
        `name[${encodeURIComponent("$ne OR 1=1")}]=x`,
        `name[$in][${encodeURIComponent("0) OR (1=1")}]=x`
      ]
    ) {
      expect400(await asT("GET", `/v1/keys?${q}`))
    }
    expect((await find("")).total).toBe(6)
  })
})

describe("prototype keys in a query", () => {
  it("__proto__ as a filter is refused, not dropped into a full scan", async () => {
    const { start, operatorOf, expect400 } = await import("./helpers.js")
    const server = await start()
    try {
      const op = await operatorOf(server.url)
      for (const q of ["__proto__=x", "__proto__[name]=x", "%5F%5Fproto%5F%5F=x"]) {
        const r = await op.call("GET", `/v1/keys?${q}`)
        expect400(r)
        expect(r.body.errors.query).toMatch(/__proto__/)
      }
    } finally {
      await server.close()
    }
  })
})
