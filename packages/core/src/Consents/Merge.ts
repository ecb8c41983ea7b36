import type { ConsentPurpose, ConsentState, ConsentVendors, EventConsents } from "../Domain/Consent.js"

/**
 * The effective consent status of a user for one regulation is the merge of its confirmed
 * events in order of `created_at` (spec "Consent events and users"). This module is the pure
 * merge; choosing which events count (confirmed, same user, same regulation) is the caller's job.
 *
 * Rules:
 * - purposes are keyed by `id`; an event's purpose replaces the whole purpose (`enabled`, and
 *   `enabled_li` / `metadata` only when the event gives them); purposes the event does not
 *   mention are kept. Existing purposes keep their position, new ones are appended in event
 *   order. If one event names the same purpose twice, its later entry wins (position: first).
 * - vendors: each vendor id has a consent status (`enabled` / `disabled`) and, independently, a
 *   legitimate-interest status (`enabled_li` / `disabled_li`). An event sets the statuses of
 *   the vendors it lists; a vendor moves out of the opposite list. If one event lists a vendor
 *   in both lists of a pair, the refusal (`disabled` / `disabled_li`) wins.
 *   Each output list holds an id once; ids that stay keep their position and ids that join a
 *   list are appended in event order. Empty lists are omitted.
 * - `tcfcs`, `gpp`, `gpp_sid`: each the event's value when it has one (any string, even empty),
 *   else the previous.
 * - `gpc`: a Global Privacy Control signal holds from the first event that had it until an event
 *   with `gpc_override` (the person chose after being shown it); a later event from a device
 *   without the signal does not end it. Kept only while it holds.
 * - `updated_at`: the `created_at` of the event merged last.
 */

export type MergeableEvent = {
  readonly consents: EventConsents
  readonly created_at: string
  readonly gpc?: boolean | null | undefined
  readonly gpc_override?: boolean | null | undefined
}

export const emptyState: ConsentState = { purposes: [], vendors: {} }

/** A fresh purpose carrying only the fields that are present. */
const purposeOf = (p: ConsentPurpose): ConsentPurpose => {
  const out: { id: string; enabled: boolean; enabled_li?: boolean; metadata?: ConsentPurpose["metadata"] } = {
    id: p.id,
    enabled: p.enabled
  }
  if (p.enabled_li !== undefined) out.enabled_li = p.enabled_li
  if (p.metadata !== undefined) out.metadata = p.metadata
  return out
}

const mergePurposes = (
  previous: ReadonlyArray<ConsentPurpose>,
  incoming: ReadonlyArray<ConsentPurpose> | undefined
): Array<ConsentPurpose> => {
  // A Map keeps the position of the first insertion of a key and the value of the last one.
  const byId = new Map<string, ConsentPurpose>()
  for (const p of previous) byId.set(p.id, p)
  for (const p of incoming ?? []) byId.set(p.id, purposeOf(p))
  return Array.from(byId.values())
}

/** Ids in first-appearance order, each once. */
const dedupe = (ids: Iterable<string>): Array<string> => Array.from(new Set(ids))

/**
 * One status pair (consent or legitimate interest). The final status of an id: the event's if
 * it lists the id (refusal winning a conflict), else the previous one (refusal winning if a
 * malformed previous state listed it twice).
 */
const mergePair = (
  prevOn: ReadonlyArray<string> | undefined,
  prevOff: ReadonlyArray<string> | undefined,
  addOn: ReadonlyArray<string> | undefined,
  addOff: ReadonlyArray<string> | undefined
): { on: Array<string>; off: Array<string> } => {
  const status = new Map<string, boolean>()
  for (const id of prevOn ?? []) status.set(id, true)
  for (const id of prevOff ?? []) status.set(id, false)
  const eventOff = new Set(addOff ?? [])
  for (const id of addOn ?? []) if (!eventOff.has(id)) status.set(id, true)
  for (const id of eventOff) status.set(id, false)
  return {
    on: dedupe([...(prevOn ?? []), ...(addOn ?? [])]).filter((id) => status.get(id) === true),
    off: dedupe([...(prevOff ?? []), ...(addOff ?? [])]).filter((id) => status.get(id) === false)
  }
}

const mergeVendors = (previous: ConsentVendors, incoming: ConsentVendors | undefined): ConsentVendors => {
  const consent = mergePair(previous.enabled, previous.disabled, incoming?.enabled, incoming?.disabled)
  const li = mergePair(previous.enabled_li, previous.disabled_li, incoming?.enabled_li, incoming?.disabled_li)
  const out: { enabled?: Array<string>; disabled?: Array<string>; enabled_li?: Array<string>; disabled_li?: Array<string> } =
    {}
  if (consent.on.length > 0) out.enabled = consent.on
  if (consent.off.length > 0) out.disabled = consent.off
  if (li.on.length > 0) out.enabled_li = li.on
  if (li.off.length > 0) out.disabled_li = li.off
  return out
}

/** Applies one confirmed event on top of `state`. */
export const mergeEvent = (state: ConsentState, event: MergeableEvent): ConsentState => {
  const c = event.consents
  const tcfcs = c.tcfcs !== undefined ? c.tcfcs : state.tcfcs
  const gpp = c.gpp !== undefined ? c.gpp : state.gpp
  const gppSid = c.gpp_sid !== undefined ? c.gpp_sid : state.gpp_sid
  const out: {
    purposes: Array<ConsentPurpose>
    vendors: ConsentVendors
    tcfcs?: string
    gpp?: string
    gpp_sid?: ReadonlyArray<number>
    gpc?: boolean
    updated_at?: string
  } = {
    purposes: mergePurposes(state.purposes, c.purposes),
    vendors: mergeVendors(state.vendors, c.vendors)
  }
  if (tcfcs !== undefined) out.tcfcs = tcfcs
  if (gpp !== undefined) out.gpp = gpp
  if (gppSid !== undefined) out.gpp_sid = gppSid
  if (event.gpc_override !== true && (state.gpc === true || event.gpc === true)) out.gpc = true
  out.updated_at = event.created_at
  return out
}

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/**
 * Order of events: by the instant of `created_at` (so `...Z` and `...+00:00` forms of one
 * instant tie), then by `id`, then by the `created_at` text; unparsable timestamps sort after
 * parsable ones, by text. Plain code-unit comparison, never locale-dependent.
 */
const compareEvents = (
  a: { readonly created_at: string; readonly id: string },
  b: { readonly created_at: string; readonly id: string }
): number => {
  const ta = Date.parse(a.created_at)
  const tb = Date.parse(b.created_at)
  const na = Number.isNaN(ta)
  const nb = Number.isNaN(tb)
  if (na !== nb) return na ? 1 : -1
  if (!na && ta !== tb) return ta < tb ? -1 : 1
  if (na) {
    const byText = compareStrings(a.created_at, b.created_at)
    if (byText !== 0) return byText
  }
  return compareStrings(a.id, b.id) || compareStrings(a.created_at, b.created_at)
}

/** A merged state with the event merged last named: the period it starts is announced once per event. */
export const withLast = (state: ConsentState, last: { readonly id: string; readonly notice_text_content_id?: string | null | undefined }): ConsentState => {
  const { event_id: _e, notice_text_content_id: _n, ...rest } = state
  return {
    ...rest,
    event_id: last.id,
    ...(last.notice_text_content_id != null ? { notice_text_content_id: last.notice_text_content_id } : {})
  }
}

/** The event merged last among a set of (already filtered) events: the newest in merge order. */
export const lastMerged = <E extends { readonly created_at: string; readonly id: string }>(events: ReadonlyArray<E>): E | undefined =>
  events.reduce<E | undefined>((last, e) => (last === undefined || compareEvents(last, e) < 0 ? e : last), undefined)

/** The effective status from a set of (already filtered) events, in any input order. */
export const mergeAll = (
  events: ReadonlyArray<MergeableEvent & { readonly id: string }>
): ConsentState => [...events].sort(compareEvents).reduce<ConsentState>(mergeEvent, emptyState)

// ---------------------------------------------------------------- comparison

/** JSON equality: object key order and `undefined`-valued keys do not matter; array order does. */
const jsonEqual = (a: unknown, b: unknown): boolean => {
  if (Object.is(a, b)) return true
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return a === b
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false
    return a.every((x, i) => jsonEqual(x, b[i]))
  }
  const ra = a as Record<string, unknown>
  const rb = b as Record<string, unknown>
  const ka = Object.keys(ra).filter((k) => ra[k] !== undefined)
  const kb = Object.keys(rb).filter((k) => rb[k] !== undefined)
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(rb, k) && jsonEqual(ra[k], rb[k]))
}

const samePurpose = (a: ConsentPurpose, b: ConsentPurpose): boolean =>
  a.id === b.id && a.enabled === b.enabled && a.enabled_li === b.enabled_li && jsonEqual(a.metadata, b.metadata)

const sameIdSet = (a: ReadonlyArray<string> | undefined, b: ReadonlyArray<string> | undefined): boolean => {
  const sa = new Set(a ?? [])
  const sb = new Set(b ?? [])
  return sa.size === sb.size && [...sa].every((id) => sb.has(id))
}

/**
 * Whether two states express the same choices: purposes as a set keyed by id (order ignored;
 * a repeated id counts by its last entry, as in the merge), each vendor list as a set (a
 * missing list is an empty one), `tcfcs`, `gpp` and `gpp_sid` (in order), `gpc`. `updated_at` is
 * ignored; `undefined` is `emptyState`.
 */
export const sameConsents = (a: ConsentState | undefined, b: ConsentState | undefined): boolean => {
  const x = a ?? emptyState
  const y = b ?? emptyState
  if (x.tcfcs !== y.tcfcs || x.gpp !== y.gpp || !jsonEqual(x.gpp_sid, y.gpp_sid) || (x.gpc === true) !== (y.gpc === true)) return false
  const px = new Map(x.purposes.map((p) => [p.id, p] as const))
  const py = new Map(y.purposes.map((p) => [p.id, p] as const))
  if (px.size !== py.size) return false
  for (const [id, p] of px) {
    const q = py.get(id)
    if (q === undefined || !samePurpose(p, q)) return false
  }
  return (
    sameIdSet(x.vendors.enabled, y.vendors.enabled) &&
    sameIdSet(x.vendors.disabled, y.vendors.disabled) &&
    sameIdSet(x.vendors.enabled_li, y.vendors.enabled_li) &&
    sameIdSet(x.vendors.disabled_li, y.vendors.disabled_li)
  )
}
