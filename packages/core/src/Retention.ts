import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import { MailQueue } from "./Accounts/MailOutbox.js"
import { purgeConsentEvents, type PurgePace } from "./Consents/ConsentRetention.js"
import type { ProofFiles } from "./Consents/ProofPorts.js"
import { AuditLogsTable } from "./Engine/AuditTrail.js"
import { Storage, UnitOfWork } from "./Engine/Ports.js"
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

/** Rows a purge removes per transaction. */
export const BATCH = 500

const DAY_MS = 24 * 60 * 60 * 1000

/** What a purge may use: the store's ports. */
export type PurgeServices = Storage | UnitOfWork | Relations | DeliveryQueue | MailQueue | ProofFiles

/** One retention: its name (in the log) and its run, which answers how many rows it removed. */
export interface Purge {
  readonly name: string
  readonly run: (pace: PurgePace) => Effect.Effect<number, never, PurgeServices>
}

/** Calls `batch` until it removes fewer than a batch, pausing between two. */
const inBatches = (pace: PurgePace, batch: Effect.Effect<number>) =>
  Effect.gen(function*() {
    let removed = 0
    for (;;) {
      const n = yield* batch
      removed += n
      if (n < BATCH) return removed
      yield* pace.pause
    }
  })

const cutoffOf = (days: number) => Effect.map(Clock.currentTimeMillis, (now) => new Date(now - days * DAY_MS).toISOString())

/** Delivered webhook messages (with their attempts), by when they were delivered. `failed` ones stay until replayed or removed. */
export const deliveredMessages = (days: number): Purge => ({
  name: "delivered webhook messages",
  run: (pace) =>
    Effect.gen(function*() {
      const queue = yield* DeliveryQueue
      const before = yield* cutoffOf(days)
      return yield* inBatches(pace, queue.purgeDelivered({ before, limit: BATCH }))
    })
})

/** Invitation mails sent or given up, by when they were. */
export const finishedMails = (days: number): Purge => ({
  name: "finished invitation mails",
  run: (pace) =>
    Effect.gen(function*() {
      const queue = yield* MailQueue
      const before = yield* cutoffOf(days)
      return yield* inBatches(pace, queue.purgeDone({ before, limit: BATCH }))
    })
})

/**
 * Entries of the audit trail older than `days`, oldest first. Configuration changes are few, so
 * the entries of a batch are removed one by one through the repository (by the `created_at`
 * index), with no port of their own; an entry another process removed first is simply gone.
 */
export const auditEntries = (days: number): Purge => ({
  name: "audit trail entries",
  run: (pace) =>
    Effect.gen(function*() {
      const repo = (yield* Storage).repository(AuditLogsTable)
      const uow = yield* UnitOfWork
      const before = yield* cutoffOf(days)
      const batch = uow.transaction(Effect.gen(function*() {
        const page = yield* repo.find({
          where: [lt("created_at", before)],
          sort: [{ field: "created_at", direction: 1 }],
          limit: BATCH,
          skip: 0,
          count: false
        })
        for (const entry of page.data) yield* Effect.orDie(repo.remove(entry.id))
        return page.data.length
      }))
      return yield* inBatches(pace, batch)
    })
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
