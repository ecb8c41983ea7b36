import type { WebhookEventType } from "@cmp/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"

/**
 * The handlers of in-process subscribers this process has: the dispatcher claims a subscriber's
 * messages only while its name is here, and delivers them by calling the handler. The
 * registration itself (name and filters) is stored by core (`saveSubscriber`); this is only the
 * process's side.
 */

/** One message as a subscriber's handler receives it. */
export interface SubscriberMessage {
  /** The message id (`msg_…`), constant across retries: the key to make a handler idempotent. */
  readonly id: string
  readonly subscriber: string
  /** The organization whose change the message describes. */
  readonly organization_id: string
  readonly event_type: WebhookEventType
  readonly regulation: string
  /** What a webhook with the same filters receives as its body (flattened when asked). */
  readonly payload: Record<string, unknown>
  /** 1 on the first call, 2 on the first retry... */
  readonly attempt: number
  readonly created_at: string
}

/** Settles when the message is handled; a throw or rejection is a failed attempt, retried. */
export type SubscriberHandler = (message: SubscriberMessage) => void | Promise<void>

export interface SubscribersService {
  /** The names whose handler this process has. */
  readonly names: () => ReadonlyArray<string>
  readonly get: (name: string) => SubscriberHandler | undefined
  /** Registers the handler of `name`; fails if this process already has one. */
  readonly add: (name: string, handler: SubscriberHandler) => Effect.Effect<void, SubscriberAlreadyHandled>
  /** Stops handling `name` here (when `handler` is given, only if it is still that one). */
  readonly remove: (name: string, handler?: SubscriberHandler) => Effect.Effect<void>
}

export class SubscriberAlreadyHandled extends Error {
  readonly _tag = "SubscriberAlreadyHandled"
  constructor(readonly subscriber: string) {
    super(`This process already handles the subscriber ${JSON.stringify(subscriber)}; unsubscribe it first`)
  }
}

export class Subscribers extends Context.Tag("@cmp/webhooks/Subscribers")<Subscribers, SubscribersService>() {}

/** An empty registry. */
export const makeSubscribers = (): SubscribersService => {
  const handlers = new Map<string, SubscriberHandler>()
  return {
    names: () => [...handlers.keys()],
    get: (name) => handlers.get(name),
    add: (name, handler) =>
      Effect.suspend(() => {
        if (handlers.has(name)) return Effect.fail(new SubscriberAlreadyHandled(name))
        handlers.set(name, handler)
        return Effect.void
      }),
    remove: (name, handler) =>
      Effect.sync(() => {
        if (handler === undefined || handlers.get(name) === handler) handlers.delete(name)
      })
  }
}
