import * as dns from "node:dns"

/**
 * What a receiver's name resolved to, kept for a few seconds. Without it every call (each
 * message of a busy webhook, each token request) paid a `getaddrinfo` on libuv's thread pool:
 * about 55 µs of CPU for a name in `/etc/hosts` on these 2-core machines, and a resolver's round
 * trip for any other, as much as the rest of a delivery. Calls to the same name at the same time
 * share one lookup.
 *
 * It changes nothing about which addresses a call may use: the addresses are vetted against the
 * address policy on every call, cached or not, and the connection is pinned to them. A name
 * that moves to another address is followed within `ttlMs`; a name rebound to a private address
 * is refused as soon as the cached answer ends. Failed lookups are not kept.
 */

export interface LookupAddress {
  readonly address: string
  readonly family: number
}

export type Lookup = (host: string) => Promise<ReadonlyArray<LookupAddress>>

export interface LookupCacheOptions {
  /** How long an answer is used. */
  readonly ttlMs: number
  /** Names kept at most; the oldest answer goes first. */
  readonly maxNames: number
  readonly lookup?: Lookup
  readonly now?: () => number
}

export const systemLookup: Lookup = (host) => dns.promises.lookup(host, { all: true })

export const makeLookupCache = (options: LookupCacheOptions): Lookup => {
  const lookup = options.lookup ?? systemLookup
  const now = options.now ?? Date.now
  const answers = new Map<string, { readonly until: number; readonly answer: Promise<ReadonlyArray<LookupAddress>> }>()
  return (host) => {
    const at = now()
    const kept = answers.get(host)
    if (kept !== undefined && kept.until > at) return kept.answer
    if (kept !== undefined) answers.delete(host)
    if (answers.size >= options.maxNames) answers.delete(answers.keys().next().value!)
    const answer = lookup(host)
    const entry = { until: at + options.ttlMs, answer }
    answers.set(host, entry)
    // A failure is answered to the calls that shared it, then forgotten.
    answer.catch(() => {
      if (answers.get(host) === entry) answers.delete(host)
    })
    return answer
  }
}

/** The senders' cache: 5 s, at most 1,000 names. */
export const cachedLookup = makeLookupCache({ ttlMs: 5000, maxNames: 1000 })
