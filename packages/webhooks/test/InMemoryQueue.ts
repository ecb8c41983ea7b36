import {
  type AttemptRecord,
  type DeliveryOutcome,
  DeliveryQueue,
  type DeliveryRecord,
  type Endpoint,
  Endpoints
} from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

/**
 * An in-memory outbox implementing the port semantics the dispatcher relies on:
 * - `claim` takes pending messages whose `next_attempt_at` has come and delivering ones whose
 *   lease has expired, marks them delivering and leased; it runs synchronously, so two
 *   concurrent claimers never get the same message (as a transaction with SKIP LOCKED);
 * - `complete` always logs the attempt but applies the outcome only while the message is
 *   still leased to the completing worker.
 */

interface Stored {
  record: DeliveryRecord
  leaseUntil: string | null
  leasedBy: string | null
}

export interface InMemory {
  readonly layer: Layer.Layer<DeliveryQueue | Endpoints>
  readonly queue: DeliveryQueue["Type"]
  readonly enqueue: (options: {
    readonly webhookId: string
    readonly payload: Record<string, unknown>
    readonly now: string
    readonly id?: string
  }) => DeliveryRecord
  readonly message: (id: string) => DeliveryRecord
  readonly lease: (id: string) => { readonly leaseUntil: string | null; readonly leasedBy: string | null }
  readonly attempts: (id: string) => ReadonlyArray<AttemptRecord>
  readonly putEndpoint: (endpoint: Endpoint) => void
  readonly removeEndpoint: (id: string) => void
  readonly endpoint: (id: string) => Endpoint | undefined
  readonly disabled: Array<{ readonly id: string; readonly reason: string }>
}

const ms = (iso: string) => Date.parse(iso)

export const makeInMemory = (): InMemory => {
  const messages = new Map<string, Stored>()
  const attempts: Array<AttemptRecord> = []
  const endpoints = new Map<string, Endpoint>()
  const disabled: Array<{ id: string; reason: string }> = []
  let seq = 0

  const queue = DeliveryQueue.of({
    claim: ({ leaseUntil, limit, now, workerId }) =>
      Effect.sync(() => {
        const due = [...messages.values()]
          .filter((m) =>
            (m.record.status === "pending" && m.record.next_attempt_at !== null && ms(m.record.next_attempt_at) <= ms(now)) ||
            (m.record.status === "delivering" && m.leaseUntil !== null && ms(m.leaseUntil) <= ms(now))
          )
          .sort((a, b) => ms(a.record.next_attempt_at ?? a.record.created_at) - ms(b.record.next_attempt_at ?? b.record.created_at))
          .slice(0, limit)
        for (const m of due) {
          m.record = { ...m.record, status: "delivering", updated_at: now, version: m.record.version + 1 }
          m.leaseUntil = leaseUntil
          m.leasedBy = workerId
        }
        return due.map((m) => m.record)
      }),
    complete: ({ attempt, id, now, outcome, workerId }) =>
      Effect.sync(() => {
        attempts.push(attempt)
        const m = messages.get(id)
        if (!m || m.record.status !== "delivering" || m.leasedBy !== workerId) return false
        const o: DeliveryOutcome = outcome
        m.record = {
          ...m.record,
          status: o.status,
          attempts_count: o.attempts_count,
          next_attempt_at: o.next_attempt_at,
          last_status_code: o.last_status_code,
          updated_at: now,
          version: m.record.version + 1
        }
        m.leaseUntil = null
        m.leasedBy = null
        return true
      }),
    nextDueAt: Effect.sync(() => {
      const due = [...messages.values()]
        .filter((m) => m.record.status === "pending" && m.record.next_attempt_at !== null)
        .map((m) => m.record.next_attempt_at!)
        .sort((a, b) => ms(a) - ms(b))
      return due.length > 0 ? Option.some(due[0]!) : Option.none()
    })
  })

  const eps = Endpoints.of({
    get: (id) => Effect.sync(() => Option.fromNullable(endpoints.get(id))),
    disable: (id, reason) =>
      Effect.sync(() => {
        disabled.push({ id, reason })
        const e = endpoints.get(id)
        if (e) endpoints.set(id, { ...e, enabled: false })
      })
  })

  return {
    layer: Layer.mergeAll(Layer.succeed(DeliveryQueue, queue), Layer.succeed(Endpoints, eps)),
    queue,
    enqueue: ({ id, now, payload, webhookId }) => {
      const record: DeliveryRecord = {
        id: id ?? `msg_${++seq}`,
        organization_id: "org_1",
        webhook_id: webhookId,
        event_type: "user.created",
        regulation: "gdpr",
        status: "pending",
        attempts_count: 0,
        next_attempt_at: now,
        last_status_code: null,
        payload,
        created_at: now,
        updated_at: now,
        version: 1
      }
      messages.set(record.id, { record, leaseUntil: null, leasedBy: null })
      return record
    },
    message: (id) => messages.get(id)!.record,
    lease: (id) => ({ leaseUntil: messages.get(id)!.leaseUntil, leasedBy: messages.get(id)!.leasedBy }),
    attempts: (id) => attempts.filter((a) => a.delivery_id === id),
    putEndpoint: (endpoint) => endpoints.set(endpoint.id, endpoint),
    removeEndpoint: (id) => endpoints.delete(id),
    endpoint: (id) => endpoints.get(id),
    disabled
  }
}
