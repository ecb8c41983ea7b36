import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/** Why a process should not be sent traffic now (the database, the dispatcher). */
export class NotReady extends Schema.TaggedError<NotReady>()("NotReady", {
  message: Schema.String
}) {}

/**
 * Whether this process can serve: its database answers, its migrations ran, and the webhook
 * dispatcher runs where the process was configured to deliver. Cheap enough to be asked every
 * second. Implemented where the store and the dispatcher are known (the platform's composition).
 */
export class Readiness extends Context.Tag("@cmp/core/Readiness")<
  Readiness,
  { readonly check: Effect.Effect<void, NotReady> }
>() {}

/** Being alive needs nothing but an answer: the process runs its event loop. */
export const health = { status: "ok" } as const
