import { DeliveryStats, type DeliveryStatsRecord, field, type LastAttempt } from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Unavailable from "./Unavailable.js"
import { decodeValue, dialectOf, encodeValue } from "./SqlValues.js"

/**
 * The delivery figures of an organization's webhooks over `SqlClient`, in one statement on both
 * dialects whose cost does not grow with the delivery log: the counts per status are the sums of
 * the row counts the database keeps per webhook and status (`webhook_deliveries_counts`,
 * `RowCounts`); the oldest pending message is the first entry of the outbox's index by webhook,
 * status and time; the last successful and failed attempts are each the first entry of the
 * attempt log's index by webhook, outcome and time. Webhooks come from the organization's own
 * (so a webhook without messages has a row, and a subscriber's messages, whose `webhook_id` is
 * no webhook's, have none). A webhook's id names it across organizations: its messages and
 * attempts are its organization's.
 */

interface StatsRow {
  readonly webhook_id: unknown
  readonly pending: unknown
  readonly delivering: unknown
  readonly delivered: unknown
  readonly failed: unknown
  readonly oldest_pending_at: unknown
  readonly success_at: unknown
  readonly success_status: unknown
  readonly success_error: unknown
  readonly failure_at: unknown
  readonly failure_status: unknown
  readonly failure_error: unknown
}

export const make = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const dialect = dialectOf(sql)
  const time = (v: unknown) => decodeValue(dialect, field.timestamp, v) as string | null
  // PostgreSQL answers a bigint sum as a numeric, which its driver hands over as a string.
  const count = (v: unknown) => Number(v ?? 0)
  const attempt = (at: unknown, status: unknown, error: unknown): LastAttempt | null =>
    at === null || at === undefined ? null : {
      attempted_at: time(at)!,
      status_code: status === null || status === undefined ? null : Number(status),
      error: error === null || error === undefined ? null : String(error)
    }

  const succeeded = encodeValue(dialect, field.boolean, true)
  const failed = encodeValue(dialect, field.boolean, false)
  const lastAttempt = (outcome: unknown) =>
    sql`(SELECT a.id FROM webhook_attempts a WHERE a.webhook_id = w.id AND a.succeeded = ${outcome}
      ORDER BY a.attempted_at DESC, a.id DESC LIMIT 1)`

  const ofOrganization = (organizationId: string) =>
    sql<StatsRow>`WITH counted AS (
        SELECT webhook_id,
          SUM(CASE WHEN status = 'pending' THEN row_count ELSE 0 END) AS pending,
          SUM(CASE WHEN status = 'delivering' THEN row_count ELSE 0 END) AS delivering,
          SUM(CASE WHEN status = 'delivered' THEN row_count ELSE 0 END) AS delivered,
          SUM(CASE WHEN status = 'failed' THEN row_count ELSE 0 END) AS failed
        FROM webhook_deliveries_counts
        WHERE organization_id = ${organizationId}
        GROUP BY webhook_id
      )
      SELECT w.id AS webhook_id, c.pending, c.delivering, c.delivered, c.failed,
        (SELECT d.created_at FROM webhook_deliveries d WHERE d.webhook_id = w.id AND d.status = 'pending'
          ORDER BY d.created_at ASC LIMIT 1) AS oldest_pending_at,
        s.attempted_at AS success_at, s.status_code AS success_status, s.error AS success_error,
        f.attempted_at AS failure_at, f.status_code AS failure_status, f.error AS failure_error
      FROM webhooks w
      LEFT JOIN counted c ON c.webhook_id = w.id
      LEFT JOIN webhook_attempts s ON s.id = ${lastAttempt(succeeded)}
      LEFT JOIN webhook_attempts f ON f.id = ${lastAttempt(failed)}
      WHERE w.organization_id = ${organizationId}
      ORDER BY w.id`.pipe(
      Effect.map((rows) =>
        rows.map((r): DeliveryStatsRecord => ({
          webhook_id: String(r.webhook_id),
          counts: {
            pending: count(r.pending),
            delivering: count(r.delivering),
            delivered: count(r.delivered),
            failed: count(r.failed)
          },
          oldest_pending_at: time(r.oldest_pending_at),
          last_success: attempt(r.success_at, r.success_status, r.success_error),
          last_failure: attempt(r.failure_at, r.failure_status, r.failure_error)
        }))
      ),
      Unavailable.orDie
    )

  return DeliveryStats.of({ ofOrganization })
})

export const layer: Layer.Layer<DeliveryStats, never, SqlClient.SqlClient> = Layer.effect(DeliveryStats, make)
