import * as Effect from "effect/Effect"

/**
 * Two effects one after the other, their results paired. `Effect.zip` and `Effect.zipWith` run
 * through `Effect.all` whatever their options (a read of the fiber's runtime, a finalizer mask,
 * an uninterruptible region and a loop: about fifteen steps of the runtime, where these take
 * four). A consent event ran a dozen of them: about 6 % of its CPU (docs/benchmarks.md).
 */
export const both = <A, E, R, B, E2, R2>(
  first: Effect.Effect<A, E, R>,
  second: Effect.Effect<B, E2, R2>
): Effect.Effect<readonly [A, B], E | E2, R | R2> => Effect.flatMap(first, (a) => Effect.map(second, (b) => [a, b] as const))

/** `both`, the pair combined by `f`. */
export const bothWith = <A, E, R, B, E2, R2, C>(
  first: Effect.Effect<A, E, R>,
  second: Effect.Effect<B, E2, R2>,
  f: (a: A, b: B) => C
): Effect.Effect<C, E | E2, R | R2> => Effect.flatMap(first, (a) => Effect.map(second, (b) => f(a, b)))

/**
 * `Effect.forEach(items, f, { discard: true })` for the few items of a request (one page of
 * messages, two metrics): each after the last, without the loop's own machinery. `f` is called
 * for every item at once, to describe its effect; the effects run in order.
 */
export const eachOf = <A, E, R>(items: ReadonlyArray<A>, f: (item: A) => Effect.Effect<unknown, E, R>): Effect.Effect<void, E, R> => {
  let all: Effect.Effect<unknown, E, R> = Effect.void
  for (const item of items) all = Effect.zipRight(all, f(item))
  return Effect.asVoid(all)
}
