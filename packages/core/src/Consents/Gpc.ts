import type { ConsentPurpose, EventConsents } from "../Domain/Consent.js"

/**
 * What a Global Privacy Control signal does to an event's choices. The signal is the person's
 * (a browser sends it on every request), so while it holds, the purposes the regulation's
 * policy names under GPC are recorded refused, added when the event does not mention them.
 * The one way past it is the person's own choice after being shown the signal
 * (`gpc_override`): then the choices stay as sent, and the event says it went against the signal.
 */
export interface GpcOutcome {
  readonly consents: EventConsents
  /** The choices were kept against the signal. */
  readonly conflict: boolean
}

export const applyGpc = (
  consents: EventConsents,
  options: {
    /** The event's own signal, or the user's that still holds for the regulation. */
    readonly signal: boolean
    readonly override: boolean
    /** The policy's `gpc_purpose_ids`; empty or absent: the signal refuses nothing. */
    readonly purposeIds: ReadonlyArray<string> | undefined
  }
): GpcOutcome => {
  const refused = options.purposeIds ?? []
  if (!options.signal || refused.length === 0) return { consents, conflict: false }
  if (options.override) return { consents, conflict: true }
  const ids = new Set(refused)
  const purposes: Array<ConsentPurpose> = (consents.purposes ?? []).map((p) => (ids.has(p.id) ? { ...p, enabled: false } : p))
  const named = new Set(purposes.map((p) => p.id))
  for (const id of refused) {
    if (!named.has(id)) {
      named.add(id)
      purposes.push({ id, enabled: false })
    }
  }
  return { consents: { ...consents, purposes }, conflict: false }
}
