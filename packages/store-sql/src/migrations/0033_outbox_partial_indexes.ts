import { createIndex, dropIndex, migration, only } from "../Ddl.js"

/**
 * The outbox's indexes by status become partial: each holds only the messages of the status it
 * is read by. A message moves twice (pending → delivering → delivered); with `(status, …)`
 * indexes each move rewrote an entry in every one of them (three b-trees, two of which held
 * every message ever delivered), and that was most of the cost of a claim and of a completion.
 * Now a move adds or removes an entry only in the index of the status it leaves or reaches.
 *
 * - due: pending messages by when they are due (the claim, the idle wait).
 * - finished: delivered messages by when they were delivered (the retention purge).
 * - leased: messages in flight by when their lease ends (lapsed leases), on SQLite too now.
 * - webhook: every message of a webhook by when it was written (the delivery log filtered by
 *   webhook, the replay of failed messages); its status is no longer a key, so it never moves.
 * - webhook_pending: a webhook's pending messages by when they were written (the oldest pending
 *   message in the delivery stats).
 *
 * A statement reads a partial index only where its condition names the status as a literal:
 * the queue's and the stats' statements do.
 */
export default migration([
  dropIndex("webhook_deliveries_due"),
  createIndex("webhook_deliveries", "webhook_deliveries_due", ["next_attempt_at"], { where: "status = 'pending'" }),
  dropIndex("webhook_deliveries_finished"),
  createIndex("webhook_deliveries", "webhook_deliveries_finished", ["updated_at"], { where: "status = 'delivered'" }),
  dropIndex("webhook_deliveries_webhook"),
  createIndex("webhook_deliveries", "webhook_deliveries_webhook", ["webhook_id", "created_at"]),
  createIndex("webhook_deliveries", "webhook_deliveries_webhook_pending", ["webhook_id", "created_at"], { where: "status = 'pending'" }),
  only("sqlite", [
    createIndex("webhook_deliveries", "webhook_deliveries_leased", ["lease_until"], { where: "status = 'delivering'" })
  ])
])
