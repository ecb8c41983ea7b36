import {
  AttemptsTable,
  DeliveriesTable,
  DeliveryQueue,
  type DeliveryRecord,
  field,
  Storage,
  SUBSCRIBER_PREFIX,
  subscriberOf,
  subscriberTarget,
  UnitOfWork
} from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import { drainInBatches } from "./Batches.js"
import { execute } from "./Execute.js"
import * as Unavailable from "./Unavailable.js"
import { decodeRow, decodeValue, dialectOf, rowLimit } from "./SqlValues.js"

/**
 * The webhook delivery queue over `SqlClient`: leases due messages of the outbox table
 * (`webhook_deliveries`) to a dispatcher and records how each attempt ended. Its attempts go
 * through the repository, its batched completions through the unit of work.
 */
export const make = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const dialect = dialectOf(sql)
  const storage = yield* Storage
  const unitOfWork = yield* UnitOfWork

  const attempts = storage.repository(AttemptsTable)
  const deliveryRow = (raw: Record<string, unknown>) => decodeRow(dialect, DeliveriesTable.fields, raw) as unknown as DeliveryRecord
  // Concurrent claimers on PostgreSQL skip each other's rows instead of waiting or doubling up;
  // SQLite has one writer at a time already.
  const skipLocked = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE SKIP LOCKED"), orElse: () => sql.literal("") })

  /**
   * A dispatcher finishes many messages at once (32 calls in flight): their attempts and moves
   * are written together, one transaction per turn of the event loop instead of one each, which
   * saves PostgreSQL three round trips per message. Each caller still hears whether its own
   * message moved; if the transaction fails, every caller of the batch hears the failure (the
   * messages stay leased and are tried again when the lease ends).
   */
  type Completion = Parameters<DeliveryQueue["Type"]["complete"]>[0]
  // Each caller waits on its own callback, resumed when its batch ends: no Deferred and no
  // offering fiber step per message, on a path every delivered message takes.
  type Waiting = { readonly completion: Completion; readonly done: (answer: Effect.Effect<boolean>) => void }
  const completions = yield* Queue.unbounded<Waiting>()
  const completeBatch = (batch: ReadonlyArray<Waiting>) =>
    Effect.exit(unitOfWork.transaction(Effect.gen(function*() {
      yield* Unavailable.orDie(attempts.insert(batch.map((b) => ({ ...b.completion.attempt }))))
      const moved = new Set<unknown>()
      if (dialect === "pg") {
        // One statement for the whole batch: each statement is a round trip on PostgreSQL.
        const values = sql.csv(batch.map(({ completion: { id, now, outcome, workerId } }) =>
          sql`(${id}, ${workerId}, ${outcome.status}, ${outcome.attempts_count}, ${outcome.next_attempt_at}, ${outcome.last_status_code}, ${now})`
        ))
        const rows = yield* sql<{ id: unknown }>`UPDATE webhook_deliveries AS d
          SET status = v.status, attempts_count = v.attempts_count::int,
              next_attempt_at = v.next_attempt_at::timestamptz, last_status_code = v.last_status_code::int,
              lease_until = NULL, leased_by = NULL, updated_at = v.now::timestamptz, version = d.version + 1
          FROM (VALUES ${values}) AS v (id, worker, status, attempts_count, next_attempt_at, last_status_code, now)
          WHERE d.id = v.id AND d.leased_by = v.worker AND d.status = 'delivering'
          RETURNING d.id`.pipe(Unavailable.orDie)
        for (const r of rows) moved.add(r.id)
      } else {
        // One statement per outcome: the messages of a batch mostly end alike (delivered at their
        // first attempt, with the same status), and each statement costs more than its rows. The
        // latest completion time of the group stands for all of it: they are written together.
        const groups = new Map<string, Array<Completion>>()
        for (const { completion } of batch) {
          const { outcome, workerId } = completion
          const key = JSON.stringify([workerId, outcome.status, outcome.attempts_count, outcome.next_attempt_at, outcome.last_status_code])
          const group = groups.get(key)
          if (group === undefined) groups.set(key, [completion])
          else group.push(completion)
        }
        for (const group of groups.values()) {
          const { outcome, workerId } = group[0]!
          let now = group[0]!.now
          for (const c of group) if (c.now > now) now = c.now
          // On the batch's connection, inside the transaction.
          const rows = yield* execute(sql<{ id: unknown }>`UPDATE webhook_deliveries
            SET status = ${outcome.status}, attempts_count = ${outcome.attempts_count},
                next_attempt_at = ${outcome.next_attempt_at}, last_status_code = ${outcome.last_status_code},
                lease_until = NULL, leased_by = NULL, updated_at = ${now}, version = version + 1
            WHERE id IN ${sql.in(group.map((c) => c.id))} AND leased_by = ${workerId} AND status = 'delivering'
            RETURNING id`).pipe(Unavailable.orDie)
          for (const r of rows) moved.add(r.id)
        }
      }
      return batch.map((b) => moved.has(b.completion.id))
    }))).pipe(
      Effect.map((exit) => {
        for (let i = 0; i < batch.length; i++) {
          batch[i]!.done(exit._tag === "Success" ? Effect.succeed(exit.value[i]!) : Effect.failCause(exit.cause))
        }
      })
    )
  yield* drainInBatches(completions, 200, completeBatch)

  /**
   * The messages this process may take: every webhook's, and an in-process subscriber's only
   * when this process has its handler (`webhook_id` is `subscriber:<name>`).
   */
  const claimable = (subscribers: ReadonlyArray<string> | undefined) => {
    const ids = (subscribers ?? []).map(subscriberTarget)
    return ids.length > 0
      ? sql`(webhook_id NOT LIKE ${`${SUBSCRIBER_PREFIX}%`} OR webhook_id IN ${sql.in(ids)})`
      : sql`webhook_id NOT LIKE ${`${SUBSCRIBER_PREFIX}%`}`
  }

  return DeliveryQueue.of({
    /**
     * The first due pending messages in the due index's order, and messages whose lease ended
     * (in flight are few: a lease per call in flight, none sorted), then the first of both by
     * when they were due. One condition over both kinds would be read whole and sorted on every
     * claim, which under a backlog costs the backlog's size each time.
     */
    claim: ({ leaseUntil, limit, now, subscribers, workerId }) =>
      sql<Record<string, unknown>>`WITH due AS (
          SELECT id, next_attempt_at FROM webhook_deliveries
          WHERE status = 'pending' AND next_attempt_at <= ${now} AND ${claimable(subscribers)}
          ORDER BY next_attempt_at ASC LIMIT ${rowLimit(sql, limit)} ${skipLocked}
        ), lapsed AS (
          SELECT id, next_attempt_at FROM webhook_deliveries
          WHERE status = 'delivering' AND lease_until <= ${now} AND ${claimable(subscribers)}
          LIMIT ${rowLimit(sql, limit)} ${skipLocked}
        )
        UPDATE webhook_deliveries
        SET status = 'delivering', lease_until = ${leaseUntil}, leased_by = ${workerId}, version = version + 1
        WHERE id IN (
          SELECT id FROM (
            SELECT id, next_attempt_at FROM due UNION ALL SELECT id, next_attempt_at FROM lapsed
            ORDER BY next_attempt_at ASC LIMIT ${rowLimit(sql, limit)}
          ) AS taken
        )
        RETURNING *`.pipe(Effect.map((rows) => rows.map(deliveryRow)), Unavailable.orDie),
    complete: (completion) => Effect.async<boolean>((done) => void completions.unsafeOffer({ completion, done })),
    release: ({ ids, now, workerId }) =>
      ids.length === 0
        ? Effect.succeed(0)
        : sql<{ id: unknown }>`UPDATE webhook_deliveries
            SET status = 'pending', next_attempt_at = ${now}, lease_until = NULL, leased_by = NULL,
                updated_at = ${now}, version = version + 1
            WHERE id IN ${sql.in(ids)} AND leased_by = ${workerId} AND status = 'delivering'
            RETURNING id`.pipe(Effect.map((rows) => rows.length), Unavailable.orDie),
    nextDueAt: (options) => {
      const handled = new Set((options?.subscribers ?? []).map(subscriberTarget))
      const mine = (webhookId: string) => subscriberOf(webhookId) === undefined || handled.has(webhookId)
      return Effect.gen(function*() {
        // The earliest pending message is one read of the due index. Only when it belongs to a
        // subscriber this process does not handle is the filtered minimum needed, which reads
        // every pending row's webhook_id.
        const [first] = yield* sql<{ t: unknown; webhook_id: string }>`SELECT next_attempt_at AS t, webhook_id
          FROM webhook_deliveries WHERE status = 'pending' ORDER BY next_attempt_at ASC LIMIT 1`
        const pending = first === undefined
          ? []
          : mine(first.webhook_id)
          ? [first.t]
          : (yield* sql<{ t: unknown }>`SELECT MIN(next_attempt_at) AS t FROM webhook_deliveries
              WHERE status = 'pending' AND ${claimable(options?.subscribers)}`).map((r) => r.t)
        // Messages in flight are few (a lease per call in flight): their scan is short.
        const leases = yield* sql<{ t: unknown }>`SELECT MIN(lease_until) AS t FROM webhook_deliveries
          WHERE status = 'delivering' AND ${claimable(options?.subscribers)}`
        const due = [...pending, ...leases.map((r) => r.t)]
          .filter((t) => t !== null && t !== undefined)
          .map((t) => decodeValue(dialect, field.timestamp, t) as string)
          .sort()
        return Option.fromNullable(due[0])
      }).pipe(Unavailable.orDie)
    },
    /**
     * One batch in one transaction: the messages are picked by the index of finished messages
     * and, on PostgreSQL, locked (another purger skips them; a replay waits for the commit), then
     * their attempts and they go. The delete repeats the conditions, so a row that moved since
     * stays.
     */
    purgeDelivered: ({ before, limit }) =>
      unitOfWork.transaction(Effect.gen(function*() {
        const picked = yield* sql<{ id: string }>`SELECT id FROM webhook_deliveries
          WHERE status = 'delivered' AND updated_at < ${before}
          ORDER BY updated_at ASC LIMIT ${rowLimit(sql, limit)} ${skipLocked}`
        if (picked.length === 0) return 0
        const ids = picked.map((r) => r.id)
        yield* sql`DELETE FROM webhook_attempts WHERE delivery_id IN ${sql.in(ids)}`
        const gone = yield* sql<{ id: unknown }>`DELETE FROM webhook_deliveries
          WHERE id IN ${sql.in(ids)} AND status = 'delivered' AND updated_at < ${before}
          RETURNING id`
        return gone.length
      }).pipe(Unavailable.orDie))
  })
})

export const layer: Layer.Layer<DeliveryQueue, never, SqlClient.SqlClient | Storage | UnitOfWork> = Layer.scoped(DeliveryQueue, make)
