import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { flattenPayload } from "../src/Webhooks/Flatten.js"

describe("flattenPayload examples", () => {
  it("user.consent_expired: the time it lapsed beside the entity's keys", () => {
    const flat = flattenPayload({
      type: "user.consent_expired",
      regulation: "gdpr",
      parameters: { entity: { id: "u1", consent_state: "expired" }, expired_at: "2026-01-01T10:00:00.000Z" }
    })
    expect(flat).toStrictEqual({
      type: "user.consent_expired",
      regulation: "gdpr",
      parameters__entity__id: "u1",
      parameters__entity__consent_state: "expired",
      parameters__expired_at: "2026-01-01T10:00:00.000Z"
    })
  })
  it("event.created: purposes keyed by their id, the rest by path", () => {
    const flat = flattenPayload({
      type: "event.created",
      regulation: "gdpr",
      parameters: {
        entity: {
          id: "ev1",
          created_at: "2026-01-01T10:00:00.000Z",
          organization_id: "org1",
          user: { id: "u1", organization_user_id: "crm-42" },
          consents: {
            purposes: [{ id: "cookies", enabled: true }, { id: "analytics", enabled: false, enabled_li: true }],
            vendors: { enabled: ["google", "facebook"], disabled: [] }
          }
        }
      }
    })
    expect(flat).toStrictEqual({
      type: "event.created",
      regulation: "gdpr",
      parameters__entity__id: "ev1",
      parameters__entity__created_at: "2026-01-01T10:00:00.000Z",
      parameters__entity__organization_id: "org1",
      parameters__entity__user__id: "u1",
      parameters__entity__user__organization_user_id: "crm-42",
      parameters__entity__consents__purposes__cookies__id: "cookies",
      parameters__entity__consents__purposes__cookies__enabled: true,
      parameters__entity__consents__purposes__analytics__id: "analytics",
      parameters__entity__consents__purposes__analytics__enabled: false,
      parameters__entity__consents__purposes__analytics__enabled_li: true,
      // arrays of scalars by index; the empty array contributes nothing
      parameters__entity__consents__vendors__enabled__0: "google",
      parameters__entity__consents__vendors__enabled__1: "facebook"
    })
  })

  it("user.updated: new_entity under parameters__entity__, old_entity and source left out", () => {
    const flat = flattenPayload({
      type: "user.updated",
      regulation: "lgpd",
      parameters: {
        source: { id: "ev9", consents: { purposes: [{ id: "p", enabled: true }] } },
        old_entity: { id: "u1", country: "FR", consents: {} },
        new_entity: {
          id: "u1",
          country: null,
          metadata: { crm: { tags: ["a", "b"], score: 3, nested: { deep: { x: null } }, empty: {} } },
          consents: { gdpr: { purposes: [{ id: "p", enabled: true, metadata: { via: "banner" } }], vendors: {}, tcfcs: "CP" } }
        }
      }
    })
    expect(flat).toStrictEqual({
      type: "user.updated",
      regulation: "lgpd",
      parameters__entity__id: "u1",
      parameters__entity__country: null,
      parameters__entity__metadata__crm__tags__0: "a",
      parameters__entity__metadata__crm__tags__1: "b",
      parameters__entity__metadata__crm__score: 3,
      parameters__entity__metadata__crm__nested__deep__x: null,
      parameters__entity__consents__gdpr__purposes__p__id: "p",
      parameters__entity__consents__gdpr__purposes__p__enabled: true,
      parameters__entity__consents__gdpr__purposes__p__metadata__via: "banner",
      parameters__entity__consents__gdpr__tcfcs: "CP"
    })
  })

  it("arrays of objects key by numeric ids too; arrays with an element lacking an id key every element by index", () => {
    const flat = flattenPayload({
      type: "event.deleted",
      regulation: "gdpr",
      parameters: {
        entity: {
          byNumber: [{ id: 7, v: "x" }, { id: 12, v: "y" }],
          mixed: [{ id: "a", v: 1 }, { v: 2 }],
          noIds: [{ v: 1 }, { v: 2 }],
          nested: [[1, 2], [], [{ id: "k", on: true }]],
          scalars: [true, null, 0, "s"]
        }
      }
    })
    expect(flat).toStrictEqual({
      type: "event.deleted",
      regulation: "gdpr",
      parameters__entity__byNumber__7__id: 7,
      parameters__entity__byNumber__7__v: "x",
      parameters__entity__byNumber__12__id: 12,
      parameters__entity__byNumber__12__v: "y",
      parameters__entity__mixed__0__id: "a",
      parameters__entity__mixed__0__v: 1,
      parameters__entity__mixed__1__v: 2,
      parameters__entity__noIds__0__v: 1,
      parameters__entity__noIds__1__v: 2,
      parameters__entity__nested__0__0: 1,
      parameters__entity__nested__0__1: 2,
      parameters__entity__nested__2__k__id: "k",
      parameters__entity__nested__2__k__on: true,
      parameters__entity__scalars__0: true,
      parameters__entity__scalars__1: null,
      parameters__entity__scalars__2: 0,
      parameters__entity__scalars__3: "s"
    })
  })

  it("a repeated id: the later element's leaves win, the earlier element's other leaves stay", () => {
    const flat = flattenPayload({
      type: "event.created",
      regulation: "gdpr",
      parameters: { entity: { purposes: [{ id: "p", enabled: true, enabled_li: true }, { id: "p", enabled: false }] } }
    })
    expect(flat).toStrictEqual({
      type: "event.created",
      regulation: "gdpr",
      parameters__entity__purposes__p__id: "p",
      parameters__entity__purposes__p__enabled: false,
      parameters__entity__purposes__p__enabled_li: true
    })
  })

  it("reads values as JSON.stringify would (toJSON, undefined, non-finite numbers)", () => {
    const entity = {
      when: new Date("2026-01-01T00:00:00.000Z"),
      gone: undefined,
      fn: () => 1,
      inf: Number.POSITIVE_INFINITY,
      list: [undefined, 1],
      // eslint-disable-next-line no-sparse-arrays
      sparse: [, 2]
    }
    const payload = { type: "event.created", regulation: "gdpr", parameters: { entity } }
    const flat = flattenPayload(payload)
    expect(flat).toStrictEqual({
      type: "event.created",
      regulation: "gdpr",
      parameters__entity__when: "2026-01-01T00:00:00.000Z",
      parameters__entity__inf: null,
      parameters__entity__list__0: null,
      parameters__entity__list__1: 1,
      parameters__entity__sparse__0: null,
      parameters__entity__sparse__1: 2
    })
    expect(flat).toStrictEqual(flattenPayload(JSON.parse(JSON.stringify(payload))))
  })

  it("no entity at all gives only type and regulation; an empty entity too", () => {
    expect(flattenPayload({ type: "user.deleted", regulation: "gdpr", parameters: {} })).toStrictEqual({
      type: "user.deleted",
      regulation: "gdpr"
    })
    expect(flattenPayload({ type: "user.deleted", regulation: "gdpr", parameters: { entity: {}, other: { a: 1 } } }))
      .toStrictEqual({ type: "user.deleted", regulation: "gdpr" })
  })

  it("rejects a cycle like JSON.stringify", () => {
    const entity: Record<string, unknown> = { a: 1 }
    entity.self = entity
    expect(() => flattenPayload({ type: "event.created", regulation: "gdpr", parameters: { entity } })).toThrow(TypeError)
  })
})

// ---------------------------------------------------------------- properties

/**
 * Keys and string ids without `_`, so joining a path with `__` is unambiguous and distinct
 * paths give distinct keys (the property "each leaf exactly once" needs that).
 */
const segment = fc.oneof(
  fc.string({ maxLength: 5 }).filter((s) => !s.includes("_")),
  // Names every object inherits are keys and ids like any other.
  fc.constantFrom("constructor", "toString", "hasOwnProperty", "valueOf")
)
const key = segment.filter((s) => s !== "id")
const idArb = fc.oneof(segment, fc.integer({ min: -50, max: 1000 }))
const scalar = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.string({ maxLength: 5 })
)

/** Arbitrary JSON trees; arrays of objects may carry ids, unique within their array. */
const tree = fc.letrec<{
  value: unknown
  object: Record<string, unknown>
  array: Array<unknown>
  idArray: Array<unknown>
  mixedArray: Array<unknown>
}>(
  (tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      scalar,
      tie("object"),
      tie("array"),
      tie("idArray"),
      tie("mixedArray")
    ),
    object: fc.dictionary(key, tie("value"), { maxKeys: 4 }),
    array: fc.array(tie("value"), { maxLength: 4 }),
    idArray: fc
      .uniqueArray(fc.tuple(idArb, tie("object")), { selector: ([id]) => String(id), minLength: 1, maxLength: 4 })
      .map((xs) => xs.map(([id, o]) => ({ ...o, id }))),
    // some elements carry an id, at least one does not: keyed by index
    mixedArray: fc
      .tuple(tie("idArray"), fc.array(tie("value"), { minLength: 1, maxLength: 2 }))
      .map(([withIds, others]) => [...others, ...withIds])
  })
)
const entityArb = tree.object

type Leaf = { path: Array<string>; value: unknown }

/**
 * Reference walker, written independently of the implementation: an explicit work stack, and
 * the spec's rule read literally — an array is keyed by id when every element is a plain object
 * whose `id` is a string or a number.
 */
const leaves = (root: unknown): Array<Leaf> => {
  const found: Array<Leaf> = []
  const stack: Array<Leaf> = [{ path: [], value: root }]
  while (stack.length > 0) {
    const { path, value } = stack.pop()!
    if (Array.isArray(value)) {
      const keyedById = value.length > 0 && value.every((x) =>
        typeof x === "object" && x !== null && !Array.isArray(x) && ["string", "number"].includes(typeof (x as any).id)
      )
      value.forEach((x, i) => stack.push({ path: [...path, keyedById ? `${(x as any).id}` : `${i}`], value: x }))
    } else if (typeof value === "object" && value !== null) {
      for (const [k, x] of Object.entries(value)) stack.push({ path: [...path, k], value: x })
    } else {
      found.push({ path, value })
    }
  }
  return found
}

const keyOf = (path: ReadonlyArray<string>) => ["parameters", "entity", ...path].join("__")
const isScalar = (v: unknown) => v === null || ["string", "number", "boolean"].includes(typeof v)

const payloadArb = fc.record({
  type: fc.constantFrom("event.created", "event.updated", "event.deleted", "user.created", "user.updated", "user.deleted"),
  regulation: fc.constantFrom("gdpr", "ccpa", "lgpd", "constructor", "__proto__"),
  slot: fc.constantFrom("entity", "new_entity"),
  entity: entityArb
})

describe("flattenPayload properties", () => {
  it("(a) every leaf of entity/new_entity appears exactly once, under its path, with its value", () => {
    fc.assert(
      fc.property(payloadArb, ({ type, regulation, slot, entity }) => {
        const flat = flattenPayload({ type, regulation, parameters: { [slot]: entity } })
        const ls = leaves(entity)
        const keys = ls.map((l) => keyOf(l.path))
        expect(new Set(keys).size).toBe(keys.length) // distinct leaves, distinct keys
        for (const l of ls) {
          const k = keyOf(l.path)
          expect(Object.prototype.hasOwnProperty.call(flat, k)).toBe(true)
          expect(Object.is(flat[k], l.value)).toBe(true)
        }
      })
    )
  })

  it("(b) nothing else appears: every other key is under parameters__entity__ and is a leaf's key", () => {
    fc.assert(
      fc.property(payloadArb, ({ type, regulation, slot, entity }) => {
        const flat = flattenPayload({ type, regulation, parameters: { [slot]: entity } })
        const expected = new Set(leaves(entity).map((l) => keyOf(l.path)))
        expect(flat.type).toBe(type)
        expect(flat.regulation).toBe(regulation)
        const rest = Object.keys(flat).filter((k) => k !== "type" && k !== "regulation")
        for (const k of rest) {
          expect(k.startsWith("parameters__entity__")).toBe(true)
          expect(expected.has(k)).toBe(true)
        }
        expect(rest.length).toBe(expected.size)
      })
    )
  })

  it("(c) every value is a JSON scalar or null, for any JSON entity", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (entity, newEntity) => {
        const flat = flattenPayload({ type: "user.updated", regulation: "gdpr", parameters: { entity, new_entity: newEntity } })
        for (const v of Object.values(flat)) expect(isScalar(v)).toBe(true)
        for (const v of Object.values(flat)) if (typeof v === "number") expect(Number.isFinite(v)).toBe(true)
      })
    )
  })

  it("(d) old_entity and source never contribute keys", () => {
    fc.assert(
      fc.property(payloadArb, fc.jsonValue(), fc.jsonValue(), ({ type, regulation, slot, entity }, oldEntity, source) => {
        const without = flattenPayload({ type, regulation, parameters: { [slot]: entity } })
        const withThem = flattenPayload({ type, regulation, parameters: { [slot]: entity, old_entity: oldEntity, source } })
        expect(withThem).toStrictEqual(without)
        expect(flattenPayload({ type, regulation, parameters: { old_entity: oldEntity, source } }))
          .toStrictEqual({ type, regulation })
      })
    )
  })

  it("flattening a payload equals flattening its JSON text", () => {
    fc.assert(
      fc.property(payloadArb, ({ type, regulation, slot, entity }) => {
        const payload = { type, regulation, parameters: { [slot]: entity } }
        const viaJson = flattenPayload(JSON.parse(JSON.stringify(payload)))
        const direct = flattenPayload(payload)
        // JSON turns -0 into 0; compare through JSON for that reason only
        expect(JSON.stringify(direct)).toBe(JSON.stringify(viaJson))
      })
    )
  })
})
