import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { WebhookEventType } from "../Domain/Webhook.js"
import { KeptValues, readThrough } from "../Engine/KeptValues.js"

/** What the outbox needs of an enabled webhook to address a message to it. */
export interface Target {
  readonly id: string
  readonly event_types: ReadonlyArray<WebhookEventType>
  readonly regulations: ReadonlyArray<string> | null | undefined
  readonly flatten: boolean | null | undefined
}

/**
 * An organization's enabled webhooks, kept in memory for a moment (`KeptValues`): every consent
 * event addresses its messages to them, and reading them each time cost a query per event. A
 * change through this process (a webhook written, a receiver's 410 switching one off) drops the
 * copy after its commit; one made through another server process as its news arrives, where the
 * store carries news (`ChangeFeed`, `forgetOtherWebhookChanges`), and within `ttlMs` in any case.
 */
export interface WebhookTargetsService {
  readonly read: <E, R>(
    organizationId: string,
    load: Effect.Effect<ReadonlyArray<Target>, E, R>
  ) => Effect.Effect<ReadonlyArray<Target>, E, R>
  readonly forget: (organizationId: string) => Effect.Effect<void>
}

export class WebhookTargets extends Context.Tag("@cmp/core/WebhookTargets")<WebhookTargets, WebhookTargetsService>() {
  static readonly layer = (ttlMs = 1000, now?: () => number): Layer.Layer<WebhookTargets> =>
    Layer.sync(WebhookTargets, () => {
      const kept = new KeptValues<ReadonlyArray<Target>>(ttlMs, now)
      return {
        read: (organizationId, load) => readThrough(kept, organizationId, load),
        forget: (organizationId) => Effect.sync(() => kept.forget(organizationId))
      }
    })
}

/** Called after a webhook's change commits, so this process addresses the next message by it at once. */
export const forgetTargets = (organizationId: unknown): Effect.Effect<void, never, WebhookTargets> =>
  typeof organizationId !== "string" ? Effect.void : Effect.flatMap(WebhookTargets, (t) => t.forget(organizationId))
