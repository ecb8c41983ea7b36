import type * as Effect from "effect/Effect"
import type { DomainError } from "../Domain/Errors.js"
import type { Row } from "./Ports.js"
import type { Principal } from "./Principal.js"
import type { FindQuery } from "./Query.js"
import { View, CoreServices, Shape, AnyShape } from "./Shape.js"

/** What a find asked beyond its conditions: the view it shows, the computed filters it gave. */
export interface FindAsked {
  readonly view: View
  readonly filters: Readonly<Record<string, ReadonlyArray<string>>>
}

/** What a `create` hook hands on: the row to insert, values shown once, data for `afterCreate`. */
export interface Prepared<Stored, Carry = never> {
  readonly row: Stored
  readonly reveal?: Row
  readonly carry?: Carry
}

const CarriedTag: unique symbol = Symbol.for("@cmp/core/Resource/Carried")

/** A row an `update` hook completed, with what `afterUpdate` needs of the preparation. */
export interface Carried<Stored, Carry> {
  readonly [CarriedTag]: true
  readonly row: Stored
  readonly carry: Carry
}

export const carrying = <Stored, Carry>(row: Stored, carry: Carry): Carried<Stored, Carry> => ({
  [CarriedTag]: true,
  row,
  carry
})

export const isCarried = <A, C>(u: A | Carried<A, C>): u is Carried<A, C> =>
  typeof u === "object" && u !== null && CarriedTag in u

/**
 * The special behaviour of a resource, run inside the write's transaction, typed by the
 * resource's shape. `R`: the ports it needs beyond the core services; `Carry`: what `create`
 * hands to `afterCreate`.
 */
export interface Hooks<S extends Shape = AnyShape, R = never, Carry = never> {
  /**
   * Narrows a find for the principal, after organization scope is applied; `asked` holds the
   * find's view and the computed filters it gave (`filters` of the declaration).
   */
  find?(
    principal: Principal,
    query: FindQuery,
    params: Readonly<Record<string, unknown>>,
    asked: FindAsked
  ): Effect.Effect<FindQuery, DomainError, CoreServices | R>
  /** Whether the principal may see this row at all; an invisible row is a 404. */
  visible?(principal: Principal, row: S["stored"]): boolean
  /**
   * Completes a new row before the write's transaction begins, holding no lock: for a create
   * that reads much (a proof report reads its user's chain of the consent log) or works long.
   * What it answers is what `create` then completes, and its `carry` reaches `afterCreate`
   * unless `create` hands on one of its own.
   */
  prepare?(
    principal: Principal,
    row: S["stored"],
    input: S["create"]
  ): Effect.Effect<Prepared<S["stored"], Carry>, DomainError, CoreServices | R>
  /**
   * Completes a new row; `reveal` holds values shown once in the response (secrets), `carry`
   * what `afterCreate` needs of the preparation (the user an event found or made).
   */
  create?(
    principal: Principal,
    row: S["stored"],
    input: S["create"]
  ): Effect.Effect<Prepared<S["stored"], Carry>, DomainError, CoreServices | R>
  /** Runs after the insert, in its transaction, with what `create` carried over. */
  afterCreate?(
    principal: Principal,
    row: S["stored"],
    carry: NoInfer<Carry> | undefined
  ): Effect.Effect<void, DomainError, CoreServices | R>
  /**
   * Checks or completes a changed row (state machines, derived fields); `carrying(row, carry)`
   * hands data on to `afterUpdate` (the event a user's patch recorded).
   */
  update?(
    principal: Principal,
    before: S["stored"],
    after: S["stored"],
    input: Partial<S["update"]>
  ): Effect.Effect<S["stored"] | Carried<S["stored"], Carry>, DomainError, CoreServices | R>
  remove?(principal: Principal, row: S["stored"]): Effect.Effect<void, DomainError, CoreServices | R>
  /** Runs after an update or patch, in its transaction; `input` is the validated body. */
  afterUpdate?(
    principal: Principal,
    before: S["stored"],
    after: S["stored"],
    input: Partial<S["update"]>,
    carry: NoInfer<Carry> | undefined
  ): Effect.Effect<void, DomainError, CoreServices | R>
  /** Runs after a remove, in its transaction. */
  afterRemove?(principal: Principal, removed: S["stored"]): Effect.Effect<void, DomainError, CoreServices | R>
  /** Runs once the write's transaction has committed, with its output (to drop a cached copy). */
  afterCommit?(output: S["output"]): Effect.Effect<void, never, CoreServices | R>
  /**
   * Makes the output of a row when it depends on the request's view parameters (a consent
   * user shows the state of one regulation); without it, the output is the row's own fields.
   */
  present?(row: S["stored"], view: View): S["output"]
  /**
   * Makes the outputs of rows when they also depend on other rows or on the time (a consent
   * user's state under its organization's policy): one call per answer, so what it reads is
   * read once for a page. Wins over `present`.
   */
  presentAll?(rows: ReadonlyArray<S["stored"]>, view: View): Effect.Effect<ReadonlyArray<S["output"]>, never, CoreServices | R>
  /** Adds related data to the output of a `get` (a delivery's attempts). */
  expand?(principal: Principal, row: S["stored"], output: S["output"]): Effect.Effect<S["output"], DomainError, CoreServices | R>
}
