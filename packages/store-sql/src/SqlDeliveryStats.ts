import { DeliveryStats, type DeliveryStatsRecord, field, type LastAttempt } from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Unavailable from "./Unavailable.js"
import { decodeValue, dialectOf } from "./SqlValues.js"

/**
 * The delivery figures of an organization's webhooks over `SqlClient`, in one statement on both
 * dialects: the counts per status and the oldest pending message are one GROUP BY of the
 * outbox joined to the organization's webhooks (so a webhook without messages has a row, and a
 * subscriber's messages, whose `webhook_id` is no webhook's, have none); the last successful and
 * failed attempts are the first row of each kind per webhook (ROW_NUMBER, which SQLite has too)
 * over the attempts of those messages.
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
  // PostgreSQL answers COUNT as a bigint, which its driver hands over as a string.
  const count = (v: unknown) => Number(v ?? 0)
  const attempt = (at: unknown, status: unknown, error: unknown): LastAttempt | null =>
    at === null || at === undefined ? null : {
      attempted_at: time(at)!,
      status_code: status === null || status === undefined ? null : Number(status),
      error: error === null || error === undefined ? null : String(error)
    }

  // The same test of a 2xx as the dispatcher's: any other status, or none, is a failed attempt.
  const ok = sql.literal("CASE WHEN a.status_code >= 200 AND a.status_code <= 299 THEN 1 ELSE 0 END")

  const ofOrganization = (organizationId: string) =>
    sql<StatsRow>`WITH counted AS (
        SELECT w.id AS webhook_id,
          COUNT(CASE WHEN d.status = 'pending' THEN 1 END) AS pending,
          COUNT(CASE WHEN d.status = 'delivering' THEN 1 END) AS delivering,
          COUNT(CASE WHEN d.status = 'delivered' THEN 1 END) AS delivered,
          COUNT(CASE WHEN d.status = 'failed' THEN 1 END) AS failed,
          MIN(CASE WHEN d.status = 'pending' THEN d.created_at END) AS oldest_pending_at
        FROM webhooks w
        LEFT JOIN webhook_deliveries d ON d.webhook_id = w.id AND d.organization_id = w.organization_id
        WHERE w.organization_id = ${organizationId}
        GROUP BY w.id
      ), tried AS (
        SELECT d.webhook_id, a.attempted_at, a.status_code, a.error, ${ok} AS ok,
          ROW_NUMBER() OVER (PARTITION BY d.webhook_id, ${ok} ORDER BY a.attempted_at DESC, a.id DESC) AS n
        FROM webhooks w
        JOIN webhook_deliveries d ON d.webhook_id = w.id AND d.organization_id = w.organization_id
        JOIN webhook_attempts a ON a.delivery_id = d.id
        WHERE w.organization_id = ${organizationId}
      )
      SELECT c.webhook_id, c.pending, c.delivering, c.delivered, c.failed, c.oldest_pending_at,
        s.attempted_at AS success_at, s.status_code AS success_status, s.error AS success_error,
        f.attempted_at AS failure_at, f.status_code AS failure_status, f.error AS failure_error
      FROM counted c
      LEFT JOIN tried s ON s.webhook_id = c.webhook_id AND s.ok = 1 AND s.n = 1
      LEFT JOIN tried f ON f.webhook_id = c.webhook_id AND f.ok = 0 AND f.n = 1
      ORDER BY c.webhook_id`.pipe(
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
