import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { ChangeFeed } from "../Engine/ChangeFeed.js"
import { Endpoints } from "./Ports.js"
import { WebhookTargets } from "./Targets.js"

/** The change feed's topic of webhooks written, switched off or removed. */
export const WEBHOOKS_TOPIC = "webhooks"

/**
 * Tells the other processes on the store that a webhook changed, inside its write's transaction:
 * they drop their copies of its organization's list (`WebhookTargets`) and of the webhook
 * (`Endpoints`) as it commits, instead of serving them until their ttl runs out.
 */
export const announceWebhookChange = (organizationId: unknown, webhookId: unknown): Effect.Effect<void, never, ChangeFeed> =>
  typeof organizationId !== "string" || typeof webhookId !== "string"
    ? Effect.void
    : Effect.flatMap(ChangeFeed, (feed) => feed.announce(WEBHOOKS_TOPIC, JSON.stringify([organizationId, webhookId])))

const parse = (news: string): readonly [string, string] | undefined => {
  try {
    const value: unknown = JSON.parse(news)
    return Array.isArray(value) && typeof value[0] === "string" && typeof value[1] === "string" ? [value[0], value[1]] : undefined
  } catch {
    return undefined
  }
}

/** While its scope is open, a webhook changed by another process is dropped from this one's copies. */
export const forgetOtherWebhookChanges: Layer.Layer<never, never, ChangeFeed | WebhookTargets | Endpoints> = Layer.scopedDiscard(
  Effect.gen(function*() {
    const feed = yield* ChangeFeed
    const targets = yield* WebhookTargets
    const endpoints = yield* Endpoints
    yield* feed.listen(WEBHOOKS_TOPIC, (news) => {
      const changed = parse(news)
      return changed === undefined ? Effect.void : Effect.zipRight(targets.forget(changed[0]), endpoints.forget(changed[1]))
    })
  })
)
