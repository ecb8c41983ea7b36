import * as Effect from "effect/Effect"

/**
 * Values loaded from the store and kept in memory for a moment, per key. An entry answers for
 * `ttlMs` from the moment its load *started*: a load racing a change in another process can only
 * have seen the row before that change committed, so it is trusted no longer than any other. A
 * change through this process drops entries at once (`forget`), and a load already under way
 * then is not kept, so this process never answers from a copy older than its own change. Time is
 * the process's monotonic clock: the bound is about how long another server may serve a copy,
 * which a moved wall clock must not stretch. At most `capacity` keys (keys come from callers).
 *
 * A key may be loaded by one caller at a time (`readThrough`'s `join`): when an entry runs out
 * under load, every request in flight asks for it at once, and on PostgreSQL each of those loads
 * was a round trip of its own. A caller that joins finds the load of the key under way, begun
 * since the last `forget`, and waits for it: its read started before this caller asked, so it is
 * as fresh as the caller's own would have been trusted to be. Only a caller that holds nothing
 * may wait so (outside any transaction): a load may be queued behind a transaction (SQLite's one
 * writer, a pool's last connection), and a transaction waiting for that load would never end. A
 * wait is bounded all the same (`joinWaitMs`), then the caller loads on its own.
 */
export class KeptValues<V> {
  private readonly entries = new Map<string, { readonly value: V; readonly at: number }>()
  private readonly flights = new Map<string, Flight<V>>()
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

  /** The load of `key` under way since the last forget, if any. */
  flightOf(key: string): Flight<V> | undefined {
    const flight = this.flights.get(key)
    return flight !== undefined && flight.generation === this.generation ? flight : undefined
  }

  /** Marks a load of `key` as under way; `land` ends it. */
  takeOff(key: string): Flight<V> {
    const flight: Flight<V> = { generation: this.generation, waiters: [] }
    this.flights.set(key, flight)
    return flight
  }

  /** Ends a load: its waiters get its value, or `undefined` (then each loads on its own). */
  land(key: string, flight: Flight<V>, loaded: { readonly value: V } | undefined): void {
    if (this.flights.get(key) === flight) this.flights.delete(key)
    for (const waiter of flight.waiters.splice(0)) waiter(loaded)
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

/** A load under way: those waiting for its value. */
export interface Flight<V> {
  readonly generation: number
  readonly waiters: Array<(loaded: { readonly value: V } | undefined) => void>
}

/** How long a caller waits for another's load of the same key before loading on its own. */
export const joinWaitMs = 1000

/**
 * The kept value of `key`, or `load`'s, kept for the next reads. With `join` (a caller outside
 * any transaction), the value of a load of the key already under way, if there is one.
 */
export const readThrough = <V, E, R>(
  kept: KeptValues<V>,
  key: string,
  load: Effect.Effect<V, E, R>,
  join = false
): Effect.Effect<V, E, R> =>
  Effect.suspend(() => {
    const found = kept.lookUp(key)
    if (found.hit) return Effect.succeed(found.value)
    const flight = join ? kept.flightOf(key) : undefined
    if (flight !== undefined) {
      return Effect.flatten(Effect.async<Effect.Effect<V, E, R>>((resume) => {
        let waiting = true
        const answer = (loaded: { readonly value: V } | undefined) => {
          if (!waiting) return
          waiting = false
          clearTimeout(timer)
          resume(Effect.succeed(loaded !== undefined ? Effect.succeed(loaded.value) : readThrough(kept, key, load, join)))
        }
        // Past the wait, the load runs without a flight of its own: the one under way keeps its waiters.
        const timer = setTimeout(() => {
          if (!waiting) return
          waiting = false
          resume(Effect.succeed(Effect.tap(load, (value) => Effect.sync(() => found.keep(value)))))
        }, joinWaitMs)
        flight.waiters.push(answer)
        return Effect.sync(() => {
          waiting = false
          clearTimeout(timer)
        })
      }))
    }
    const own = kept.takeOff(key)
    return Effect.onExit(load, (exit) =>
      Effect.sync(() => {
        if (exit._tag === "Success") {
          found.keep(exit.value)
          kept.land(key, own, { value: exit.value })
        } else kept.land(key, own, undefined)
      }))
  })
