import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import fc from "fast-check"
import qs from "qs"
import { describe, expect, it } from "vitest"
import { JsonObject, opt, Text, Timestamp } from "../src/Domain/Common.js"
import type { InvalidInput } from "../src/Domain/Errors.js"
import { fieldsOf } from "../src/Engine/Fields.js"
import { conditionFields, type ParsedQuery, parseFindQuery, type ParseOptions } from "../src/Engine/Query.js"
import { ApiKeysResource } from "../src/Accounts/ApiKeys.js"

/** A resource with every field kind: what a real one would declare. */
const Thing = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  description: opt(Text),
  enabled: Schema.Boolean,
  count: Schema.Number,
  created_at: Timestamp,
  metadata: JsonObject
})

const options: ParseOptions = { fields: fieldsOf(Thing), passthrough: ["$by_organization_user_id"] }

const parseQs = (query: string) => qs.parse(query, { depth: 10, arrayLimit: 1000 }) as Record<string, unknown>

const parse = (query: string, opts: ParseOptions = options): Either.Either<ParsedQuery, InvalidInput> =>
  parseFindQuery(parseQs(query), opts)

const ok = (query: string, opts: ParseOptions = options): ParsedQuery => {
  const r = parse(query, opts)
  if (Either.isLeft(r)) throw new Error(`expected ${query} to parse, got ${r.left.message}`)
  return r.right
}

/** Fails, and returns the `errors` of the InvalidInput. */
const bad = (query: string, opts: ParseOptions = options): Record<string, string> => {
  const r = parse(query, opts)
  if (Either.isRight(r)) throw new Error(`expected ${query} to fail, got ${JSON.stringify(r.right)}`)
  expect(r.left._tag).toBe("InvalidInput")
  return r.left.errors ?? {}
}

describe("parseFindQuery: paging", () => {
  it("defaults to $limit 100, $skip 0, no sort, no select, no conditions", () => {
    const { params, query } = ok("")
    expect(query).toEqual({ where: [], sort: [], limit: 100, skip: 0 })
    expect(query.select).toBeUndefined()
    expect(params).toEqual({})
  })

  it("reads $limit and $skip", () => {
    const { query } = ok("$limit=25&$skip=50")
    expect(query.limit).toBe(25)
    expect(query.skip).toBe(50)
  })

  it("clamps $limit to 1000", () => {
    expect(ok("$limit=1000").query.limit).toBe(1000)
    expect(ok("$limit=1001").query.limit).toBe(1000)
    expect(ok("$limit=999999").query.limit).toBe(1000)
  })

  it("honours a smaller maxLimit option", () => {
    expect(ok("$limit=500", { ...options, maxLimit: 50 }).query.limit).toBe(50)
  })

  it.each(["1234567890", "9007199254740993", "99999999999999999999999999", "0001001"])("clamps $limit=%s however many digits", (v) => {
    expect(ok(`$limit=${v}`).query.limit).toBe(1000)
  })

  it("clamps $skip to the largest offset, however many digits", () => {
    expect(ok("$skip=2147483647").query.skip).toBe(2147483647)
    expect(ok("$skip=2147483648").query.skip).toBe(2147483647)
    expect(ok("$skip=99999999999999999999999999").query.skip).toBe(2147483647)
    expect(ok("$skip=0005").query.skip).toBe(5)
  })

  it("accepts $limit=0 (count only)", () => {
    expect(ok("$limit=0").query.limit).toBe(0)
  })

  it.each(["-1", "1.5", "ten", "", "1e3", "0x10"])("rejects $limit=%s naming $limit", (v) => {
    const errors = bad(`$limit=${v}`)
    expect(Object.keys(errors)).toEqual(["$limit"])
    expect(errors.$limit).toMatch(/non-negative integer/)
  })

  it("rejects a repeated $limit (an array)", () => {
    expect(Object.keys(bad("$limit=1&$limit=2"))).toEqual(["$limit"])
  })

  it.each(["-5", "2.5", "abc"])("rejects $skip=%s naming $skip", (v) => {
    expect(Object.keys(bad(`$skip=${v}`))).toEqual(["$skip"])
  })

  it("the error message names the parameter", () => {
    const r = parse("$limit=-1")
    expect(Either.isLeft(r) && r.left.message).toBe("Invalid query: $limit must be a non-negative integer")
  })
})

describe("parseFindQuery: $sort and $select", () => {
  it("reads $sort[field]=1/-1 keeping the order of the keys", () => {
    expect(ok("$sort[name]=1&$sort[created_at]=-1").query.sort).toEqual([
      { field: "name", direction: 1 },
      { field: "created_at", direction: -1 }
    ])
    expect(ok("$sort[created_at]=-1&$sort[name]=1").query.sort).toEqual([
      { field: "created_at", direction: -1 },
      { field: "name", direction: 1 }
    ])
  })

  it("accepts percent-encoded brackets in $sort", () => {
    expect(ok("%24sort%5Bcount%5D=-1").query.sort).toEqual([{ field: "count", direction: -1 }])
  })

  it.each(["2", "0", "up", ""])("rejects direction %s", (d) => {
    expect(bad(`$sort[name]=${d}`)).toEqual({ "$sort.name": "must be 1 or -1" })
  })

  it("a direction that is not a single value is refused, never thrown (qs plainObjects / allowPrototypes)", () => {
    const left = (query: Record<string, unknown>) => {
      const r = parseFindQuery(query, options)
      return Either.isLeft(r) ? r.left.errors : "Right"
    }
    expect(left(qs.parse("$sort[name][a]=1", { plainObjects: true }) as Record<string, unknown>)).toEqual({
      "$sort.name": "must be 1 or -1"
    })
    expect(left(qs.parse("$sort[name][toString]=1", { allowPrototypes: true }) as Record<string, unknown>)).toEqual({
      "$sort.name": "must be 1 or -1"
    })
    expect(left(parseQs("$sort[name][]=1"))).toEqual({ "$sort.name": "must be 1 or -1" })
  })

  it("rejects an unknown sort field", () => {
    expect(bad("$sort[password]=1")).toEqual({ "$sort.password": "is not a field of this resource" })
  })

  it("rejects $sort without a field", () => {
    expect(Object.keys(bad("$sort=name"))).toEqual(["$sort"])
  })

  it("reads $select[]=a&$select[]=b", () => {
    expect(ok("$select[]=name&$select[]=count").query.select).toEqual(["name", "count"])
    expect(ok("$select[0]=enabled").query.select).toEqual(["enabled"])
  })

  it("rejects an unknown select field, naming its index", () => {
    expect(bad("$select[]=name&$select[]=secret_hash")).toEqual({ "$select.1": "is not a field of this resource" })
  })

  it("rejects inherited object properties as fields (constructor, toString, __proto__)", () => {
    expect(bad("$select[]=constructor")).toEqual({ "$select.0": "is not a field of this resource" })
    expect(bad("$select[]=__proto__")).toEqual({ "$select.0": "is not a field of this resource" })
    // Objects as a parser that allows prototype keys (Express 4 "extended") would hand them over.
    const asObject = (q: Record<string, unknown>) => parseFindQuery(q, options)
    const left = (r: Either.Either<ParsedQuery, InvalidInput>) => Either.isLeft(r) ? r.left.errors : "Right"
    expect(left(asObject({ toString: "x" }))).toEqual({ toString: "is not a field of this resource" })
    expect(left(asObject({ $sort: { valueOf: "1" } }))).toEqual({ "$sort.valueOf": "is not a field of this resource" })
    expect(left(asObject({ name: { toString: "x" } }))).toEqual({ "name.toString": "is not a supported operator" })
    expect(left(asObject({ name: { constructor: "x" } }))).toEqual({ "name.constructor": "is not a supported operator" })
  })
})

describe("parseFindQuery: equality and coercion", () => {
  it("turns field=value into an eq condition", () => {
    expect(ok("name=Acme").query.where).toEqual([{ _tag: "Compare", field: "name", op: "eq", value: "Acme" }])
  })

  it("`null` matches null", () => {
    expect(ok("description=null").query.where).toEqual([
      { _tag: "Compare", field: "description", op: "eq", value: null }
    ])
  })

  it("coerces numbers and booleans", () => {
    expect(ok("count=42&enabled=true").query.where).toEqual([
      { _tag: "Compare", field: "count", op: "eq", value: 42 },
      { _tag: "Compare", field: "enabled", op: "eq", value: true }
    ])
    expect(ok("count=-1.5&enabled=false").query.where).toEqual([
      { _tag: "Compare", field: "count", op: "eq", value: -1.5 },
      { _tag: "Compare", field: "enabled", op: "eq", value: false }
    ])
  })

  it("keeps a numeric-looking string as a string on a string field", () => {
    expect(ok("name=007").query.where).toEqual([{ _tag: "Compare", field: "name", op: "eq", value: "007" }])
  })

  it("a bad number is a 400 naming the field", () => {
    expect(bad("count=many")).toEqual({ count: "must be a number" })
    expect(bad("count=")).toEqual({ count: "must be a number" })
    expect(bad("count[$gt]=x")).toEqual({ "count.$gt": "must be a number" })
    expect(bad("count=0x10")).toEqual({ count: "must be a number" })
    expect(bad("count=1e3")).toEqual({ count: "must be a number" })
  })

  it("a bad boolean is a 400 naming the field", () => {
    expect(bad("enabled=yes")).toEqual({ enabled: "must be true or false" })
    expect(bad("enabled=1")).toEqual({ enabled: "must be true or false" })
  })

  it("normalizes timestamps to ISO 8601 UTC with milliseconds", () => {
    expect(ok("created_at=2026-11-22T10:00:00Z").query.where).toEqual([
      { _tag: "Compare", field: "created_at", op: "eq", value: "2026-11-22T10:00:00.000Z" }
    ])
    expect(ok("created_at[$gte]=2026-11-22T12:00:00%2B02:00").query.where).toEqual([
      { _tag: "Compare", field: "created_at", op: "gte", value: "2026-11-22T10:00:00.000Z" }
    ])
    expect(ok("created_at[$lt]=2026-01-01").query.where).toEqual([
      { _tag: "Compare", field: "created_at", op: "lt", value: "2026-01-01T00:00:00.000Z" }
    ])
  })

  it("rejects a timestamp that is not a date", () => {
    expect(bad("created_at=yesterday")).toEqual({ created_at: "must be an ISO 8601 date-time" })
    expect(bad("created_at=1700000000000")).toEqual({ created_at: "must be an ISO 8601 date-time" })
    expect(bad("created_at=2026-13-45")).toEqual({ created_at: "must be an ISO 8601 date-time" })
  })

  it("repeated field=a&field=b is a list of accepted values", () => {
    expect(ok("name=a&name=b").query.where).toEqual([{ _tag: "In", field: "name", negate: false, values: ["a", "b"] }])
  })

  it("refuses a nested object that is neither an operator nor a list", () => {
    expect(bad("name[first]=x")).toEqual({ "name.first": "is not a supported operator" })
  })
})

describe("parseFindQuery: operators", () => {
  const inAB = [{ _tag: "In", field: "name", negate: false, values: ["a", "b"] }]

  it("$in as name[$in][]=a&name[$in][]=b", () => {
    expect(ok("name[$in][]=a&name[$in][]=b").query.where).toEqual(inAB)
  })

  it("$in as repeated name[$in]=a&name[$in]=b", () => {
    expect(ok("name[$in]=a&name[$in]=b").query.where).toEqual(inAB)
  })

  it("$in with indices name[$in][0]=a&name[$in][1]=b", () => {
    expect(ok("name[$in][0]=a&name[$in][1]=b").query.where).toEqual(inAB)
    expect(ok("name[$in][0]=a").query.where).toEqual([{ _tag: "In", field: "name", negate: false, values: ["a"] }])
  })

  it("$in with a single value name[$in]=a", () => {
    expect(ok("name[$in]=a").query.where).toEqual([{ _tag: "In", field: "name", negate: false, values: ["a"] }])
  })

  it("$in with percent-encoded brackets", () => {
    expect(ok("name%5B%24in%5D=a&name%5B%24in%5D=b").query.where).toEqual(inAB)
    expect(ok("name%5B%24in%5D%5B%5D=a&name%5B%24in%5D%5B%5D=b").query.where).toEqual(inAB)
  })

  it("$in with large indices (qs makes an object) keeps index order", () => {
    expect(ok("count[$in][1500]=2&count[$in][1200]=1").query.where).toEqual([
      { _tag: "In", field: "count", negate: false, values: [1, 2] }
    ])
  })

  it("$in coerces every value, and names the bad one", () => {
    expect(ok("count[$in][]=1&count[$in][]=2").query.where).toEqual([
      { _tag: "In", field: "count", negate: false, values: [1, 2] }
    ])
    expect(bad("count[$in][]=1&count[$in][]=two")).toEqual({ "count.$in.1": "must be a number" })
  })

  it("$in accepts null among the values", () => {
    expect(ok("description[$in][]=null&description[$in][]=x").query.where).toEqual([
      { _tag: "In", field: "description", negate: false, values: [null, "x"] }
    ])
  })

  it("$nin", () => {
    expect(ok("name[$nin][]=a&name[$nin][]=b").query.where).toEqual([
      { _tag: "In", field: "name", negate: true, values: ["a", "b"] }
    ])
  })

  it("$ne, including $ne null", () => {
    expect(ok("name[$ne]=a").query.where).toEqual([{ _tag: "Compare", field: "name", op: "ne", value: "a" }])
    expect(ok("description[$ne]=null").query.where).toEqual([
      { _tag: "Compare", field: "description", op: "ne", value: null }
    ])
  })

  it("$lt, $lte, $gt, $gte on one field", () => {
    expect(ok("count[$gt]=1&count[$gte]=2&count[$lt]=10&count[$lte]=9").query.where).toEqual([
      { _tag: "Compare", field: "count", op: "gt", value: 1 },
      { _tag: "Compare", field: "count", op: "gte", value: 2 },
      { _tag: "Compare", field: "count", op: "lt", value: 10 },
      { _tag: "Compare", field: "count", op: "lte", value: 9 }
    ])
  })

  it("ordering comparisons with null are refused", () => {
    expect(bad("count[$gt]=null")).toEqual({ "count.$gt": "cannot compare with null" })
  })

  it("an unknown operator is refused", () => {
    expect(bad("name[$like]=a%25")).toEqual({ "name.$like": "is not a supported operator" })
    expect(bad("name[$regex]=.*")).toEqual({ "name.$regex": "is not a supported operator" })
  })

  it("$or with indices, each branch a conjunction", () => {
    expect(ok("$or[0][name]=a&$or[1][description]=b&$or[1][enabled]=true").query.where).toEqual([
      {
        _tag: "Or",
        branches: [
          [{ _tag: "Compare", field: "name", op: "eq", value: "a" }],
          [
            { _tag: "Compare", field: "description", op: "eq", value: "b" },
            { _tag: "Compare", field: "enabled", op: "eq", value: true }
          ]
        ]
      }
    ])
  })

  it("$or with an operator inside and a sibling condition", () => {
    const { query } = ok("count[$gte]=1&$or[0][name][$in][]=a&$or[0][name][$in][]=b&$or[1][count]=0")
    expect(query.where).toEqual([
      { _tag: "Compare", field: "count", op: "gte", value: 1 },
      {
        _tag: "Or",
        branches: [
          [{ _tag: "In", field: "name", negate: false, values: ["a", "b"] }],
          [{ _tag: "Compare", field: "count", op: "eq", value: 0 }]
        ]
      }
    ])
    expect(conditionFields(query.where)).toEqual(["count", "name", "count"])
  })

  it("$or with an unknown field names its path", () => {
    expect(bad("$or[0][name]=a&$or[1][owner]=b")).toEqual({ "$or.1.owner": "is not a field of this resource" })
  })

  it("$or that is not a list is refused", () => {
    expect(Object.keys(bad("$or=a"))).toEqual(["$or"])
    expect(Object.keys(bad("$or[name]=a"))).toEqual(["$or"])
  })

  it("a $-parameter inside $or is refused, even a passthrough one", () => {
    expect(bad("$or[0][$by_organization_user_id]=true")).toEqual({
      "$or.0.$by_organization_user_id": "is not allowed here"
    })
  })

  it("$or nested too deeply is refused", () => {
    expect(Object.keys(bad("$or[0][$or][0][$or][0][$or][0][$or][0][name]=a"))).toEqual([
      "$or.0.$or.0.$or.0.$or.0.$or.0"
    ])
    expect(conditionFields(ok("$or[0][$or][0][$or][0][$or][0][name]=a").query.where)).toEqual(["name"])
  })
})

describe("parseFindQuery: unknown names", () => {
  it("an unknown field is a Left naming it", () => {
    const r = parse("owner=x")
    expect(Either.isLeft(r)).toBe(true)
    if (Either.isLeft(r)) {
      expect(r.left.errors).toEqual({ owner: "is not a field of this resource" })
      expect(r.left.message).toContain("owner")
    }
  })

  it("an unknown $-parameter is a Left", () => {
    expect(bad("$foo=1")).toEqual({ $foo: "is not a supported query parameter" })
    expect(bad("$populate=owner")).toEqual({ $populate: "is not a supported query parameter" })
  })

  it("a passthrough parameter is returned in params, not as a condition", () => {
    const { params, query } = ok("$by_organization_user_id=true&name=a")
    expect(params).toEqual({ $by_organization_user_id: "true" })
    expect(query.where).toEqual([{ _tag: "Compare", field: "name", op: "eq", value: "a" }])
    // Without the option the same parameter is refused.
    expect(Object.keys(bad("$by_organization_user_id=true", { fields: options.fields }))).toEqual([
      "$by_organization_user_id"
    ])
  })

  it("json fields are refused in filters and sort", () => {
    expect(bad("metadata=x")).toEqual({ metadata: "cannot be used in a query" })
    expect(bad("metadata[a]=x")).toEqual({ metadata: "cannot be used in a query" })
    expect(bad("$sort[metadata]=1")).toEqual({ "$sort.metadata": "cannot be sorted on" })
    expect(bad("$or[0][metadata]=x")).toEqual({ "$or.0.metadata": "cannot be used in a query" })
  })

  it("json fields may still be selected", () => {
    expect(ok("$select[]=metadata").query.select).toEqual(["metadata"])
  })
})

describe("parseFindQuery: SQL metacharacters", () => {
  it.each([
    ["name;DROP TABLE x=1", "name;DROP TABLE x"],
    ["%22name%22=1", "\"name\""],
    ["\"name\"=1", "\"name\""],
    ["name--=1", "name--"],
    ["name%20OR%201=1", "name OR 1"],
    ["name)%20OR%20(1=1", "name) OR (1"],
    ["`name`=1", "`name`"]
  ])("a field name %s is refused", (query, field) => {
    expect(bad(query)).toEqual({ [field]: "is not a field of this resource" })
  })

  it("a sort field with SQL is refused", () => {
    expect(bad("$sort[name%20DESC;%20DROP%20TABLE%20x]=1")).toEqual({
      "$sort.name DESC; DROP TABLE x": "is not a field of this resource"
    })
  })

  it("in a value they are just strings", () => {
    expect(ok("name=x'%3B%20DROP%20TABLE%20api_keys%3B--").query.where).toEqual([
      { _tag: "Compare", field: "name", op: "eq", value: "x'; DROP TABLE api_keys;--" }
    ])
    expect(ok("name[$in][]=%22a%22%20OR%201%3D1&name[$in][]=b").query.where).toEqual([
      { _tag: "In", field: "name", negate: false, values: ["\"a\" OR 1=1", "b"] }
    ])
  })
})

describe("parseFindQuery on a real resource (API keys)", () => {
  const keyOptions: ParseOptions = { fields: ApiKeysResource.queryFields }

  it("accepts the output fields", () => {
    expect(ok("organization_id=o1&is_internal=false&enabled=true", keyOptions).query.where).toEqual([
      { _tag: "Compare", field: "organization_id", op: "eq", value: "o1" },
      { _tag: "Compare", field: "is_internal", op: "eq", value: false },
      { _tag: "Compare", field: "enabled", op: "eq", value: true }
    ])
  })

  it("refuses the private hash column and the transient secret", () => {
    expect(bad("secret_hash=h:x", keyOptions)).toEqual({ secret_hash: "is not a field of this resource" })
    expect(bad("secret=x", keyOptions)).toEqual({ secret: "is not a field of this resource" })
    expect(bad("$sort[secret_hash]=1", keyOptions)).toEqual({ "$sort.secret_hash": "is not a field of this resource" })
  })
})

describe("parseFindQuery: property", () => {
  const declared = new Set(Object.keys(options.fields))
  const fieldNames = fc.constantFrom(...declared, "$or", "$in", "$limit", "$skip", "$sort", "$select", "$foo")
  const tricky = fc.constantFrom("constructor", "toString", "__proto__", "valueOf", "hasOwnProperty", "name;--", "0")
  const key = fc.oneof(fieldNames, tricky, fc.string())
  const opKey = fc.constantFrom("$in", "$nin", "$ne", "$lt", "$lte", "$gt", "$gte", "$eq", "0", "1", "toString")
  const scalar = fc.oneof(
    fc.string(),
    fc.constantFrom("null", "true", "false", "1", "-1", "2026-01-01T00:00:00Z", ""),
    fc.integer().map(String)
  )
  const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      scalar,
      fc.array(scalar, { maxLength: 4 }),
      fc.dictionary(fc.oneof(opKey, key), tie("value"), { maxKeys: 3 })
    )
  })).value
  const query = fc.dictionary(key, value, { maxKeys: 6 })

  it("never throws, and a Right only ever names declared fields", () => {
    fc.assert(
      fc.property(query, (q) => {
        const r = parseFindQuery(q as Record<string, unknown>, options)
        expect(Either.isEither(r)).toBe(true)
        if (Either.isRight(r)) {
          for (const f of conditionFields(r.right.query.where)) expect(declared.has(f)).toBe(true)
          for (const s of r.right.query.sort) expect(declared.has(s.field)).toBe(true)
          for (const s of r.right.query.select ?? []) expect(declared.has(s)).toBe(true)
          expect(r.right.query.limit).toBeGreaterThanOrEqual(0)
          expect(r.right.query.limit).toBeLessThanOrEqual(1000)
        } else {
          expect(r.left._tag).toBe("InvalidInput")
          expect(Object.keys(r.left.errors ?? {}).length).toBe(1)
        }
      }),
      { numRuns: 2000 }
    )
  })

  it("the same holds for strings parsed by qs", () => {
    const part = fc.oneof(
      fc.constantFrom("name", "count", "$or", "[0]", "[1]", "[$in]", "[]", "[$gt]", "%5B", "%5D", "=", "&", "$sort"),
      fc.string({ maxLength: 6 })
    )
    fc.assert(
      fc.property(fc.array(part, { maxLength: 12 }), (parts) => {
        const r = parse(parts.join(""))
        if (Either.isRight(r)) {
          for (const f of conditionFields(r.right.query.where)) expect(declared.has(f)).toBe(true)
        }
      }),
      { numRuns: 2000 }
    )
  })
})

describe("parseFindQuery: computed filters", () => {
  const withState: ParseOptions = {
    ...options,
    views: ["regulation"],
    filters: { state: { values: ["on", "off", "gone"], description: "the state" } }
  }

  it("hands back one value, several, or $in, apart from the conditions", () => {
    for (const [query, values] of [
      ["state=on", ["on"]],
      ["state=on&state=gone", ["on", "gone"]],
      ["state[$in]=on&state[$in]=off", ["on", "off"]],
      ["state[$in][]=off", ["off"]],
      ["state[$in]=gone", ["gone"]]
    ] as const) {
      const parsed = ok(`${query}&name=a&regulation=ccpa`, withState)
      expect(parsed.filters, query).toEqual({ state: values })
      expect(parsed.query.where).toEqual([{ _tag: "Compare", field: "name", op: "eq", value: "a" }])
      expect(parsed.view).toEqual({ regulation: "ccpa" })
    }
    expect(ok("name=a", withState).filters).toEqual({})
  })

  it("refuses other values, other operators, and the filter inside $or, naming it", () => {
    expect(bad("state=later", withState)).toEqual({ state: "must be one of on, off, gone" })
    expect(bad("state[$in]=on&state[$in]=later", withState)).toEqual({ state: "must be one of on, off, gone" })
    expect(bad("state[$ne]=on", withState)).toEqual({ state: "supports only equality and $in" })
    expect(bad("state[$in]=on&state[$nin]=off", withState)).toEqual({ state: "supports only equality and $in" })
    expect(bad("state[x]=on", withState)).toEqual({ state: "supports only equality and $in" })
    expect(Object.keys(bad("$or[0][state]=on", withState))).toEqual(["$or.0.state"])
    expect(Object.keys(bad("$sort[state]=1", withState))).toEqual(["$sort.state"])
    // Without the declaration it is no field at all.
    expect(bad("state=on")).toEqual({ state: "is not a field of this resource" })
  })
})
