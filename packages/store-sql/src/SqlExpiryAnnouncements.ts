import { type DueUser, ExpiryAnnouncements, UserStatesTable } from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Unavailable from "./Unavailable.js"
import { decodeRow, dialectOf, encodeValue, rowLimit } from "./SqlValues.js"

/**
 * The expiry sweep's reads and marks over `SqlClient`, the same SQL on both dialects: a range
 * of the due index `(organization_id, regulation, last_event_at)` a page at a time, and the
 * guarded mark. On PostgreSQL a second sweep's UPDATE of the same row waits for the first's
 * transaction, then finds its condition false and changes nothing; SQLite writes one
 * transaction at a time.
 */

const fields = UserStatesTable.fields
const dueFields = { user_id: fields.user_id, last_event_id: fields.last_event_id, last_event_at: fields.last_event_at, state: fields.state }

export const make = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const dialect = dialectOf(sql)
  const at = (iso: string) => encodeValue(dialect, fields.last_event_at, iso)
  return ExpiryAnnouncements.of({
    due: ({ after, limit, organizationId, regulation, upTo }) => {
      // From the page's start on the index, then past the last (time, user) read.
      const past = after.userId === undefined
        ? sql`last_event_at > ${at(after.at)}`
        : sql`last_event_at >= ${at(after.at)} AND (last_event_at > ${at(after.at)} OR user_id > ${after.userId})`
      return sql<Record<string, unknown>>`SELECT user_id, last_event_id, last_event_at, state FROM consent_user_states
        WHERE organization_id = ${organizationId} AND regulation = ${regulation}
          AND ${past} AND last_event_at <= ${at(upTo)}
          AND last_event_id IS NOT NULL AND announced_event_id IS DISTINCT FROM last_event_id
        ORDER BY last_event_at, user_id LIMIT ${rowLimit(sql, limit)}`.pipe(
        Effect.map((rows) => rows.map((raw) => decodeRow(dialect, dueFields, raw) as unknown as DueUser)),
        Unavailable.orDie
      )
    },
    announce: ({ lastEventId, organizationId, regulation, userId }) =>
      sql<{ user_id: unknown }>`UPDATE consent_user_states SET announced_event_id = last_event_id
        WHERE organization_id = ${organizationId} AND user_id = ${userId} AND regulation = ${regulation}
          AND last_event_id = ${lastEventId} AND announced_event_id IS DISTINCT FROM last_event_id
        RETURNING user_id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Unavailable.orDie
      )
  })
})

export const layer: Layer.Layer<ExpiryAnnouncements, never, SqlClient.SqlClient> = Layer.effect(ExpiryAnnouncements, make)
