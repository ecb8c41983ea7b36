import { field, MailOutboxTable, MailQueue, type MailRecord } from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Unavailable from "./Unavailable.js"
import { decodeRow, decodeValue, dialectOf, rowLimit } from "./SqlValues.js"

/**
 * The mail queue over `SqlClient`: leases due mails of the mail outbox (`mail_outbox`) to a
 * dispatcher and moves each to where its attempt left it, dropping the sealed mail once it is
 * sent or given up.
 */
export const make = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const dialect = dialectOf(sql)
  const mailRow = (raw: Record<string, unknown>) => decodeRow(dialect, MailOutboxTable.fields, raw) as unknown as MailRecord
  // Concurrent claimers on PostgreSQL skip each other's rows; SQLite has one writer at a time already.
  const skipLocked = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE SKIP LOCKED"), orElse: () => sql.literal("") })

  return MailQueue.of({
    claim: ({ leaseUntil, limit, now, workerId }) =>
      sql<Record<string, unknown>>`UPDATE mail_outbox
        SET status = 'sending', lease_until = ${leaseUntil}, leased_by = ${workerId}, version = version + 1
        WHERE id IN (
          SELECT id FROM mail_outbox
          WHERE (status = 'pending' AND next_attempt_at <= ${now}) OR (status = 'sending' AND lease_until <= ${now})
          ORDER BY next_attempt_at ASC
          LIMIT ${rowLimit(sql, limit)}
          ${skipLocked}
        )
        RETURNING *`.pipe(Effect.map((rows) => rows.map(mailRow)), Unavailable.orDie),
    complete: ({ id, now, outcome, workerId }) =>
      sql<{ id: unknown }>`UPDATE mail_outbox
        SET status = ${outcome.status}, attempts_count = ${outcome.attempts_count},
            next_attempt_at = ${outcome.next_attempt_at}, last_error = ${outcome.last_error},
            mail_sealed = ${outcome.status === "pending" ? sql.literal("mail_sealed") : sql.literal("NULL")},
            lease_until = NULL, leased_by = NULL, updated_at = ${now}, version = version + 1
        WHERE id = ${id} AND leased_by = ${workerId} AND status = 'sending'
        RETURNING id`.pipe(Effect.map((rows) => rows.length > 0), Unavailable.orDie),
    nextDueAt: sql<{ t: unknown }>`SELECT MIN(t) AS t FROM (
        SELECT MIN(next_attempt_at) AS t FROM mail_outbox WHERE status = 'pending'
        UNION ALL
        SELECT MIN(lease_until) AS t FROM mail_outbox WHERE status = 'sending'
      ) due`.pipe(
      Effect.map(([row]) =>
        row === undefined || row.t === null || row.t === undefined
          ? Option.none()
          : Option.some(decodeValue(dialect, field.timestamp, row.t) as string)
      ),
      Unavailable.orDie
    ),
    // One statement per status, each reading the index of finished mails (one over both would
    // scan the table); concurrent purgers skip each other's rows.
    purgeDone: ({ before, limit }) =>
      Effect.gen(function*() {
        let removed = 0
        for (const status of ["sent", "failed"] as const) {
          if (removed >= limit) break
          const rows = yield* sql<{ id: unknown }>`DELETE FROM mail_outbox WHERE id IN (
              SELECT id FROM mail_outbox WHERE status = ${status} AND updated_at < ${before}
              ORDER BY updated_at ASC LIMIT ${rowLimit(sql, limit - removed)} ${skipLocked}
            )
            RETURNING id`
          removed += rows.length
        }
        return removed
      }).pipe(Unavailable.orDie)
  })
})

export const layer: Layer.Layer<MailQueue, never, SqlClient.SqlClient> = Layer.effect(MailQueue, make)
