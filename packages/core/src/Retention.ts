import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import { MailQueue } from "./Accounts/MailOutbox.js"
import { purgeConsentEvents } from "./Consents/ConsentRetention.js"
import type { ProofFiles } from "./Consents/ProofPorts.js"
import { AuditLogsTable } from "./Engine/AuditTrail.js"
import type { Storage, UnitOfWork } from "./Engine/Ports.js"
import { daysAgo, inBatches, PURGE_BATCH, type PurgePace, removeMatching } from "./Engine/Purging.js"
import { lt } from "./Engine/Query.js"
import type { Relations } from "./Engine/Relations.js"
import { DeliveryQueue } from "./Webhooks/Ports.js"

/**
 * Retention: what the platform keeps only for a while, purged by one scheduled job wherever
 * webhooks are delivered (the worker, or a server's own dispatcher). Each purge removes a small
 * batch per transaction, pausing between batches, so it never holds a table's writers off for
 * long; each batch removes only rows that still qualify, so any number of processes may purge at
 * once. A new retention is one more entry of `purges`.
 */

/** The retention settings of a process (the platform's options). */
export interface RetentionOptions {
  /**
   * Days a delivered webhook message (with its attempts) and a finished invitation mail are kept
   * after they were delivered, sent or given up (`RETENTION_DELIVERED_DAYS`, default 30); `null`
   * (or 0): forever.
   */
  readonly deliveredDays?: number | null | undefined
  /** Days an entry of the audit trail is kept (`RETENTION_AUDIT_DAYS`, default 400); `null` (or 0): forever. */
  readonly auditDays?: number | null | undefined
  /** Time between two runs (default an hour); the first runs `firstAfterMs` after start (default a minute). */
  readonly everyMs?: number | undefined
  readonly firstAfterMs?: number | undefined
  /** The pause between two batches of a purge (default 50 ms). */
  readonly pauseMs?: number | undefined
}

export const DEFAULT_DELIVERED_DAYS = 30

export const DEFAULT_AUDIT_DAYS = 400

/** What a purge may use: the store's ports. */
export type PurgeServices = Storage | UnitOfWork | Relations | DeliveryQueue | MailQueue | ProofFiles

/** One retention: its name (in the log) and its run, which answers how many rows it removed. */
export interface Purge {
  readonly name: string
  readonly run: (pace: PurgePace) => Effect.Effect<number, never, PurgeServices>
}

/** Delivered webhook messages (with their attempts), by when they were delivered. `failed` ones stay until replayed or removed. */
export const deliveredMessages = (days: number): Purge => ({
  name: "delivered webhook messages",
  run: (pace) =>
    Effect.gen(function*() {
      const queue = yield* DeliveryQueue
      const before = yield* daysAgo(days)
      return yield* inBatches(pace, queue.purgeDelivered({ before, limit: PURGE_BATCH }))
    })
})

/** Invitation mails sent or given up, by when they were. */
export const finishedMails = (days: number): Purge => ({
  name: "finished invitation mails",
  run: (pace) =>
    Effect.gen(function*() {
      const queue = yield* MailQueue
      const before = yield* daysAgo(days)
      return yield* inBatches(pace, queue.purgeDone({ before, limit: PURGE_BATCH }))
    })
})

/**
 * Entries of the audit trail older than `days`, oldest first, read by the `created_at` index.
 * Configuration changes are few, so a batch removes its entries one by one through the
 * repository, with no port of its own; an entry another purger took first is simply gone.
 */
export const auditEntries = (days: number): Purge => ({
  name: "audit trail entries",
  run: (pace) =>
    Effect.flatMap(daysAgo(days), (before) =>
      removeMatching(AuditLogsTable, [lt("created_at", before)], pace, { sort: [{ field: "created_at", direction: 1 }] }))
})

/** The consent events of inactive users, for the organizations that set `consent_retention_days`. */
export const consentEvents: Purge = { name: "consent events of inactive users", run: purgeConsentEvents }

/** Every retention a process runs, in order. */
export const purges = (options: RetentionOptions): ReadonlyArray<Purge> => {
  const deliveredDays = options.deliveredDays === undefined ? DEFAULT_DELIVERED_DAYS : options.deliveredDays
  const auditDays = options.auditDays === undefined ? DEFAULT_AUDIT_DAYS : options.auditDays
  return [
    ...(deliveredDays === null || deliveredDays <= 0 ? [] : [deliveredMessages(deliveredDays), finishedMails(deliveredDays)]),
    consentEvents,
    ...(auditDays === null || auditDays <= 0 ? [] : [auditEntries(auditDays)])
  ]
}

/**
 * One run of every purge, each on its own: one that fails is logged and the others still run.
 * Answers how many rows each removed, by name.
 */
export const runPurges = (list: ReadonlyArray<Purge>, pace: PurgePace) =>
  Effect.gen(function*() {
    const removed: Record<string, number> = {}
    for (const purge of list) {
      const n = yield* purge.run(pace).pipe(
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.failCause(cause)
            : Effect.as(Effect.logError(`retention purge failed: ${purge.name}`, cause), 0)
        )
      )
      removed[purge.name] = n
      if (n > 0) yield* Effect.logInfo(`retention: ${n} removed`).pipe(Effect.annotateLogs({ purge: purge.name }))
    }
    return removed
  })

/** The pause between two batches. */
export const paceOf = (options: RetentionOptions): PurgePace => ({ pause: Effect.sleep(options.pauseMs ?? 50) })

/**
 * The purges running in this process: first `firstAfterMs` after start, then every `everyMs`.
 * Every process that delivers may run them: two purging at once remove different rows, or find
 * them gone.
 */
export const layer = (options: RetentionOptions = {}) =>
  Layer.scopedDiscard(Effect.forkScoped(
    Effect.sleep(options.firstAfterMs ?? 60_000).pipe(
      Effect.zipRight(Effect.repeat(runPurges(purges(options), paceOf(options)), Schedule.spaced(options.everyMs ?? 60 * 60 * 1000)))
    )
  ))
