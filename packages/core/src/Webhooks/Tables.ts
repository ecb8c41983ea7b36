import { WebhookDelivery } from "../Domain/Webhook.js"
import { fieldsOf } from "../Engine/Fields.js"
import type { TableDef } from "../Engine/Ports.js"
import { defineTable, field, jsonField } from "../Engine/Tables.js"
import { ownedByOrganization } from "../Engine/Resource.js"
import { type RowOf, type StoredFields } from "../Engine/Shape.js"
import type { SubscriberRegistration } from "./Ports.js"

/**
 * The tables of the webhooks feature: the outbox, its attempt log and the registrations of
 * in-process subscribers. The stores' queue works on them by these descriptions; the REST
 * resource over the outbox (`webhooks/deliveries`) is declared from the same parts, so the
 * columns are written down once.
 */

/** Which worker holds a message, and until when: the queue's own, shown in no answer. */
export const DeliveryLeaseFields = {
  lease_until: field.optionalTimestamp,
  leased_by: field.optionalString
} as const

/**
 * The W3C `traceparent` of the outbox write, kept only while traces are exported: the delivery
 * attempts' spans join the trace of the request that caused the message. Shown in no answer.
 */
export const DeliveryTraceFields = {
  trace_context: field.optionalString
} as const

export const DeliveryIndexes = [
  // Partial by status: a message that moves (pending, delivering, delivered) leaves one index and
  // enters another, and no other index entry of it moves. Statements read them by naming the
  // status as a literal.
  // The claim and the idle wait: pending messages by when they are due.
  { name: "webhook_deliveries_due", columns: ["next_attempt_at"], where: "status = 'pending'" },
  { name: "webhook_deliveries_organization", columns: ["organization_id", "created_at"] },
  // The delivery log of one webhook, and the replay of its failed messages.
  { name: "webhook_deliveries_webhook", columns: ["webhook_id", "created_at"] },
  // The oldest pending message of each webhook, in the delivery stats.
  { name: "webhook_deliveries_webhook_pending", columns: ["webhook_id", "created_at"], where: "status = 'pending'" },
  // The retention purge finds delivered messages by when they were delivered (their last move).
  { name: "webhook_deliveries_finished", columns: ["updated_at"], where: "status = 'delivered'" },
  // The messages in flight, by when their lease ends (a lapsed lease is claimed again). On
  // PostgreSQL a `(status, …)` index would also hold, in its `delivering` range, an entry of
  // every message delivered since the last vacuum.
  { name: "webhook_deliveries_leased", columns: ["lease_until"], where: "status = 'delivering'" }
] as const

/** An outbox row: a delivery as the API shows it, less its attempts (read from their log), plus its lease. */
export type DeliveryRow = StoredFields<Omit<WebhookDelivery, "attempts">> & RowOf<typeof DeliveryLeaseFields> & RowOf<typeof DeliveryTraceFields>

const { attempts: _attempts, ...deliveryColumns } = fieldsOf(WebhookDelivery)

/**
 * The outbox: one message to one webhook or subscriber, written in the change's transaction.
 * Its columns are read off the schema at run time; their type is the schema's.
 */
export const DeliveriesTable = defineTable("webhook_deliveries", {
  ...deliveryColumns,
  ...DeliveryLeaseFields,
  ...DeliveryTraceFields
}, { indexes: DeliveryIndexes, references: [ownedByOrganization] }) as TableDef<DeliveryRow>

/**
 * The log of delivery attempts: private to the platform, read through a delivery's `get`. Each
 * names its webhook and whether it succeeded, so a webhook's last successful and last failed
 * attempts are each the first entry of one index (`webhook_attempts_webhook`), however long
 * the log.
 */
export const AttemptsTable = defineTable("webhook_attempts", {
  id: field.string,
  delivery_id: field.string,
  organization_id: field.string,
  webhook_id: field.string,
  attempted_at: field.timestamp,
  status_code: field.optionalNumber,
  succeeded: field.boolean,
  duration_ms: field.number,
  error: field.optionalString,
  response_excerpt: field.optionalString
}, {
  indexes: [
    { name: "webhook_attempts_delivery", columns: ["delivery_id", "attempted_at"] },
    { name: "webhook_attempts_webhook", columns: ["webhook_id", "succeeded", "attempted_at", "id"] }
  ],
  references: [ownedByOrganization],
  defaultSort: [{ field: "attempted_at", direction: 1 }]
})

/**
 * The registrations of in-process subscribers (`createPlatform(...).subscribe`): durable, so a
 * subscriber's messages are written to the outbox whether or not a process has its handler at
 * the time, and handled once one does. Platform-wide: a subscriber sees every organization's
 * changes. Not a REST resource.
 */
export const SubscribersTable: TableDef<SubscriberRegistration> = defineTable("subscribers", {
  id: field.string,
  event_types: jsonField<SubscriberRegistration["event_types"]>(),
  regulations: jsonField<ReadonlyArray<string>>(),
  flatten: field.boolean,
  created_at: field.timestamp,
  updated_at: field.timestamp,
  version: field.number
})

export type SubscriberRow = SubscriberRegistration
