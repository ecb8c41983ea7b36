import { UsageStore } from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Unavailable from "./Unavailable.js"

/** The API usage counters over `SqlClient`: one upsert per flush, the same SQL on both dialects. */
export const make = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const usage = {
    add: (organizationId: string, period: string, n: number) =>
      sql<{ count: unknown }>`INSERT INTO api_usage (organization_id, period, count) VALUES (${organizationId}, ${period}, ${n})
        ON CONFLICT (organization_id, period) DO UPDATE SET count = api_usage.count + excluded.count
        RETURNING count`.pipe(Effect.map((rows) => Number(rows[0]?.count ?? n)), Unavailable.orDie),
    get: (organizationId: string, period: string) =>
      sql<{ count: unknown }>`SELECT count FROM api_usage WHERE organization_id = ${organizationId} AND period = ${period}`.pipe(
        Effect.map((rows) => Number(rows[0]?.count ?? 0)),
        Unavailable.orDie
      )
  }
  return UsageStore.of(usage)
})

export const layer: Layer.Layer<UsageStore, never, SqlClient.SqlClient> = Layer.effect(UsageStore, make)
