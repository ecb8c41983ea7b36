import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"

// After the first arrival, one turn of the event loop lets work already received join a batch.
const nextTurn = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})
/** Runs `run` on everything queued, at most `max` at a time, for as long as the store lives. */
export const drainInBatches = <A>(queue: Queue.Queue<A>, max: number, run: (batch: ReadonlyArray<A>) => Effect.Effect<void>) =>
  Effect.forkScoped(Effect.forever(
    Queue.take(queue).pipe(
      Effect.zipLeft(nextTurn),
      Effect.flatMap((first) => Effect.map(Queue.takeUpTo(queue, max - 1), (rest) => [first, ...rest])),
      Effect.flatMap(run)
    )
  ))

