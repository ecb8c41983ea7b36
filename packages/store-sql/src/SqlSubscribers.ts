import { keepingList, type SubscriberRegistration, SubscriberRegistrations, SubscribersTable } from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Unavailable from "./Unavailable.js"
import { decodeRow, dialectOf, encodeValue, rowLimit } from "./SqlValues.js"

/**
 * The registrations of in-process subscribers over `SqlClient` (the `subscribers` table): a save
 * is one upsert, the same SQL on both dialects, so two processes registering one name at once
 * both succeed and the last one's filters stay.
 */
/** Rows per query of `list`. */
const LIST_PAGE = 1000

export const make = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const dialect = dialectOf(sql)
  const fields = SubscribersTable.fields
  const encode = (column: keyof SubscriberRegistration, value: unknown) => encodeValue(dialect, fields[column], value)
  const decode = (raw: Record<string, unknown>) => decodeRow(dialect, fields, raw) as SubscriberRegistration
  return SubscriberRegistrations.of({
    // Read by pages of the name's order, every one: a registration past the first page would
    // silently get no message.
    list: Effect.gen(function*() {
      const all: Array<SubscriberRegistration> = []
      for (;;) {
        const after = all.length === 0 ? undefined : all[all.length - 1]!.id
        const rows = yield* (after === undefined
          ? sql<Record<string, unknown>>`SELECT * FROM subscribers ORDER BY id LIMIT ${rowLimit(sql, LIST_PAGE)}`
          : sql<Record<string, unknown>>`SELECT * FROM subscribers WHERE id > ${after} ORDER BY id LIMIT ${rowLimit(sql, LIST_PAGE)}`)
        for (const row of rows) all.push(decode(row))
        if (rows.length < LIST_PAGE) return all
      }
    }).pipe(Unavailable.orDie),
    save: ({ event_types, flatten, name, now, regulations }) =>
      sql<Record<string, unknown>>`INSERT INTO subscribers (id, event_types, regulations, flatten, created_at, updated_at, version)
        VALUES (${name}, ${encode("event_types", event_types)}, ${encode("regulations", regulations)}, ${encode("flatten", flatten)},
          ${encode("created_at", now)}, ${encode("updated_at", now)}, 1)
        ON CONFLICT (id) DO UPDATE SET event_types = excluded.event_types, regulations = excluded.regulations,
          flatten = excluded.flatten, updated_at = excluded.updated_at, version = subscribers.version + 1
        RETURNING *`.pipe(
        Effect.map((rows) => decode(rows[0]!)),
        Unavailable.orDie
      ),
    remove: (name) =>
      sql<{ id: unknown }>`DELETE FROM subscribers WHERE id = ${name} RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Unavailable.orDie
      )
  })
})

/** The registrations, their list kept for a second (`keepingList`). */
export const layer: Layer.Layer<SubscriberRegistrations, never, SqlClient.SqlClient> = Layer.effect(
  SubscriberRegistrations,
  Effect.map(make, (registrations) => keepingList(registrations))
)
