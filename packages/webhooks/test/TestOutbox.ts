import {
  type AttemptRecord,
  AttemptsTable,
  DeliveriesTable,
  DeliveryHandOff,
  DeliveryQueue,
  type DeliveryRecord,
  type Endpoint,
  Endpoints,
  eq,
  Metrics,
  Storage,
  UnitOfWork
} from "@cmp/core"
import { SqliteStore } from "@cmp/store-sqlite"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { realSleep } from "./Receiver.js"

const assert = (condition: boolean) => {
  if (!condition) throw new Error("the unit of work kept nothing inside its own transaction")
}

/**
 * The dispatcher's surroundings for tests: the outbox is the real SQL store (SQLite in memory),
 * so leases, claims and completions behave as in production; only the webhook configuration is
 * a double, because it is a lookup the tests need to change between rounds.
 */

/** A message as stored, with the lease columns the port does not expose. */
export interface StoredMessage extends DeliveryRecord {
  readonly lease_until: string | null
  readonly leased_by: string | null
}

export interface TestEndpoints {
  readonly service: Endpoints["Type"]
  readonly put: (endpoint: Endpoint) => void
  readonly remove: (id: string) => void
  readonly get: (id: string) => Endpoint | undefined
  readonly disabled: ReadonlyArray<{ readonly id: string; readonly reason: string }>
}

export const makeEndpoints = (): TestEndpoints => {
  const endpoints = new Map<string, Endpoint>()
  const disabled: Array<{ id: string; reason: string }> = []
  return {
    service: Endpoints.of({
      get: (id) => Effect.sync(() => Option.fromNullable(endpoints.get(id))),
      disable: (id, reason) =>
        Effect.sync(() => {
          disabled.push({ id, reason })
          const e = endpoints.get(id)
          if (e) endpoints.set(id, { ...e, enabled: false })
        }),
      // Nothing is kept apart from the map itself.
      forget: () => Effect.void
    }),
    put: (endpoint) => void endpoints.set(endpoint.id, endpoint),
    remove: (id) => void endpoints.delete(id),
    get: (id) => endpoints.get(id),
    disabled
  }
}

export interface TestOutbox {
  /** What the dispatcher needs: the store's queue and the endpoints double. */
  readonly layer: Layer.Layer<DeliveryQueue | Endpoints | Metrics>
  readonly queue: DeliveryQueue["Type"]
  readonly endpoints: TestEndpoints
  /** Writes one pending message, as core's `enqueue` does, due at `now`. */
  readonly enqueue: (options: {
    readonly webhookId: string
    readonly payload: Record<string, unknown>
    readonly now: string
  }) => Effect.Effect<DeliveryRecord>
  /**
   * Writes one message in a transaction as core's `enqueue` does where a dispatcher takes them
   * from memory: leased to it when it gives a lease, and handed over after the COMMIT. Then
   * `then` runs in the same transaction (a failure there rolls it back). Answers the message,
   * and whether it was written leased.
   */
  readonly enqueueHanded: <E>(
    handOff: DeliveryHandOff["Type"],
    options: { readonly webhookId: string; readonly payload: Record<string, unknown>; readonly now: string },
    then?: Effect.Effect<void, E>
  ) => Effect.Effect<{ readonly record: DeliveryRecord; readonly leased: boolean }, E>
  readonly message: (id: string) => Effect.Effect<StoredMessage>
  readonly exists: (id: string) => Effect.Effect<boolean>
  /** The attempt log of one message, oldest first. */
  readonly attempts: (id: string) => Effect.Effect<ReadonlyArray<AttemptRecord>>
}

/** A fresh in-memory SQLite outbox, closed with the scope. */
export const makeOutbox: Effect.Effect<TestOutbox, never, Scope.Scope> = Effect.gen(function*() {
  const store = yield* Layer.build(SqliteStore.layer({ filename: ":memory:" }))
  const endpoints = makeEndpoints()
  const queue = Context.get(store, DeliveryQueue)
  const storage = Context.get(store, Storage)
  const deliveries = storage.repository(DeliveriesTable)
  const log = storage.repository(AttemptsTable)
  const uow = Context.get(store, UnitOfWork)
  let seq = 0
  const recordOf = (webhookId: string, payload: Record<string, unknown>, now: string): DeliveryRecord => ({
    id: `msg_${++seq}`,
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
  })
  return {
    layer: Layer.mergeAll(Layer.succeed(DeliveryQueue, queue), Layer.succeed(Endpoints, endpoints.service), Metrics.none),
    queue,
    endpoints,
    enqueue: ({ now, payload, webhookId }) => {
      const record = recordOf(webhookId, payload, now)
      return deliveries.insert([{ ...record, lease_until: null, leased_by: null, trace_context: null }]).pipe(Effect.orDie, Effect.as(record))
    },
    enqueueHanded: (handOff, { now, payload, webhookId }, then = Effect.void) =>
      uow.transaction(Effect.gen(function*() {
        const lease = handOff.lease(Date.parse(now))
        const plain = recordOf(webhookId, payload, now)
        const record: DeliveryRecord = lease === undefined ? plain : { ...plain, status: "delivering" }
        if (lease !== undefined) assert(yield* uow.afterCommit(handOff.take, { lease, messages: [record] }))
        yield* Effect.orDie(deliveries.insert([{
          ...record,
          lease_until: lease?.leaseUntil ?? null,
          leased_by: lease?.workerId ?? null,
          trace_context: null
        }]))
        yield* then
        return { record, leased: lease !== undefined }
      })),
    exists: (id) => Effect.map(Effect.orDie(deliveries.get(id)), Option.isSome),
    message: (id) =>
      Effect.flatMap(deliveries.get(id), (row) =>
        Option.isSome(row)
          ? Effect.succeed(row.value as unknown as StoredMessage)
          : Effect.dieMessage(`no message ${id}`)),
    attempts: (id) =>
      Effect.map(
        log.find({ where: [eq("delivery_id", id)], sort: [{ field: "attempted_at", direction: 1 }], limit: 1000, skip: 0, count: false }),
        (page) => page.data as unknown as ReadonlyArray<AttemptRecord>
      )
  }
})

/** Polls `condition` in real time (the loop runs on real sockets) until it holds or `timeoutMs` passes. */
export const eventually = (condition: Effect.Effect<boolean>, timeoutMs = 5000): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const deadline = Date.now() + timeoutMs
    while (!(yield* condition)) {
      if (Date.now() > deadline) return false
      yield* realSleep(5)
    }
    return true
  })
