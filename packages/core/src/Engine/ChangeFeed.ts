import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"

/**
 * News of committed changes between the processes that share one store, so that what one keeps
 * in memory for a moment (an organization's webhooks) or sleeps on (a dispatcher between two
 * polls of the outbox) hears at once what another committed. Only a hint: whatever listens still
 * bounds how long it trusts what it keeps, and still polls, because news can be lost (a dropped
 * connection) and a store may not carry it at all (SQLite).
 *
 * A topic is one word (no space); news is short text (the ids of what changed).
 */
export interface ChangeFeedService {
  /**
   * Announces `news` on `topic` to the other processes: inside a transaction, as it commits, and
   * never when it rolls back; outside one, at once. Meant for changes that are rare (a webhook
   * written): an announcement may cost the commit that carries it.
   */
  readonly announce: (topic: string, news: string) => Effect.Effect<void>
  /**
   * After a commit: tells the other processes that something happened on `topic`, without news.
   * Rings of a short while go out as one, never before the first of them: for changes that are
   * frequent (outbox messages, on every consent event), whose commits must not pay for it.
   */
  readonly ring: (topic: string) => Effect.Effect<void>
  /**
   * Calls `heard` with each news another process announces or rings on `topic` (a ring's news is
   * empty), for as long as the scope is open. Not this process's own: it told itself already.
   */
  readonly listen: (topic: string, heard: (news: string) => Effect.Effect<void>) => Effect.Effect<void, never, Scope.Scope>
}

export class ChangeFeed extends Context.Tag("@cmp/core/ChangeFeed")<ChangeFeed, ChangeFeedService>() {
  /** A store whose processes do not hear one another: they rely on their time bounds and polls alone. */
  static readonly None: Layer.Layer<ChangeFeed> = Layer.succeed(ChangeFeed, {
    announce: () => Effect.void,
    ring: () => Effect.void,
    listen: () => Effect.void
  })
}
