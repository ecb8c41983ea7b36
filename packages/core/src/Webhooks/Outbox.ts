import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { nowIso } from "../Engine/Clock.js"
import { acceptsType, type WebhookEventType } from "../Domain/Webhook.js"
import { Storage, UnitOfWork } from "../Engine/Ports.js"
import { eq } from "../Engine/Query.js"
import { sortableId } from "../Engine/Random.js"
import { both, bothWith, eachOf } from "../Engine/Sequence.js"
import { annotateSpan, currentTraceparent, traced } from "../Engine/Tracing.js"
import { WebhooksResource } from "./Webhooks.js"
import { flattenPayload } from "./Flatten.js"
import { type DeliveryRecord, DeliveryHandOff, type HandOffLease, subscriberTarget } from "./Ports.js"
import { subscriberList } from "./Subscribers.js"
import { DeliveriesTable, type DeliveryRow } from "./Tables.js"
import { type Target, WebhookTargets } from "./Targets.js"
import { withServices } from "../Engine/Services.js"

// ---------------------------------------------------------------- the outbox

/** A message about one change, before it is addressed to the organization's webhooks. */
export interface OutgoingEvent {
  readonly type: WebhookEventType
  readonly regulation: string
  readonly parameters: Record<string, unknown>
}

/** How many webhooks `enqueue` reads at a time, and how many messages it writes per statement. */
const ENQUEUE_PAGE = 500

/**
 * Addresses the messages of a change to every enabled webhook of the organization, and to every
 * registered in-process subscriber, whose filters accept them, as outbox rows written in the
 * caller's transaction: the change and its messages commit together or not at all. Every
 * enabled webhook gets its message however many there are (the `webhooks` quota bounds them):
 * they are read a page at a time, in the order of their ids (and kept a moment: `WebhookTargets`),
 * and the rows written in batches.
 */
export const enqueue = (organizationId: string, events: ReadonlyArray<OutgoingEvent>) =>
  events.length === 0 ? Effect.succeed(0) : writeMessages(organizationId, events).pipe(traced("outbox.enqueue"))

/**
 * The outbox write, in its span: the messages carry that span's trace context (none when no
 * span is recorded), the parent of their delivery attempts' spans. Messages to webhooks go to
 * this process's dispatcher from memory after the commit where it takes them (`DeliveryHandOff`);
 * a subscriber's are claimed by a process that has its handler.
 */
const writeMessages = (organizationId: string, events: ReadonlyArray<OutgoingEvent>) =>
  withServices([Storage, WebhookTargets, DeliveryHandOff, UnitOfWork], ([storage, kept, handOff, uow]) =>
    Effect.flatMap(both(nowIso, currentTraceparent), ([now, traceparent]) => {
      const deliveries = storage.repository(DeliveriesTable)
      const traceContext = Option.getOrNull(traceparent)
      const insert = (rows: ReadonlyArray<DeliveryRow>): Effect.Effect<number> => {
        const pages: Array<ReadonlyArray<DeliveryRow>> = []
        for (let i = 0; i < rows.length; i += ENQUEUE_PAGE) pages.push(rows.slice(i, i + ENQUEUE_PAGE))
        return Effect.as(eachOf(pages, (page) => Effect.orDie(deliveries.insert(page))), rows.length)
      }
      // Answers how many rows it wrote.
      const write = (targets: ReadonlyArray<Target>): Effect.Effect<number> =>
        insert(messagesOf(organizationId, targets, events, now, traceContext, undefined))
      const toWebhooks = Effect.flatMap(kept.read(organizationId, enabledWebhooks(storage, organizationId)), (targets) => {
        const lease = targets.length === 0 ? undefined : handOff.lease(Date.parse(now))
        if (lease === undefined) return write(targets)
        const rows = messagesOf(organizationId, targets, events, now, traceContext, lease)
        if (rows.length === 0) return Effect.succeed(0)
        // Kept for after the commit before the rows are written: outside a transaction (where
        // nothing is kept) they are written `pending` instead, as without a dispatcher here.
        return Effect.flatMap(uow.afterCommit(handOff.take, { lease, messages: rows as ReadonlyArray<DeliveryRecord> }), (kept) =>
          kept ? insert(rows) : write(targets))
      })
      const toSubscribers = Effect.flatMap(subscriberList, (subscribers) => write(subscribers.map((s) => ({ ...s, id: subscriberTarget(s.id) }))))
      return Effect.flatMap(bothWith(toWebhooks, toSubscribers, (a, b) => a + b), (written) =>
        Effect.as(annotateSpan("outbox.messages", written), written))
    }))

/** The organization's enabled webhooks, read a page at a time in the order of their ids. */
const enabledWebhooks = (storage: Storage["Type"], organizationId: string) =>
  Effect.gen(function*() {
    const webhooks = storage.repository(WebhooksResource.tableDef)
    const all: Array<Target> = []
    let after: string | undefined
    for (;;) {
      const page = yield* webhooks.find({
        count: false,
        where: [eq("organization_id", organizationId), eq("enabled", true)],
        sort: [],
        keyset: { fields: ["id"], after: after === undefined ? undefined : [after] },
        limit: ENQUEUE_PAGE,
        skip: 0
      })
      for (const w of page.data) all.push({ id: w.id, event_types: w.event_types, regulations: w.regulations, flatten: w.flatten })
      if (page.data.length < ENQUEUE_PAGE) return all
      after = page.data[page.data.length - 1]!.id
    }
  })

/** The outbox rows of a change's messages to the targets whose filters accept them, leased when `lease` is given. */
const messagesOf = (
  organizationId: string,
  targets: ReadonlyArray<Target>,
  events: ReadonlyArray<OutgoingEvent>,
  now: string,
  traceContext: string | null,
  lease: HandOffLease | undefined
): Array<DeliveryRow> => {
  const rows: Array<DeliveryRow> = []
  for (const hook of targets) {
    const types = hook.event_types
    const regulations = hook.regulations ?? ["gdpr"]
    for (const event of events) {
      if (!acceptsType(types, event.type)) continue
      if (!regulations.includes(event.regulation)) continue
      const body = { type: event.type, parameters: event.parameters, regulation: event.regulation }
      rows.push({
        id: `msg_${sortableId(Date.parse(now))}`,
        organization_id: organizationId,
        webhook_id: hook.id,
        event_type: event.type,
        regulation: event.regulation,
        status: lease === undefined ? "pending" : "delivering",
        attempts_count: 0,
        next_attempt_at: now,
        last_status_code: null,
        payload: hook.flatten === true ? flattenPayload(body) : body,
        lease_until: lease === undefined ? null : lease.leaseUntil,
        leased_by: lease === undefined ? null : lease.workerId,
        created_at: now,
        updated_at: now,
        version: 1,
        trace_context: traceContext
      })
    }
  }
  return rows
}
