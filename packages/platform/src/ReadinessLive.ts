import { NotReady, Readiness, StoreProbe } from "@cmp/core"
import { Dispatcher } from "@cmp/webhooks"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/**
 * Readiness as the platform's composition knows it. Migrations run while the store's layer is
 * built, so a process that answers at all has them done; what can change later is the database
 * (one cheap statement, within a second) and, where this process delivers, the dispatcher's loop.
 */

/** Longest wait for the database: probes come every second or so, and must not pile up. */
export const PING_TIMEOUT_MS = 1_000

const database = Effect.map(StoreProbe, (probe) =>
  probe.ping(PING_TIMEOUT_MS).pipe(Effect.mapError((e) => new NotReady({ message: `Not ready: ${e.message}` }))))

/** A process that delivers no webhooks: ready when its database answers. */
export const layer: Layer.Layer<Readiness, never, StoreProbe> = Layer.effect(
  Readiness,
  Effect.map(database, (check) => Readiness.of({ check }))
)

/** A process configured to deliver: its dispatcher must run too (it stops first on shutdown). */
export const delivering: Layer.Layer<Readiness, never, StoreProbe | Dispatcher> = Layer.effect(
  Readiness,
  Effect.gen(function*() {
    const check = yield* database
    const dispatcher = yield* Dispatcher
    const dispatching = Effect.flatMap(dispatcher.running, (running) =>
      running ? Effect.void : Effect.fail(new NotReady({ message: "Not ready: the webhook dispatcher is not running" })))
    return Readiness.of({ check: Effect.zipRight(check, dispatching) })
  })
)
