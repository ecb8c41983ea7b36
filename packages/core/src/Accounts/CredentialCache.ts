import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { KeptValues, readThrough } from "../Engine/KeptValues.js"

/**
 * The tables whose rows open sessions that must end when the row is deleted, and the public
 * keys (an organization's `public_api_key`, which ends with its organization).
 */
export type CredentialTable = "api_keys" | "platform_integrations" | "public_keys"

/**
 * Whom a credential belongs to, and, for one a rotation replaced (a previous public key), the
 * date it ends: kept with the entry so that every request compares it with the clock, and no
 * kept copy answers past it.
 */
export interface CredentialHolder {
  readonly organizationId: string
  readonly until?: string | undefined
}

/**
 * Whether the credential behind a token still exists, kept in memory for a moment. Every request
 * with a key's token asks, so a store read each time would double the cost of a keyed read.
 *
 * An entry answers for `ttlMs` from the moment its read *started*: a read racing a delete in
 * another process can only have seen the row before the delete committed, so it is trusted no
 * longer than any other. A delete through this process drops the entries at once, and a read
 * that was already under way when it happened is not kept, so this process never answers from
 * a copy older than its own delete. Time is the process's monotonic clock: the bound is about
 * how long another server may still serve a copy, which a moved wall clock must not stretch.
 */
export interface CredentialCacheService {
  /** The credential's holder while it exists, `undefined` once it is gone. */
  readonly read: <R>(
    table: CredentialTable,
    id: string,
    load: Effect.Effect<CredentialHolder | undefined, never, R>
  ) => Effect.Effect<CredentialHolder | undefined, never, R>
  readonly forget: (table: CredentialTable, id: string) => Effect.Effect<void>
  /** Removing an organization removes its credentials in the same transaction. */
  readonly forgetOrganization: (organizationId: string) => Effect.Effect<void>
}

export class CredentialCache extends Context.Tag("@cmp/core/CredentialCache")<CredentialCache, CredentialCacheService>() {
  /** `ttlMs` well under a second, so every server refuses a deleted credential's token within one. */
  static readonly layer = (ttlMs = 500, now?: () => number): Layer.Layer<CredentialCache> =>
    Layer.sync(CredentialCache, () => {
      const kept = new KeptValues<CredentialHolder | undefined>(ttlMs, now)
      const keyOf = (table: CredentialTable, id: string) => `${table}:${id}`
      return {
        // Asked while authenticating, before any transaction: a caller may wait for another's load.
        read: (table, id, load) => readThrough(kept, keyOf(table, id), load, true),
        forget: (table, id) => Effect.sync(() => kept.forget(keyOf(table, id))),
        forgetOrganization: (organizationId) => Effect.sync(() => kept.forgetWhere((holder) => holder?.organizationId === organizationId))
      }
    })
}

export const forgetCredential = (table: CredentialTable, id: unknown): Effect.Effect<void, never, CredentialCache> =>
  typeof id !== "string" ? Effect.void : Effect.flatMap(CredentialCache, (cache) => cache.forget(table, id))

export const forgetOrganizationCredentials = (organizationId: unknown): Effect.Effect<void, never, CredentialCache> =>
  typeof organizationId !== "string"
    ? Effect.void
    : Effect.flatMap(CredentialCache, (cache) => cache.forgetOrganization(organizationId))
