import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { emptyState, mergeAll, mergeEvent, sameConsents } from "../src/Consents/Merge.js"
import type { ConsentPurpose, ConsentState, EventConsents } from "../src/Domain/Consent.js"

type Ev = { id: string; created_at: string; consents: EventConsents; gpc?: boolean; gpc_override?: boolean }

const at = (minute: number) => `2026-01-01T10:${String(minute).padStart(2, "0")}:00.000Z`
const ev = (id: string, minute: number, consents: EventConsents): Ev => ({ id, created_at: at(minute), consents })

describe("mergeEvent", () => {
  it("on the empty state takes the event's choices and its created_at", () => {
    const s = mergeEvent(emptyState, ev("e1", 1, {
      purposes: [{ id: "analytics", enabled: true }, { id: "ads", enabled: false, enabled_li: true }],
      vendors: { enabled: ["v1"], disabled: ["v2"] },
      tcfcs: "CP1"
    }))
    expect(s).toStrictEqual({
      purposes: [{ id: "analytics", enabled: true }, { id: "ads", enabled: false, enabled_li: true }],
      vendors: { enabled: ["v1"], disabled: ["v2"] },
      tcfcs: "CP1",
      updated_at: at(1)
    })
  })

  it("an empty event changes nothing but updated_at, and emptyState is untouched", () => {
    const s = mergeEvent(emptyState, ev("e1", 3, {}))
    expect(s).toStrictEqual({ purposes: [], vendors: {}, updated_at: at(3) })
    expect(emptyState).toStrictEqual({ purposes: [], vendors: {} })
  })

  it("replaces a mentioned purpose entirely, keeps the others in place, appends new ones in event order", () => {
    const before: ConsentState = {
      purposes: [
        { id: "a", enabled: true, enabled_li: true, metadata: { source: "banner" } },
        { id: "b", enabled: false },
        { id: "c", enabled: true, metadata: { x: 1 } }
      ],
      vendors: {}
    }
    const s = mergeEvent(before, ev("e2", 2, {
      purposes: [{ id: "z", enabled: true }, { id: "a", enabled: false }, { id: "y", enabled: false, metadata: { k: "v" } }]
    }))
    expect(s.purposes).toStrictEqual([
      // enabled_li and metadata of the old `a` are gone: the event's purpose replaces it
      { id: "a", enabled: false },
      { id: "b", enabled: false },
      { id: "c", enabled: true, metadata: { x: 1 } },
      { id: "z", enabled: true },
      { id: "y", enabled: false, metadata: { k: "v" } }
    ])
  })

  it("a purpose named twice in one event: the later entry wins, at the first position", () => {
    const s = mergeEvent(emptyState, ev("e", 1, {
      purposes: [{ id: "a", enabled: true }, { id: "b", enabled: true }, { id: "a", enabled: false, enabled_li: false }]
    }))
    expect(s.purposes).toStrictEqual([{ id: "a", enabled: false, enabled_li: false }, { id: "b", enabled: true }])
  })

  it("moves a vendor from enabled to disabled and back, the li status separately", () => {
    const s1 = mergeEvent(emptyState, ev("e1", 1, { vendors: { enabled: ["v1", "v2", "v3"], enabled_li: ["v1"] } }))
    expect(s1.vendors).toStrictEqual({ enabled: ["v1", "v2", "v3"], enabled_li: ["v1"] })

    const s2 = mergeEvent(s1, ev("e2", 2, { vendors: { disabled: ["v2"] } }))
    // the li status of v1 is untouched by a consent change and vice versa
    expect(s2.vendors).toStrictEqual({ enabled: ["v1", "v3"], disabled: ["v2"], enabled_li: ["v1"] })

    const s3 = mergeEvent(s2, ev("e3", 3, { vendors: { disabled_li: ["v1", "v4"], enabled: ["v2", "v1"] } }))
    expect(s3.vendors).toStrictEqual({ enabled: ["v1", "v3", "v2"], disabled_li: ["v1", "v4"] })
  })

  it("lists each vendor once and omits empty lists", () => {
    const s = mergeEvent(
      { purposes: [], vendors: { enabled: ["v1"], disabled: ["v2"] } },
      ev("e", 1, { vendors: { enabled: ["v1", "v1", "v2"], disabled: [], disabled_li: [] } })
    )
    expect(s.vendors).toStrictEqual({ enabled: ["v1", "v2"] })
  })

  it("a vendor both enabled and disabled in one event ends disabled (refusal wins)", () => {
    const s = mergeEvent(emptyState, ev("e", 1, {
      vendors: { enabled: ["v1", "v2"], disabled: ["v1"], enabled_li: ["v3"], disabled_li: ["v3"] }
    }))
    expect(s.vendors).toStrictEqual({ enabled: ["v2"], disabled: ["v1"], disabled_li: ["v3"] })
  })

  it("keeps tcfcs when the event has none, replaces it when it has one", () => {
    const s1 = mergeEvent(emptyState, ev("e1", 1, { tcfcs: "AAA" }))
    const s2 = mergeEvent(s1, ev("e2", 2, { purposes: [{ id: "p", enabled: true }] }))
    expect(s2.tcfcs).toBe("AAA")
    expect(s2.updated_at).toBe(at(2))
    const s3 = mergeEvent(s2, ev("e3", 3, { tcfcs: "BBB" }))
    expect(s3.tcfcs).toBe("BBB")
  })

  it("keeps gpp and gpp_sid when the event has none, replaces each with the event's, independently of tcfcs", () => {
    const s1 = mergeEvent(emptyState, ev("e1", 1, { gpp: "DBABMA~CQ", gpp_sid: [2], tcfcs: "T" }))
    const s2 = mergeEvent(s1, ev("e2", 2, { tcfcs: "U" }))
    expect([s2.gpp, s2.gpp_sid, s2.tcfcs]).toStrictEqual(["DBABMA~CQ", [2], "U"])
    const s3 = mergeEvent(s2, ev("e3", 3, { gpp: "DBABzw~1Y--", gpp_sid: [6] }))
    expect([s3.gpp, s3.gpp_sid, s3.tcfcs]).toStrictEqual(["DBABzw~1Y--", [6], "U"])
    expect(sameConsents(s2, s3)).toBe(false)
    expect(sameConsents(s3, { ...s3, gpp_sid: [6, 2] })).toBe(false)
    expect(sameConsents(s3, { ...s3, updated_at: at(9) })).toBe(true)
  })

  it("does not mutate its inputs", () => {
    const state: ConsentState = { purposes: [{ id: "a", enabled: true }], vendors: { enabled: ["v1"] }, tcfcs: "X" }
    const snapshot = structuredClone(state)
    const event = ev("e", 1, { purposes: [{ id: "a", enabled: false }], vendors: { disabled: ["v1"] } })
    const eventSnapshot = structuredClone(event)
    mergeEvent(state, event)
    expect(state).toStrictEqual(snapshot)
    expect(event).toStrictEqual(eventSnapshot)
  })
})

describe("mergeAll", () => {
  it("of no events is the empty state", () => {
    expect(mergeAll([])).toStrictEqual(emptyState)
  })

  it("applies events in order of created_at, whatever the input order", () => {
    const later = ev("a-later", 5, { purposes: [{ id: "p", enabled: false }], tcfcs: "LATE" })
    const earlier = ev("z-earlier", 1, { purposes: [{ id: "p", enabled: true }, { id: "q", enabled: true }], tcfcs: "EARLY" })
    const s = mergeAll([later, earlier])
    expect(s).toStrictEqual({
      purposes: [{ id: "p", enabled: false }, { id: "q", enabled: true }],
      vendors: {},
      tcfcs: "LATE",
      updated_at: at(5)
    })
  })

  it("breaks created_at ties by id", () => {
    const e1 = ev("e1", 1, { purposes: [{ id: "p", enabled: true }] })
    const e2 = ev("e2", 1, { purposes: [{ id: "p", enabled: false }] })
    expect(mergeAll([e2, e1]).purposes).toStrictEqual([{ id: "p", enabled: false }])
    expect(mergeAll([e1, e2]).purposes).toStrictEqual([{ id: "p", enabled: false }])
  })

  it("orders by instant, not by the text of created_at", () => {
    // 09:30Z written with an offset sorts before 10:00Z although its text sorts after
    const a = { id: "a", created_at: "2026-01-01T11:30:00.000+02:00", consents: { tcfcs: "A" } }
    const b = { id: "b", created_at: "2026-01-01T10:00:00.000Z", consents: { tcfcs: "B" } }
    expect(mergeAll([a, b]).tcfcs).toBe("B")
  })

  it("merges whatever it is given: choosing confirmed events is the caller's concern", () => {
    const pending = { ...ev("e2", 2, { purposes: [{ id: "p", enabled: false }] }), status: "pending_approval" as const }
    const confirmed = { ...ev("e1", 1, { purposes: [{ id: "p", enabled: true }] }), status: "confirmed" as const }
    expect(mergeAll([pending, confirmed]).purposes).toStrictEqual([{ id: "p", enabled: false }])
    // the caller filters
    const counted = [pending, confirmed].filter((e) => e.status === "confirmed")
    expect(mergeAll(counted).purposes).toStrictEqual([{ id: "p", enabled: true }])
  })
})

describe("sameConsents", () => {
  const base: ConsentState = {
    purposes: [{ id: "a", enabled: true, metadata: { x: 1, y: [1, 2] } }, { id: "b", enabled: false, enabled_li: true }],
    vendors: { enabled: ["v1", "v2"], disabled_li: ["v3"] },
    tcfcs: "T",
    updated_at: at(1)
  }

  it("ignores updated_at and the order of purposes and vendor ids", () => {
    const other: ConsentState = {
      purposes: [{ id: "b", enabled: false, enabled_li: true }, { id: "a", enabled: true, metadata: { y: [1, 2], x: 1 } }],
      vendors: { disabled_li: ["v3"], enabled: ["v2", "v1"], disabled: [] },
      tcfcs: "T",
      updated_at: at(9)
    }
    expect(sameConsents(base, other)).toBe(true)
    expect(sameConsents(other, base)).toBe(true)
  })

  it("sees every difference in choices", () => {
    const variants: Array<ConsentState> = [
      { ...base, tcfcs: undefined },
      { ...base, tcfcs: "U" },
      { ...base, purposes: base.purposes.slice(1) },
      { ...base, purposes: [{ ...base.purposes[0], enabled: false }, base.purposes[1]] },
      { ...base, purposes: [base.purposes[0], { id: "b", enabled: false }] },
      { ...base, purposes: [base.purposes[0], { ...base.purposes[1], enabled_li: false }] },
      { ...base, purposes: [{ ...base.purposes[0], metadata: { x: 1, y: [2, 1] } }, base.purposes[1]] },
      { ...base, purposes: [{ id: "a", enabled: true }, base.purposes[1]] },
      { ...base, purposes: [...base.purposes, { id: "c", enabled: true }] },
      { ...base, vendors: { enabled: ["v1"], disabled_li: ["v3"] } },
      { ...base, vendors: { enabled: ["v1", "v2"], disabled: ["v3"] } },
      { ...base, vendors: { enabled: ["v1", "v2"], enabled_li: ["v3"] } },
      { ...base, vendors: { enabled: ["v1", "v2"], disabled_li: ["v3"], disabled: ["v4"] } },
      { ...base, vendors: { enabled: ["v1", "v2", "v4"], disabled_li: ["v3"] } },
      { ...base, vendors: { enabled: ["v1", "v2"], disabled_li: ["v3"], enabled_li: ["v4"] } },
      { ...base, vendors: { enabled: ["v1", "v2"], disabled_li: ["v3", "v4"] } }
    ]
    for (const v of variants) {
      expect(sameConsents(base, v)).toBe(false)
      expect(sameConsents(v, base)).toBe(false)
    }
  })

  it("compares metadata as JSON: key order and undefined-valued keys do not matter", () => {
    const a: ConsentState = { purposes: [{ id: "p", enabled: true, metadata: { x: 1, y: { z: [1] } } }], vendors: {} }
    const b: ConsentState = {
      purposes: [{ id: "p", enabled: true, metadata: { y: { z: [1] }, gone: undefined, x: 1 } }],
      vendors: {}
    }
    expect(sameConsents(a, b)).toBe(true)
    expect(sameConsents(b, a)).toBe(true)
  })

  it("treats undefined as the empty state", () => {
    expect(sameConsents(undefined, undefined)).toBe(true)
    expect(sameConsents(undefined, emptyState)).toBe(true)
    expect(sameConsents({ purposes: [], vendors: { enabled: [] }, updated_at: at(1) }, undefined)).toBe(true)
    expect(sameConsents(undefined, base)).toBe(false)
    expect(sameConsents(base, undefined)).toBe(false)
  })
})

// ---------------------------------------------------------------- properties

// Ids that are also names every object inherits must merge like any other id.
const purposeIds = ["p1", "p2", "p3", "p4", "constructor", "__proto__", "toString"]
const vendorIds = ["v1", "v2", "v3", "v4", "v5", "hasOwnProperty", "__proto__"]

const purposeArb: fc.Arbitrary<ConsentPurpose> = fc.record(
  {
    id: fc.constantFrom(...purposeIds),
    enabled: fc.boolean(),
    enabled_li: fc.boolean(),
    metadata: fc.dictionary(fc.constantFrom("a", "b", "__proto__", "constructor"), fc.oneof(fc.integer(), fc.string({ maxLength: 3 })), { maxKeys: 2 })
  },
  { requiredKeys: ["id", "enabled"] }
)
const vendorList = fc.array(fc.constantFrom(...vendorIds), { maxLength: 4 })
const consentsArb: fc.Arbitrary<EventConsents> = fc.record(
  {
    purposes: fc.array(purposeArb, { maxLength: 4 }),
    vendors: fc.record({ enabled: vendorList, disabled: vendorList, enabled_li: vendorList, disabled_li: vendorList }, {
      requiredKeys: []
    }),
    tcfcs: fc.string({ maxLength: 4 }),
    gpp: fc.string({ maxLength: 4 }),
    gpp_sid: fc.array(fc.integer({ min: 1, max: 30 }), { maxLength: 3 })
  },
  { requiredKeys: [] }
)
// few distinct instants, so ties on created_at (broken by id) are common
const eventsArb: fc.Arbitrary<Array<Ev>> = fc.uniqueArray(
  fc.record({
    id: fc.string({ minLength: 1, maxLength: 3 }),
    created_at: fc.integer({ min: 0, max: 5 }).map(at),
    consents: consentsArb,
    gpc: fc.boolean(),
    gpc_override: fc.boolean()
  }, { requiredKeys: ["id", "created_at", "consents"] }),
  { selector: (e) => e.id, maxLength: 8 }
)

/** Reference order: all generated timestamps share one format, so text order is time order. */
const referenceSort = (events: ReadonlyArray<Ev>): Array<Ev> =>
  [...events].sort((a, b) =>
    a.created_at !== b.created_at ? (a.created_at < b.created_at ? -1 : 1) : a.id < b.id ? -1 : a.id > b.id ? 1 : 0
  )

const withPermutation = eventsArb.chain((events) =>
  fc.tuple(fc.constant(events), fc.shuffledSubarray(events, { minLength: events.length, maxLength: events.length }))
)

describe("mergeAll properties", () => {
  it("does not depend on the input order", () => {
    fc.assert(
      fc.property(withPermutation, ([events, permuted]) => {
        expect(mergeAll(permuted)).toStrictEqual(mergeAll(events))
      })
    )
  })

  it("equals folding mergeEvent over the events sorted by (created_at, id)", () => {
    fc.assert(
      fc.property(eventsArb, (events) => {
        let state: ConsentState = emptyState
        for (const e of referenceSort(events)) state = mergeEvent(state, e)
        expect(mergeAll(events)).toStrictEqual(state)
      })
    )
  })

  it("last writer wins per purpose id", () => {
    fc.assert(
      fc.property(eventsArb, (events) => {
        const expected = new Map<string, ConsentPurpose>()
        for (const e of referenceSort(events)) for (const p of e.consents.purposes ?? []) expected.set(p.id, p)
        const result = mergeAll(events)
        expect(result.purposes.map((p) => p.id).sort()).toStrictEqual([...expected.keys()].sort())
        for (const p of result.purposes) {
          const want = expected.get(p.id)!
          expect(p.enabled).toBe(want.enabled)
          expect(p.enabled_li).toBe(want.enabled_li)
          expect(p.metadata).toStrictEqual(want.metadata)
          expect(Object.keys(p).sort()).toStrictEqual(Object.keys(want).filter((k) => (want as any)[k] !== undefined).sort())
        }
      })
    )
  })

  it("last writer wins per vendor, for consent and li separately; tcfcs, gpp, gpp_sid and updated_at come from the last events", () => {
    fc.assert(
      fc.property(eventsArb, (events) => {
        const consent = new Map<string, "on" | "off">()
        const li = new Map<string, "on" | "off">()
        let tcfcs: string | undefined
        let gpp: string | undefined
        let gppSid: ReadonlyArray<number> | undefined
        const sorted = referenceSort(events)
        for (const e of sorted) {
          const v = e.consents.vendors ?? {}
          const c = new Map<string, "on" | "off">()
          for (const id of v.enabled ?? []) c.set(id, "on")
          for (const id of v.disabled ?? []) c.set(id, "off") // refusal wins inside one event
          c.forEach((s, id) => consent.set(id, s))
          const l = new Map<string, "on" | "off">()
          for (const id of v.enabled_li ?? []) l.set(id, "on")
          for (const id of v.disabled_li ?? []) l.set(id, "off")
          l.forEach((s, id) => li.set(id, s))
          if (e.consents.tcfcs !== undefined) tcfcs = e.consents.tcfcs
          if (e.consents.gpp !== undefined) gpp = e.consents.gpp
          if (e.consents.gpp_sid !== undefined) gppSid = e.consents.gpp_sid
        }
        const idsWith = (m: Map<string, "on" | "off">, s: "on" | "off") =>
          [...m].filter(([, x]) => x === s).map(([id]) => id).sort()
        const r = mergeAll(events).vendors
        expect([...(r.enabled ?? [])].sort()).toStrictEqual(idsWith(consent, "on"))
        expect([...(r.disabled ?? [])].sort()).toStrictEqual(idsWith(consent, "off"))
        expect([...(r.enabled_li ?? [])].sort()).toStrictEqual(idsWith(li, "on"))
        expect([...(r.disabled_li ?? [])].sort()).toStrictEqual(idsWith(li, "off"))
        const state = mergeAll(events)
        expect(state.tcfcs).toBe(tcfcs)
        expect(state.gpp).toBe(gpp)
        expect(state.gpp_sid).toStrictEqual(gppSid)
        expect(state.updated_at).toBe(sorted.at(-1)?.created_at)
      })
    )
  })

  it("a GPC signal holds from an event that had it until a later event overrides it", () => {
    fc.assert(
      fc.property(eventsArb, (events) => {
        let holds = false
        for (const e of referenceSort(events)) holds = e.gpc_override === true ? false : holds || e.gpc === true
        const state = mergeAll(events)
        expect(state.gpc === true).toBe(holds)
        // Kept only while it holds.
        expect("gpc" in state).toBe(holds)
      })
    )
  })

  it("never lists a vendor in both lists of a pair, nor twice in one list, nor an empty list", () => {
    fc.assert(
      fc.property(eventsArb, (events) => {
        const v = mergeAll(events).vendors
        for (const list of [v.enabled, v.disabled, v.enabled_li, v.disabled_li]) {
          if (list === undefined) continue
          expect(list.length).toBeGreaterThan(0)
          expect(new Set(list).size).toBe(list.length)
        }
        const on = new Set(v.enabled ?? [])
        const onLi = new Set(v.enabled_li ?? [])
        for (const id of v.disabled ?? []) expect(on.has(id)).toBe(false)
        for (const id of v.disabled_li ?? []) expect(onLi.has(id)).toBe(false)
      })
    )
  })

  it("sameConsents agrees with comparing canonical forms", () => {
    // canonical: purposes sorted by id with absent fields dropped, vendor lists sorted, no updated_at
    const canonical = (s: ConsentState) =>
      JSON.stringify({
        purposes: [...s.purposes]
          .sort((a, b) => (a.id < b.id ? -1 : 1))
          .map((p) => [p.id, p.enabled, p.enabled_li ?? "-", p.metadata ?? "-"]),
        vendors: [s.vendors.enabled, s.vendors.disabled, s.vendors.enabled_li, s.vendors.disabled_li]
          .map((l) => [...(l ?? [])].sort()),
        tcfcs: s.tcfcs ?? null,
        gpp: s.gpp ?? null,
        gpp_sid: s.gpp_sid ?? null
      })
    // single small events make equal and unequal pairs both frequent
    const smallEvents = fc.array(
      fc.record({
        id: fc.constantFrom("a", "b"),
        created_at: fc.constant(at(0)),
        consents: fc.record({
          purposes: fc.array(fc.record({ id: fc.constantFrom("p1", "p2"), enabled: fc.boolean() }), { maxLength: 2 }),
          vendors: fc.record(
            {
              enabled: fc.array(fc.constantFrom("v1", "v2"), { maxLength: 2 }),
              disabled_li: fc.array(fc.constantFrom("v1", "v2"), { maxLength: 1 })
            },
            { requiredKeys: [] }
          ),
          tcfcs: fc.constantFrom("T", "U"),
          gpp: fc.constantFrom("DBABMA~CQ", "DBABzw~1Y--"),
          gpp_sid: fc.constantFrom([2], [6], [2, 6])
        }, { requiredKeys: [] })
      }),
      { maxLength: 2 }
    )
    fc.assert(
      fc.property(smallEvents, smallEvents, (xs, ys) => {
        const a = mergeAll(xs)
        const b = mergeAll(ys)
        expect(sameConsents(a, b)).toBe(canonical(a) === canonical(b))
      })
    )
  })

  it("sameConsents holds between the results of any two orders, and merging an empty event keeps the choices", () => {
    fc.assert(
      fc.property(withPermutation, fc.integer({ min: 0, max: 59 }), ([events, permuted], minute) => {
        const a = mergeAll(events)
        expect(sameConsents(a, mergeAll(permuted))).toBe(true)
        expect(sameConsents(a, mergeEvent(a, ev("later", minute, {})))).toBe(true)
      })
    )
  })
})
