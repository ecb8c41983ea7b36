import { StoreUnavailable } from "@cmp/core"
import type { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"

/**
 * The drivers' errors that mean "the database cannot serve now" rather than "this statement is
 * wrong", as core's `StoreUnavailable`: a read-only or full SQLite file, a lost or refused
 * PostgreSQL connection, a server shutting down. Callers answer those with a retry later;
 * anything else stays a bug.
 */

const sqliteCodes: ReadonlyArray<readonly [string, StoreUnavailable["reason"], string]> = [
  ["SQLITE_READONLY", "read-only", "the database is read-only"],
  ["SQLITE_FULL", "full", "the database or its disk is full"],
  ["SQLITE_IOERR", "io", "the database cannot be read or written"],
  ["SQLITE_CANTOPEN", "io", "the database file cannot be opened"],
  ["SQLITE_BUSY", "busy", "the database is busy"]
]

const socketCodes: Record<string, readonly [StoreUnavailable["reason"], string]> = {
  ECONNREFUSED: ["unreachable", "the database refuses connections"],
  ECONNRESET: ["connection-lost", "the connection to the database was lost"],
  ETIMEDOUT: ["unreachable", "the database does not answer"]
}

export const classify = (error: SqlError): StoreUnavailable | undefined => {
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined
  const code = String(cause?.code ?? "")
  const make = (reason: StoreUnavailable["reason"], message: string) => new StoreUnavailable({ reason, message })
  const sqlite = sqliteCodes.find(([c]) => code === c || code.startsWith(`${c}_`))
  if (sqlite) return make(sqlite[1], sqlite[2])
  const socket = socketCodes[code]
  if (socket) return make(socket[0], socket[1])
  // PostgreSQL: a read-only transaction or a standby (25006), connection exceptions (08),
  // insufficient resources (53), operator intervention (57P).
  if (code === "25006") return make("read-only", "the database is read-only")
  if (/^08/.test(code)) return make("connection-lost", "the database is unavailable")
  if (/^53/.test(code)) return make("full", "the database is out of resources")
  if (/^57P/.test(code)) return make("unreachable", "the database is unavailable")
  // `pg` answers a query on a connection that already died with "... is not queryable" (no code).
  if (/Connection terminated|connection.*(closed|ended)|not queryable|timeout exceeded when trying to connect/i.test(String(cause?.message ?? ""))) {
    return make("connection-lost", "the connection to the database was lost")
  }
  return undefined
}

/** A SQL failure as a defect: core's `StoreUnavailable` when it is one, the driver's error (a bug) otherwise. */
export const die = (error: SqlError): Effect.Effect<never> => Effect.die(classify(error) ?? error)

const isSqlError = (u: unknown): u is SqlError => (u as { _tag?: unknown } | undefined)?._tag === "SqlError"

/** `Effect.orDie`, with SQL failures classified as `die` does. */
export const orDie = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, never, R> =>
  Effect.catchAll(effect, (e) => (isSqlError(e) ? die(e) : Effect.die(e)))

/**
 * A transaction's outcome with every SQL failure classified, also the defects `@effect/sql` makes
 * itself: a COMMIT or ROLLBACK that fails (on a dead connection, a full disk) dies with the
 * driver's error inside its `withTransaction`, out of reach of `orDie` above.
 */
export const classifyTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, SqlError>, R> =>
  Effect.mapErrorCause(effect, (cause) =>
    Cause.match(cause, {
      onEmpty: Cause.empty,
      onFail: (e): Cause.Cause<E> => (isSqlError(e) ? Cause.die(classify(e) ?? e) : Cause.fail(e)),
      onDie: (d) => Cause.die(isSqlError(d) ? classify(d) ?? d : d),
      onInterrupt: (id) => Cause.interrupt(id),
      onSequential: (left, right) => Cause.sequential(left, right),
      onParallel: (left, right) => Cause.parallel(left, right)
    })) as Effect.Effect<A, Exclude<E, SqlError>, R>
