import fc from "fast-check"
import { beforeAll, describe, expect, it } from "vitest"
import { as, type Reply } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * Property-based fuzzing driven by the OpenAPI document, so every service is covered without a
 * list to keep up to date: random create bodies (built from each service's own field names,
 * with values of every JSON type), random find query strings, random patches of the caller's
 * own objects. Never a 5xx; every 4xx has the contract's error body; a rejected write changes
 * nothing.
 */
let call: ReturnType<typeof as>
let orgId: string
let keyId: string
let paths: Record<string, Record<string, any>>
let schemas: Record<string, any>

const { server, op, tenant } = useServer({ webhookAllowHosts: ["127.0.0.1"] })

beforeAll(async () => {
  const t = await tenant()
  const flags = await op.featuresOf(t.org.id)
  // Every premium feature on, so requests reach the deepest validation rather than a 403.
  const all = Object.fromEntries(Object.keys(flags).filter((k) => typeof flags[k] === "boolean").map((k) => [k, true]))
  expect((await op.call("PATCH", `/v1/premium-features/${flags.id}`, { body: all })).status).toBe(200)
  call = as(server.url, t.token)
  orgId = t.org.id
  keyId = t.key.id
  const doc = (await call("GET", "/openapi.json")).body
  paths = doc.paths
  schemas = doc.components.schemas
})

const expectContract = (r: Reply, context: string) => {
  expect(r.status, `${context}: ${r.text.slice(0, 300)}`).toBeLessThan(500)
  if (r.status >= 400) {
    expect(r.body, context).toMatchObject({ code: r.status })
    expect(typeof r.body.name, context).toBe("string")
    expect(typeof r.body.message, context).toBe("string")
    expect(typeof r.body.className, context).toBe("string")
  }
}

/** Names every JavaScript object inherits: as keys or values they must be plain names. */
const prototypeNames = [
  "constructor",
  "__proto__",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "isPrototypeOf",
  "propertyIsEnumerable",
  "toLocaleString",
  "__defineGetter__",
  "__lookupSetter__"
]
const protoName = fc.constantFrom(...prototypeNames)
const keyName = (maxLength: number) => fc.oneof(fc.string({ maxLength }), protoName)

const value = fc.oneof(
  fc.string({ maxLength: 40 }),
  protoName,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string({ maxLength: 8 }), { maxLength: 3 }),
  fc.dictionary(keyName(8), fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean()), { maxKeys: 3 }),
  fc.constantFrom("' OR 1=1 --", "\"; DROP TABLE api_keys; --", "__proto__", "https://127.0.0.1/x", "2026-01-01T00:00:00Z")
)

/** A body made of the service's own fields (from its input schema) plus stray keys. */
const bodyFor = (schemaName: string | undefined) => {
  const fields = Object.keys(schemaName ? schemas[schemaName]?.properties ?? {} : {})
  const known = fields.length > 0
    ? fc.dictionary(fc.constantFrom(...fields), value, { maxKeys: Math.min(fields.length, 6) })
    : fc.constant({})
  return fc.tuple(known, fc.dictionary(keyName(10), value, { maxKeys: 2 }), fc.boolean()).map(
    ([k, extra, ownOrg]) => ({ ...(Math.random() < 0.2 ? extra : {}), ...k, ...(ownOrg ? { organization_id: orgId } : {}) })
  )
}

const refOf = (op: any) => {
  const ref = op?.requestBody?.content?.["application/json"]?.schema?.$ref as string | undefined
  return ref?.split("/").pop()
}

const totalOf = async (path: string) => {
  const r = await call("GET", `${path}?$limit=0`)
  return r.status === 200 ? r.body.total as number : undefined
}

describe("fuzzing every service of the OpenAPI document", () => {
  it("create bodies: never a 5xx, contract errors, nothing written on a rejection", async () => {
    const creates = Object.entries(paths).filter(([p, ops]) => ops.post && !p.includes("{") && p !== "/v1/sessions")
    expect(creates.length).toBeGreaterThan(15)
    for (const [path, ops] of creates) {
      const url = path.replace(/^\/v1/, "/v1")
      await fc.assert(
        fc.asyncProperty(bodyFor(refOf(ops.post)), async (body) => {
          const before = ops.get ? await totalOf(url) : undefined
          const r = await call("POST", url, { body })
          expectContract(r, `POST ${path} ${JSON.stringify(body).slice(0, 200)}`)
          if (r.status >= 400 && before !== undefined) expect(await totalOf(url), `POST ${path} wrote despite ${r.status}`).toBe(before)
        }),
        { numRuns: 15 }
      )
    }
  }, 180_000)

  it("find query strings: never a 5xx, contract errors", async () => {
    const finds = Object.entries(paths).filter(([p, ops]) => ops.get && !p.includes("{") && p.startsWith("/v1/"))
    const key = fc.oneof(
      fc.string({ maxLength: 12 }),
      protoName,
      protoName.map((n) => `$sort[${n}]`),
      protoName.map((n) => `$select[]=${n}`),
      protoName.map((n) => `${n}[$in][]`),
      fc.constantFrom("$limit", "$skip", "$sort[created_at]", "$select[]", "$or[0][name]", "name[$in][]", "created_at[$gt]", "id[$nin]", "organization_id", "__proto__[x]", "name[$regex]", "regulation", "$or[0][constructor]")
    )
    const query = fc.array(fc.tuple(key, keyName(12)), { maxLength: 4 }).map((pairs) =>
      pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&")
    )
    for (const [path] of finds) {
      await fc.assert(
        fc.asyncProperty(query, fc.string({ maxLength: 30 }), async (q, raw) => {
          expectContract(await call("GET", `${path}?${q}`), `GET ${path}?${q}`)
          expectContract(await call("GET", `${path}?${raw}`), `GET ${path}?${raw}`)
        }),
        { numRuns: 10 }
      )
    }
  }, 180_000)

  it("patches of the caller's own key and organization: never a 5xx; a rejected patch changes nothing", async () => {
    for (const [path, id, schema] of [["/v1/keys", keyId, "KeysPatch"], ["/v1/organizations", orgId, "OrganizationsPatch"]] as const) {
      await fc.assert(
        fc.asyncProperty(bodyFor(schema), async (body) => {
          const before = (await call("GET", `${path}/${id}`)).body
          const r = await call("PATCH", `${path}/${id}`, { body })
          expectContract(r, `PATCH ${path} ${JSON.stringify(body).slice(0, 200)}`)
          if (r.status >= 400) expect((await call("GET", `${path}/${id}`)).body).toEqual(before)
        }),
        { numRuns: 40 }
      )
    }
  }, 120_000)

  it("malformed and hostile bodies on every create: 400 or 413, never a 5xx", async () => {
    const creates = Object.keys(paths).filter((p) => paths[p]!.post && !p.includes("{"))
    const bodies = ["{", "[]", "null", "\"text\"", "{\"a\":" + "[".repeat(5000) + "]".repeat(5000) + "}", "{\"__proto__\":{\"x\":1}}"]
    for (const path of creates) {
      for (const raw of bodies) {
        const r = await call("POST", path, { rawBody: raw })
        expectContract(r, `POST ${path} ${raw.slice(0, 30)}`)
        expect(r.status, `POST ${path} ${raw.slice(0, 30)}`).toBeGreaterThanOrEqual(400)
      }
    }
  }, 120_000)
})

describe("fuzzing consent events whose map keys are prototype names", () => {
  it("regulations, purpose ids, vendor ids and metadata keys of any name: accepted, shown back, never a 5xx", async () => {
    const regulation = fc.constantFrom("gdpr", "ccpa", "constructor", "__proto__")
    const id = keyName(6).filter((s) => s.length > 0)
    const metadata = fc.dictionary(keyName(6), fc.oneof(fc.string({ maxLength: 6 }), fc.integer()), { maxKeys: 3 })
    const event = fc.record({
      regulation,
      user: fc.record({ organization_user_id: fc.constantFrom("fuzz-a", "fuzz-b", "constructor", "__proto__"), metadata }),
      metadata,
      consents: fc.record({
        purposes: fc.array(fc.record({ id, enabled: fc.boolean(), metadata }), { maxLength: 3 }),
        vendors: fc.record({ enabled: fc.array(id, { maxLength: 2 }), disabled_li: fc.array(id, { maxLength: 2 }) })
      })
    })
    await fc.assert(
      fc.asyncProperty(event, async (e) => {
        const r = await call("POST", "/v1/consents/events", { body: { organization_id: orgId, ...e } })
        expect(r.status, r.text).toBe(201)
        expect(r.body.regulation).toBe(e.regulation)
        const shown = await call("GET", `/v1/consents/users/${r.body.user.id}?regulation=${encodeURIComponent(e.regulation)}`)
        expect(shown.status, shown.text).toBe(200)
        expect(shown.body.regulation).toBe(e.regulation)
        const ids = new Set(shown.body.consents.purposes.map((p: { id: string }) => p.id))
        for (const p of e.consents.purposes) expect(ids.has(p.id), p.id).toBe(true)
      }),
      { numRuns: 40 }
    )
  }, 120_000)
})
