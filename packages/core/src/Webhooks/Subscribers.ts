import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { nowIso } from "../Clock.js"
import { Regulation } from "../Domain/Consent.js"
import { Conflict, InvalidInput } from "../Domain/Errors.js"
import { WebhookEventType } from "../Domain/Webhook.js"
import { Storage, type TableDef } from "../Ports.js"
import { defineTable, field, jsonField } from "../Resource.js"
import { decode } from "../Service.js"

/**
 * The registrations of in-process subscribers (`createPlatform(...).subscribe`): durable, so a
 * subscriber's messages are written to the outbox whether or not a process has its handler at
 * the time, and handled once one does. Platform-wide: a subscriber sees every organization's
 * changes. Not a REST resource.
 */
export const SubscribersTable = defineTable("subscribers", {
  id: field.string,
  event_types: jsonField<ReadonlyArray<WebhookEventType>>(),
  regulations: jsonField<ReadonlyArray<string>>(),
  flatten: field.boolean,
  created_at: field.timestamp,
  updated_at: field.timestamp,
  version: field.number
})

export type SubscriberRow = typeof SubscribersTable extends TableDef<infer A> ? A : never

/** A subscriber's name: what follows `subscriber:` in its messages' `webhook_id`. */
export const SubscriberName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, {
    message: () => "must be 1 to 100 letters, digits, dots, dashes or underscores, starting with a letter or digit"
  })
)

/** A subscriber's filters, as a webhook's: every event type when empty, GDPR only by default. */
export const SubscriberFilters = Schema.Struct({
  event_types: Schema.optional(Schema.Array(WebhookEventType)),
  regulations: Schema.optional(Schema.Array(Regulation)),
  flatten: Schema.optional(Schema.Boolean)
})

/**
 * `enqueue` runs on every consent event: the subscriber list is kept for a second per store
 * (keyed by the `Storage` service, so two platforms of one process keep their own). A change
 * through this process drops it at once; one made by another process is seen within the second.
 */
const SUBSCRIBERS_TTL_MS = 1000
const subscriberLists = new WeakMap<object, { readonly until: number; readonly rows: ReadonlyArray<SubscriberRow> }>()

/** Drops this process's copy of the subscriber list (after a registration changed). */
export const forgetSubscribers: Effect.Effect<void, never, Storage> = Effect.map(Storage, (s) => void subscriberLists.delete(s))

/** The registered subscribers, each with its filters. */
export const subscriberList = Effect.gen(function*() {
  const storage = yield* Storage
  const now = Date.now()
  const hit = subscriberLists.get(storage)
  if (hit && hit.until > now) return hit.rows
  const page = yield* storage.repository(SubscribersTable).find({
    count: false,
    where: [],
    sort: [],
    ordered: false,
    limit: 1000,
    skip: 0
  })
  subscriberLists.set(storage, { until: now + SUBSCRIBERS_TTL_MS, rows: page.data })
  return page.data
})

/** Creates or replaces a subscriber's registration (its filters); answers the stored row. */
export const saveSubscriber = (name: string, filters: unknown) =>
  Effect.gen(function*() {
    const decodedName = decode(SubscriberName, name)
    if (Either.isLeft(decodedName)) {
      return yield* Effect.fail(new InvalidInput({ message: `Invalid subscriber name: ${JSON.stringify(name)}`, errors: { name: "invalid" } }))
    }
    const decoded = decode(SubscriberFilters, filters ?? {})
    if (Either.isLeft(decoded)) return yield* Effect.fail(decoded.left)
    const repo = (yield* Storage).repository(SubscribersTable)
    const values = {
      event_types: decoded.right.event_types ?? [],
      regulations: decoded.right.regulations ?? ["gdpr"],
      flatten: decoded.right.flatten ?? false
    }
    // Two processes registering the same name at once: the loser of the race reads again.
    for (let i = 0; ; i++) {
      const now = yield* nowIso
      const found = yield* repo.get(name)
      const saved = Option.isNone(found)
        ? yield* Effect.either(repo.create({ id: name, ...values, created_at: now, updated_at: now, version: 1 }))
        : yield* Effect.either(repo.patch(name, { ...values, updated_at: now }, found.value.version))
      if (Either.isRight(saved)) {
        yield* forgetSubscribers
        return saved.right
      }
      if (i >= 4) return yield* Effect.fail(new Conflict({ message: `The subscriber ${name} changed concurrently` }))
    }
  })

/** Deletes a subscriber's registration: no more messages are written for it. Answers whether it existed. */
export const deleteSubscriber = (name: string) =>
  Effect.gen(function*() {
    const removed = yield* Effect.orDie((yield* Storage).repository(SubscribersTable).remove(name))
    yield* forgetSubscribers
    return Option.isSome(removed)
  })
