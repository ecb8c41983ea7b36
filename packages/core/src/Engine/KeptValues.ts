import * as Effect from "effect/Effect"

/**
 * Values loaded from the store and kept in memory for a moment, per key. An entry answers for
 * `ttlMs` from the moment its load *started*: a load racing a change in another process can only
 * have seen the row before that change committed, so it is trusted no longer than any other. A
 * change through this process drops entries at once (`forget`), and a load already under way
 * then is not kept, so this process never answers from a copy older than its own change. Time is
 * the process's monotonic clock: the bound is about how long another server may serve a copy,
 * which a moved wall clock must not stretch. At most `capacity` keys (keys come from callers).
 */
export class KeptValues<V> {
  private readonly entries = new Map<string, { readonly value: V; readonly at: number }>()
  // Bumped by every forget: a load started before it must not put back what it dropped.
  private generation = 0

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = () => performance.now(),
    private readonly capacity = 10_000
  ) {}

  /** The kept value, or a ticket to keep the one about to be loaded (`keep`). */
  lookUp(key: string): { readonly hit: true; readonly value: V } | { readonly hit: false; readonly keep: (value: V) => void } {
    const started = this.now()
    const hit = this.entries.get(key)
    if (hit !== undefined && started - hit.at < this.ttlMs) return { hit: true, value: hit.value }
    const seen = this.generation
    return {
      hit: false,
      keep: (value) => {
        if (seen !== this.generation) return
        if (this.entries.size >= this.capacity) this.entries.clear()
        this.entries.set(key, { value, at: started })
      }
    }
  }

  forget(key: string): void {
    this.generation++
    this.entries.delete(key)
  }

  forgetWhere(drop: (value: V) => boolean): void {
    this.generation++
    for (const [key, entry] of this.entries) if (drop(entry.value)) this.entries.delete(key)
  }
}

/** The kept value of `key`, or `load`'s, kept for the next reads. */
export const readThrough = <V, E, R>(kept: KeptValues<V>, key: string, load: Effect.Effect<V, E, R>): Effect.Effect<V, E, R> =>
  Effect.suspend(() => {
    const found = kept.lookUp(key)
    return found.hit ? Effect.succeed(found.value) : Effect.tap(load, (value) => Effect.sync(() => found.keep(value)))
  })
