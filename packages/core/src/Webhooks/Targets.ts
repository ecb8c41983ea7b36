import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { WebhookEventType } from "../Domain/Webhook.js"

/** What the outbox needs of an enabled webhook to address a message to it. */
export interface Target {
  readonly id: string
  readonly event_types: ReadonlyArray<WebhookEventType>
  readonly regulations: ReadonlyArray<string> | null | undefined
  readonly flatten: boolean | null | undefined
}

/**
 * An organization's enabled webhooks, kept in memory for a moment: every consent event
 * addresses its messages to them, and reading them each time cost a query per event. A change
 * through this process (a webhook written, a receiver's 410 switching one off) drops the copy
 * after its commit; one made through another server process is seen within `ttlMs`. A list read
 * before a change and answered after it is not kept.
 */
export interface WebhookTargetsService {
  readonly read: <E, R>(
    organizationId: string,
    load: Effect.Effect<ReadonlyArray<Target>, E, R>
  ) => Effect.Effect<ReadonlyArray<Target>, E, R>
  readonly forget: (organizationId: string) => Effect.Effect<void>
}

export class WebhookTargets extends Context.Tag("@cmp/core/WebhookTargets")<WebhookTargets, WebhookTargetsService>() {
  static readonly layer = (ttlMs = 1000, clock: () => number = Date.now): Layer.Layer<WebhookTargets> =>
    Layer.sync(WebhookTargets, () => {
      const kept = new Map<string, { readonly targets: ReadonlyArray<Target>; readonly until: number }>()
      // Any change since a load began (of any organization: a counter per organization would need bounding too).
      let changes = 0
      return {
        read: (organizationId, load) =>
          Effect.suspend(() => {
            const now = clock()
            const hit = kept.get(organizationId)
            if (hit && hit.until > now) return Effect.succeed(hit.targets)
            const seen = changes
            return Effect.tap(load, (targets) => {
              if (changes !== seen) return
              // Bounded: ids come from callers.
              if (kept.size >= 10_000) kept.clear()
              kept.set(organizationId, { targets, until: now + ttlMs })
            })
          }),
        forget: (organizationId) =>
          Effect.sync(() => {
            kept.delete(organizationId)
            changes++
          })
      }
    })
}

/** Called after a webhook's change commits, so this process addresses the next message by it at once. */
export const forgetTargets = (organizationId: unknown): Effect.Effect<void, never, WebhookTargets> =>
  typeof organizationId !== "string" ? Effect.void : Effect.flatMap(WebhookTargets, (t) => t.forget(organizationId))
