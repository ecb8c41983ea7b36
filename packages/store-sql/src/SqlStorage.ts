import type { DeliveryQueue, Storage, UnitOfWork, UsageStore } from "@cmp/core"
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Layer from "effect/Layer"
import * as SqlDeliveryQueue from "./SqlDeliveryQueue.js"
import * as SqlRepository from "./SqlRepository.js"
import * as SqlUnitOfWork from "./SqlUnitOfWork.js"
import * as SqlUsage from "./SqlUsage.js"

/**
 * The core storage ports over whatever `SqlClient` is provided, one module per port (the
 * repository, the unit of work, the delivery queue, usage), for SQLite and PostgreSQL. The
 * delivery queue writes its attempts through the repository and its batches through the unit of
 * work, so both are built once and shared.
 */
export const layer: Layer.Layer<Storage | UnitOfWork | UsageStore | DeliveryQueue, never, SqlClient.SqlClient> = Layer
  .mergeAll(SqlDeliveryQueue.layer, SqlUsage.layer).pipe(
    Layer.provideMerge(Layer.merge(SqlRepository.layer, SqlUnitOfWork.layer))
  )
