import type { ConsentState, EventConsents } from "../Domain/Consent.js"

/**
 * Which of a user's confirmed events a consent receipt lists, and what each one did. Pure: the
 * caller reads the events, newest first, and asks after each one whether it has read enough.
 *
 * A receipt explains the user's current state rather than replaying its whole history: it
 * lists the newest events back to the oldest one that still matters, that is until every
 * purpose and vendor of the current state was set by a listed event, and every purpose or
 * vendor a listed event turned off was set by an older listed one (so whether that event
 * withdrew a consent is known), or the history ends. A hard cap bounds what one receipt reads.
 */

/** The most events one receipt reads and lists. */
export const MAX_RECEIPT_EVENTS = 500

type Choices = { readonly consents: EventConsents }

/** What an event changes, keyed `p:<purpose>` and `v:<vendor>` (consent, not legitimate interest). */
const setOn = (e: Choices): { on: Array<string>; off: Array<string> } => {
  const on: Array<string> = []
  const off: Array<string> = []
  for (const p of e.consents.purposes ?? []) (p.enabled ? on : off).push(`p:${p.id}`)
  // As the merge does: a vendor the event lists both ways is refused.
  const disabled = new Set(e.consents.vendors?.disabled ?? [])
  for (const v of e.consents.vendors?.enabled ?? []) if (!disabled.has(v)) on.push(`v:${v}`)
  for (const v of disabled) off.push(`v:${v}`)
  return { on, off }
}

/** Every purpose and vendor an event names, in any list. */
const named = (e: Choices): Array<string> => {
  const v = e.consents.vendors ?? {}
  return [
    ...(e.consents.purposes ?? []).map((p) => `p:${p.id}`),
    ...[...(v.enabled ?? []), ...(v.disabled ?? []), ...(v.enabled_li ?? []), ...(v.disabled_li ?? [])].map((id) => `v:${id}`)
  ]
}

/** Every purpose and vendor a state holds: what the listed events must explain. */
const namedBy = (state: ConsentState | undefined): Array<string> => (state === undefined ? [] : named({ consents: state }))

/**
 * Reads events newest first and says when enough were read (`add` answers true): the state is
 * explained and no listed event's refusal waits for an older event to say what it replaced.
 */
export const receiptWalk = (state: ConsentState | undefined) => {
  const unexplained = new Set(namedBy(state))
  const pending = new Set<string>()
  return {
    add: (e: Choices): boolean => {
      for (const k of named(e)) unexplained.delete(k)
      const change = setOn(e)
      // What it sets is what a newer event's refusal of the same purpose or vendor replaced.
      for (const k of change.on) pending.delete(k)
      for (const k of change.off) pending.delete(k)
      // Whether this event withdrew a consent depends on the older events setting what it turned off.
      for (const k of change.off) pending.add(k)
      return unexplained.size === 0 && pending.size === 0
    }
  }
}

export type EventState = "given" | "refused" | "withdrawn"

/**
 * The state of each event, oldest first: `withdrawn` when it turns off a purpose or vendor that
 * was on, else `given` when it turns one on, else `refused`. What was on is replayed from the
 * listed events only, so the first listed event starts from nothing (exact when the walk read
 * the whole history or stopped once every refusal was placed).
 */
export const eventStates = (oldestFirst: ReadonlyArray<Choices>): Array<EventState> => {
  const on = new Set<string>()
  return oldestFirst.map((e) => {
    const change = setOn(e)
    const withdrawn = change.off.some((k) => on.has(k))
    for (const k of change.off) on.delete(k)
    for (const k of change.on) on.add(k)
    return withdrawn ? "withdrawn" : change.on.length > 0 ? "given" : "refused"
  })
}
