import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { StoreUnavailable } from "../Domain/Errors.js"

/** The webhook outbox at one moment: what a backlog alert watches. */
export interface OutboxBacklog {
  /** Messages waiting for a first or a next attempt, or being delivered. */
  readonly pending: number
  /** Seconds since the oldest of them was written; 0 when there is none. */
  readonly oldestAgeSeconds: number
}

/** The database's connections of this platform (every process of it), by state, as the database counts them. */
export interface ConnectionUse {
  /** `active` (running a statement), `idle`, `idle in transaction`, ... */
  readonly state: string
  readonly count: number
}

/**
 * What an operator asks a store about its own state, answered cheaply enough to be asked every
 * second (a probe) or at every scrape.
 */
export class StoreProbe extends Context.Tag("@cmp/core/StoreProbe")<
  StoreProbe,
  {
    /** One trivial statement within `timeoutMs`: fails when the database does not answer in time. */
    readonly ping: (timeoutMs: number) => Effect.Effect<void, StoreUnavailable>
    /** The outbox's backlog, in one query. */
    readonly outbox: Effect.Effect<OutboxBacklog>
    /**
     * The platform's connections at the database, by state; empty where the database keeps no
     * such count (SQLite: one connection per process, inside it).
     */
    readonly connections: Effect.Effect<ReadonlyArray<ConnectionUse>>
  }
>() {}
