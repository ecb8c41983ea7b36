import { deleteSubscriber, type DomainError, saveSubscriber, signalOutbox, type WebhookEventType } from "@cmp/core"
import { type SubscriberHandler, Subscribers, type SubscribersService } from "@cmp/webhooks"
import * as Effect from "effect/Effect"
import type * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import type { PlatformServices } from "./Platform.js"

/**
 * In-process subscribers: a durable subscriber is a webhook whose transport is a function call.
 * Its registration (name and filters) is stored; every change's messages that pass its filters
 * are written to the outbox in the change's transaction, whatever the organization, whether or
 * not a process has its handler; the dispatcher of a process that has it calls it, once per
 * message across the deployment, at least once, retried on a throw like a webhook's call.
 */

/** A subscriber's filters, as a webhook's. */
export interface SubscribeOptions {
  /** The event types to receive; empty or absent: the six of the spec (`user.consent_expired` only when named). */
  readonly event_types?: ReadonlyArray<WebhookEventType> | undefined
  /** The regulations to receive; absent: `["gdpr"]`. */
  readonly regulations?: ReadonlyArray<string> | undefined
  /** Flattens the payload as a webhook with `flatten: true` does. */
  readonly flatten?: boolean | undefined
}

/** The subscriber methods of `ConsentPlatformApi`. */
export interface SubscriberMethods {
  /**
   * Registers (or updates the filters of) the durable subscriber `name` and handles its messages
   * in this process from now on: messages written while no process handled it come too. The
   * messages are in the delivery log (`webhooks.deliveries`) with `webhook_id`
   * `subscriber:<name>`. Answers a function that stops handling here (as `unsubscribe`).
   * Needs the dispatcher: a platform made with `dispatcher: false` throws.
   */
  readonly subscribe: (name: string, options: SubscribeOptions, handler: SubscriberHandler) => Promise<() => void>
  /** Stops handling `name` in this process; the registration stays and messages keep coming. */
  readonly unsubscribe: (name: string) => void
  /**
   * Deletes the registration of `name` (no new messages) and stops handling it here. Messages
   * already written stay in the log, and are handled if the name is subscribed again.
   * Answers whether it was registered.
   */
  readonly removeSubscriber: (name: string) => Promise<boolean>
}

type Run = <A>(effect: Effect.Effect<A, DomainError, PlatformServices>) => Promise<A>

/** The methods over the platform's runtime (built already: the dispatcher's registry is read once). */
export const subscriberMethods = async (
  runtime: ManagedRuntime.ManagedRuntime<PlatformServices, unknown>,
  run: Run
): Promise<SubscriberMethods> => {
  // The dispatcher's registry of this process's handlers; absent without the dispatcher.
  const registry = Option.getOrUndefined(await runtime.runPromise(Effect.serviceOption(Subscribers)))
  const stop = (name: string) => {
    if (registry) Effect.runSync(registry.remove(name))
  }
  return {
    subscribe: async (name, options, handler) => {
      if (typeof handler !== "function") throw new TypeError("subscribe needs a handler function")
      if (registry === undefined) {
        throw new Error(
          "subscribe needs the webhook dispatcher in this process: this platform was made with `dispatcher: false`"
        )
      }
      if (registry.get(name) !== undefined) {
        throw new Error(`This process already handles the subscriber ${JSON.stringify(name)}; unsubscribe it first`)
      }
      await run(saveSubscriber(name, options ?? {}))
      await Effect.runPromise(registry.add(name, handler))
      // Messages written while no process handled it are due now: wake the dispatcher.
      await runtime.runPromise(signalOutbox)
      return () => Effect.runSync(registry.remove(name, handler))
    },
    unsubscribe: stop,
    removeSubscriber: async (name) => {
      stop(name)
      return run(deleteSubscriber(name))
    }
  }
}
