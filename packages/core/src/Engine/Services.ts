import * as Context from "effect/Context"
import * as Effect from "effect/Effect"

/**
 * Services read in one step of the runtime. A tag used as an effect costs three (the caller's
 * continuation pushed, the tag, then the read of the context it turns into) and `Effect.map`
 * over it a fourth; a consent event read some seventeen services so, about a tenth of the steps
 * its fiber ran. These read the fiber's context directly, with the same types: a service the
 * context lacks is still a requirement of the effect, so a missing port stays a compile error.
 */

/** `Effect.flatMap(tag, f)`. */
export const withService = <I, S, A, E, R>(
  tag: Context.Tag<I, S>,
  f: (service: S) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R | I> =>
  Effect.withFiberRuntime<A, E, R | I>((fiber) => f(Context.unsafeGet(fiber.currentContext as Context.Context<I>, tag)))

/** `Effect.map(tag, f)`. */
export const serviceWith = <I, S, A>(tag: Context.Tag<I, S>, f: (service: S) => A): Effect.Effect<A, never, I> =>
  Effect.withFiberRuntime<A, never, I>((fiber) => Effect.succeed(f(Context.unsafeGet(fiber.currentContext as Context.Context<I>, tag))))

/** Several services at once, in the order of their tags. */
export const withServices = <const T extends ReadonlyArray<Context.Tag<any, any>>, A, E, R>(
  tags: T,
  f: (services: { readonly [K in keyof T]: Context.Tag.Service<T[K]> }) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R | Context.Tag.Identifier<T[number]>> =>
  Effect.withFiberRuntime<A, E, R | Context.Tag.Identifier<T[number]>>((fiber) => {
    const context = fiber.currentContext as Context.Context<Context.Tag.Identifier<T[number]>>
    return f(tags.map((tag) => Context.unsafeGet(context, tag)) as unknown as { readonly [K in keyof T]: Context.Tag.Service<T[K]> })
  })
