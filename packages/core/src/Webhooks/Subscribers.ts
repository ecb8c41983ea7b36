import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { nowIso } from "../Engine/Clock.js"
import { Regulation } from "../Domain/Consent.js"
import { InvalidInput } from "../Domain/Errors.js"
import { WebhookEventType } from "../Domain/Webhook.js"
import { decode } from "../Engine/Bodies.js"
import { type SubscriberRegistration, SubscriberRegistrations } from "./Ports.js"
import { withService } from "../Engine/Services.js"

/**
 * The registrations of in-process subscribers (`createPlatform(...).subscribe`), checked here
 * and kept by the `SubscriberRegistrations` port of the store.
 */

/** A subscriber's name: what follows `subscriber:` in its messages' `webhook_id`. */
export const SubscriberName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, {
    message: () => "must be 1 to 100 letters, digits, dots, dashes or underscores, starting with a letter or digit"
  })
)

/** A subscriber's filters, as a webhook's: the spec's six types when empty, GDPR only by default. */
export const SubscriberFilters = Schema.Struct({
  event_types: Schema.optional(Schema.Array(WebhookEventType)),
  regulations: Schema.optional(Schema.Array(Regulation)),
  flatten: Schema.optional(Schema.Boolean)
})

/**
 * `enqueue` runs on every consent event: a store keeps its list for a second (its layer wraps
 * its registrations with `keepingList`), so two platforms of one process keep their own. A
 * change through it drops the copy at once; one made by another process is seen within the second.
 */
const SUBSCRIBERS_TTL_MS = 1000

/**
 * The registrations with their list kept for `ttlMs` (by the milliseconds of `clock`), dropped by
 * every save or removal through them.
 */
export const keepingList = (
  registrations: SubscriberRegistrations["Type"],
  ttlMs: number = SUBSCRIBERS_TTL_MS,
  clock: () => number = Date.now
): SubscriberRegistrations["Type"] => {
  let kept: { readonly until: number; readonly rows: ReadonlyArray<SubscriberRegistration> } | undefined
  // A list read before a change and answered after it must not be kept as the current one.
  let changes = 0
  const forget = Effect.sync(() => {
    changes++
    kept = undefined
  })
  return SubscriberRegistrations.of({
    list: Effect.suspend(() => {
      const now = clock()
      if (kept && kept.until > now) return Effect.succeed(kept.rows)
      const seen = changes
      return Effect.tap(registrations.list, (rows) => {
        if (seen === changes) kept = { until: now + ttlMs, rows }
      })
    }),
    save: (registration) => Effect.ensuring(registrations.save(registration), forget),
    remove: (name) => Effect.ensuring(registrations.remove(name), forget)
  })
}

/** The registered subscribers, each with its filters. */
export const subscriberList: Effect.Effect<ReadonlyArray<SubscriberRegistration>, never, SubscriberRegistrations> = withService(
  SubscriberRegistrations,
  (r) => r.list
)

/** Creates or replaces a subscriber's registration (its filters); answers the stored row. */
export const saveSubscriber = (name: string, filters: unknown) =>
  Effect.gen(function*() {
    const decodedName = decode(SubscriberName, name)
    if (Either.isLeft(decodedName)) {
      return yield* Effect.fail(new InvalidInput({ message: `Invalid subscriber name: ${JSON.stringify(name)}`, errors: { name: "invalid" } }))
    }
    const decoded = decode(SubscriberFilters, filters ?? {})
    if (Either.isLeft(decoded)) return yield* Effect.fail(decoded.left)
    const registrations = yield* SubscriberRegistrations
    return yield* registrations.save({
      name,
      event_types: decoded.right.event_types ?? [],
      regulations: decoded.right.regulations ?? ["gdpr"],
      flatten: decoded.right.flatten ?? false,
      now: yield* nowIso
    })
  })

/** Deletes a subscriber's registration: no more messages are written for it. Answers whether it existed. */
export const deleteSubscriber = (name: string): Effect.Effect<boolean, never, SubscriberRegistrations> =>
  Effect.flatMap(SubscriberRegistrations, (r) => r.remove(name))
