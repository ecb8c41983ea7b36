import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { emptyState, mergeEvent } from "../src/Consents/Merge.js"
import { eventStates, receiptWalk } from "../src/Consents/ReceiptEvents.js"
import type { ConsentState, EventConsents } from "../src/Domain/Consent.js"

const ev = (consents: EventConsents) => ({ consents, created_at: "2026-01-01T00:00:00.000Z" })
const purposes = (...list: Array<[string, boolean]>): EventConsents => ({ purposes: list.map(([id, enabled]) => ({ id, enabled })) })

/** How many of `newestFirst` the walk reads before it says it has enough (all when it never does). */
const walked = (state: ConsentState | undefined, newestFirst: ReadonlyArray<{ consents: EventConsents }>) => {
  const walk = receiptWalk(state)
  for (let i = 0; i < newestFirst.length; i++) if (walk.add(newestFirst[i]!)) return i + 1
  return newestFirst.length
}

const stateOf = (oldestFirst: ReadonlyArray<EventConsents>) => oldestFirst.reduce<ConsentState>((s, c) => mergeEvent(s, ev(c)), emptyState)

describe("eventStates", () => {
  it("withdrawn turns off what was on, given turns something on, refused does neither", () => {
    expect(eventStates([
      ev(purposes(["a", true], ["b", false])),
      ev(purposes(["a", false])),
      ev(purposes(["b", false])),
      ev({ vendors: { enabled: ["v"] } }),
      ev({ vendors: { disabled: ["v"], enabled: ["w"] } }),
      ev({ purposes: [{ id: "c", enabled: false, enabled_li: true }] })
    ])).toEqual(["given", "withdrawn", "refused", "given", "withdrawn", "refused"])
  })

  it("a vendor listed both ways is refused, as the merge has it", () => {
    expect(eventStates([ev({ vendors: { enabled: ["v"], disabled: ["v"] } })])).toEqual(["refused"])
  })
})

describe("receiptWalk", () => {
  it("stops at the oldest event the state still needs", () => {
    const history = [purposes(["a", false]), purposes(["a", true]), purposes(["b", true])]
    // b then a explain the state; nothing they refused waits for an older event.
    expect(walked(stateOf(history), history.map(ev).reverse())).toBe(2)
  })

  it("reads on past a refusal until an older event names what it refused", () => {
    const history = [purposes(["x", true]), purposes(["a", true]), purposes(["a", false])]
    // a:false needs the a:true before it to be told withdrawn; x needs the oldest event.
    expect(walked(stateOf(history), history.map(ev).reverse())).toBe(3)
    const later = [purposes(["a", true]), purposes(["x", true], ["a", true]), purposes(["a", false])]
    expect(walked(stateOf(later), later.map(ev).reverse())).toBe(2)
  })

  it("a vendor named for its legitimate interest only does not tell what its consent was", () => {
    const history: Array<EventConsents> = [{ vendors: { enabled: ["v"] } }, { vendors: { enabled_li: ["v"] } }, { vendors: { disabled: ["v"] } }]
    expect(walked(stateOf(history), history.map(ev).reverse())).toBe(3)
  })

  it("the events it keeps are labelled as the whole history labels them", () => {
    const choice = fc.record({
      purposes: fc.option(fc.array(fc.record({ id: fc.constantFrom("a", "b", "c"), enabled: fc.boolean() }), { maxLength: 3 }), { nil: undefined }),
      vendors: fc.option(
        fc.record({
          enabled: fc.option(fc.array(fc.constantFrom("v", "w"), { maxLength: 2 }), { nil: undefined }),
          disabled: fc.option(fc.array(fc.constantFrom("v", "w"), { maxLength: 2 }), { nil: undefined }),
          enabled_li: fc.option(fc.array(fc.constantFrom("v", "w"), { maxLength: 2 }), { nil: undefined })
        }),
        { nil: undefined }
      )
    }).map((c): EventConsents => ({
      ...(c.purposes !== undefined ? { purposes: c.purposes } : {}),
      ...(c.vendors !== undefined
        ? {
          vendors: {
            ...(c.vendors.enabled ? { enabled: c.vendors.enabled } : {}),
            ...(c.vendors.disabled ? { disabled: c.vendors.disabled } : {}),
            ...(c.vendors.enabled_li ? { enabled_li: c.vendors.enabled_li } : {})
          }
        }
        : {})
    }))
    fc.assert(fc.property(fc.array(choice, { minLength: 1, maxLength: 12 }), (history) => {
      const events = history.map(ev)
      const kept = walked(stateOf(history), [...events].reverse())
      const whole = eventStates(events)
      const listed = eventStates(events.slice(events.length - kept))
      expect(listed).toEqual(whole.slice(events.length - kept))
    }), { numRuns: 500 })
  })
})
