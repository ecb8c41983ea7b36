import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { keyOf, type Row, Storage, type TableDef, UnitOfWork } from "./Ports.js"
import type { Condition, SortKey } from "./Query.js"
import { cascade } from "./Relations.js"

/**
 * What every retention purge shares: small batches, each its own transaction, with a pause
 * between two, so that a purge never holds a table's writers off for long, and any number of
 * processes may purge at once (each batch removes only rows that still qualify).
 */

/** What runs between two batches of a purge: a short pause. */
export interface PurgePace {
  readonly pause: Effect.Effect<void>
}

/** Rows a purge removes per transaction. */
export const PURGE_BATCH = 500

const DAY_MS = 24 * 60 * 60 * 1000

/** The time `days` days before now, as stored timestamps are written: what is older is due. */
export const daysAgo = (days: number) => Effect.map(Clock.currentTimeMillis, (now) => new Date(now - days * DAY_MS).toISOString())

/** Calls `batch` until it removes fewer than `PURGE_BATCH`, pausing between two; answers how many it removed. */
export const inBatches = <R>(pace: PurgePace, batch: Effect.Effect<number, never, R>) =>
  Effect.gen(function*() {
    let removed = 0
    for (;;) {
      const n = yield* batch
      removed += n
      if (n < PURGE_BATCH) return removed
      yield* pace.pause
    }
  })

/**
 * Removes the rows of `table` matching `where`, `PURGE_BATCH` per transaction, each through the
 * storage (so the consent log records the removal of a row it covers) with its cascades;
 * `after` runs on each removed row (a proof's bytes). `sort` picks which go first.
 */
export const removeMatching = <R = never>(
  table: TableDef,
  where: ReadonlyArray<Condition>,
  pace: PurgePace,
  options: {
    readonly sort?: ReadonlyArray<SortKey> | undefined
    readonly after?: ((row: Row) => Effect.Effect<void, never, R>) | undefined
  } = {}
) =>
  Effect.gen(function*() {
    const repo = (yield* Storage).repository(table)
    const uow = yield* UnitOfWork
    const { after, sort } = options
    return yield* inBatches(pace, uow.transaction(Effect.gen(function*() {
      const page = yield* repo.find(
        sort === undefined
          ? { count: false, where, sort: [], ordered: false, limit: PURGE_BATCH, skip: 0 }
          : { count: false, where, sort, limit: PURGE_BATCH, skip: 0 }
      )
      for (const row of page.data) {
        const gone = yield* Effect.orDie(repo.remove(keyOf(table, row)))
        if (Option.isNone(gone)) continue
        // Links of the row to others (an event's to its proofs) go with it.
        yield* cascade(table, gone.value)
        if (after) yield* after(gone.value)
      }
      return page.data.length
    })))
  })
