import type { ChangeFeed, StorePorts, UnitOfWork } from "@cmp/core"
import type * as SqlClient from "@effect/sql/SqlClient"
import * as Layer from "effect/Layer"
import * as SqlDeliveryQueue from "./SqlDeliveryQueue.js"
import * as SqlDeliveryStats from "./SqlDeliveryStats.js"
import * as SqlExpiryAnnouncements from "./SqlExpiryAnnouncements.js"
import * as SqlMailQueue from "./SqlMailQueue.js"
import * as SqlRepository from "./SqlRepository.js"
import * as SqlSubscribers from "./SqlSubscribers.js"
import * as SqlUnitOfWork from "./SqlUnitOfWork.js"
import * as SqlUsage from "./SqlUsage.js"
import * as SqlConsentLog from "./SqlConsentLog.js"
import * as SqlProofFiles from "./SqlProofFiles.js"
import * as SqlStoreProbe from "./SqlStoreProbe.js"
import * as SqlHostMigrator from "./SqlHostMigrator.js"
import * as RowCounts from "./RowCounts.js"
import * as SqlChangeFeed from "./SqlChangeFeed.js"
import type { ScratchDatabase } from "./SqlLogScratch.js"

const ports = <R>(feed: Layer.Layer<ChangeFeed, never, R | SqlClient.SqlClient | UnitOfWork>) =>
  Layer.mergeAll(
    SqlDeliveryQueue.layer,
    SqlMailQueue.layer,
    SqlDeliveryStats.layer,
    SqlSubscribers.layer,
    SqlUsage.layer,
    SqlConsentLog.layer,
    SqlProofFiles.layer,
    SqlExpiryAnnouncements.layer,
    SqlStoreProbe.layer,
    SqlHostMigrator.layer,
    RowCounts.layer,
    feed
  ).pipe(Layer.provideMerge(Layer.merge(SqlRepository.layer, SqlUnitOfWork.layer)))

/**
 * The core storage ports over whatever `SqlClient` is provided, one module per port (the
 * repository, the unit of work, the delivery queue and its figures, the mail queue, subscriber registrations, usage,
 * the expiry sweep's reads and marks,
 * a host's migrations, the change feed), for SQLite and PostgreSQL, with where a consent log
 * verify keeps its scratch (`SqlLogScratch.ScratchDatabase`, from the store's client layer). The delivery queue writes its attempts through the repository and its
 * batches through the unit of work, so both are built once and shared. On PostgreSQL the store
 * also folds the row counts its writers leave (`RowCounts`). Its change feed tells the other
 * processes of the store (PostgreSQL's NOTIFY) but hears none of them.
 */
export const layer: Layer.Layer<StorePorts, never, SqlClient.SqlClient | ScratchDatabase> = ports(SqlChangeFeed.layer)

/** The same ports, the change feed hearing the other processes through the dialect's `Listen`. */
export const layerListening: Layer.Layer<StorePorts, never, SqlClient.SqlClient | ScratchDatabase | SqlChangeFeed.Listen> = ports(SqlChangeFeed.layerListening)
