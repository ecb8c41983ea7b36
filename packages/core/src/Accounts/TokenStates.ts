import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { KeptValues, readThrough } from "../Engine/KeptValues.js"

/**
 * What a consent token is checked against on every request: its organization (still there, and
 * the date before which it refuses consent tokens), its issuer (still there and enabled) and
 * its user (any user of the organization erased since? then, only if so, this one?). Each
 * answer is kept in memory for a moment, like the credential cache's: a change through this
 * process drops it at once, one through another server is seen within `ttlMs`. Only
 * consent-token requests read them, while authenticating, before any transaction: a caller may
 * wait for another's load of the same answer (`KeptValues`).
 */
export interface ConsentTokenStatesService {
  /** The organization's `consent_tokens_revoked_before` in epoch ms, `null` for none, `undefined` once it is gone. */
  readonly organization: <E, R>(
    organizationId: string,
    load: Effect.Effect<number | null | undefined, E, R>
  ) => Effect.Effect<number | null | undefined, E, R>
  /** Whether the issuer (a key, an integration, a person: its kind and id) may still vouch for tokens of the organization. */
  readonly issuer: <E, R>(
    kind: string,
    issuerId: string,
    organizationId: string,
    load: Effect.Effect<boolean, E, R>
  ) => Effect.Effect<boolean, E, R>
  /** When the organization's user was last erased, in epoch ms, or `null`. */
  readonly erasure: <E, R>(
    organizationId: string,
    userDigest: string,
    load: Effect.Effect<number | null, E, R>
  ) => Effect.Effect<number | null, E, R>
  /** When the organization last erased any of its users, in epoch ms, or `null`. */
  readonly latestErasure: <E, R>(
    organizationId: string,
    load: Effect.Effect<number | null, E, R>
  ) => Effect.Effect<number | null, E, R>
  readonly forgetOrganization: (organizationId: string) => Effect.Effect<void>
  /** Drops what is kept about an issuer (a key, an integration, a person), in every organization. */
  readonly forgetIssuer: (issuerId: string) => Effect.Effect<void>
  readonly forgetErasure: (organizationId: string, userDigest: string) => Effect.Effect<void>
  readonly forgetLatestErasure: (organizationId: string) => Effect.Effect<void>
}

interface KeptIssuer {
  readonly issuerId: string
  readonly organizationId: string
  readonly alive: boolean
}

export class ConsentTokenStates extends Context.Tag("@cmp/core/ConsentTokenStates")<ConsentTokenStates, ConsentTokenStatesService>() {
  /** `ttlMs` well under a second, so every server refuses a revoked token within one. */
  static readonly layer = (ttlMs = 500, now?: () => number): Layer.Layer<ConsentTokenStates> =>
    Layer.sync(ConsentTokenStates, () => {
      const organizations = new KeptValues<number | null | undefined>(ttlMs, now)
      const issuers = new KeptValues<KeptIssuer>(ttlMs, now)
      const erasures = new KeptValues<number | null>(ttlMs, now)
      const erasureKey = (organizationId: string, userDigest: string) => `${organizationId}:${userDigest}`
      const latestErasures = new KeptValues<number | null>(ttlMs, now)
      return {
        organization: (organizationId, load) => readThrough(organizations, organizationId, load, true),
        issuer: (kind, issuerId, organizationId, load) =>
          Effect.map(
            readThrough(
              issuers,
              `${organizationId}:${kind}:${issuerId}`,
              Effect.map(load, (alive) => ({ issuerId, organizationId, alive })),
              true
            ),
            (kept) => kept.alive
          ),
        erasure: (organizationId, userDigest, load) => readThrough(erasures, erasureKey(organizationId, userDigest), load, true),
        latestErasure: (organizationId, load) => readThrough(latestErasures, organizationId, load, true),
        forgetOrganization: (organizationId) =>
          Effect.sync(() => {
            organizations.forget(organizationId)
            issuers.forgetWhere((kept) => kept.organizationId === organizationId)
          }),
        forgetIssuer: (issuerId) => Effect.sync(() => issuers.forgetWhere((kept) => kept.issuerId === issuerId)),
        forgetErasure: (organizationId, userDigest) => Effect.sync(() => erasures.forget(erasureKey(organizationId, userDigest))),
        forgetLatestErasure: (organizationId) => Effect.sync(() => latestErasures.forget(organizationId))
      }
    })
}

export const forgetTokenOrganization = (organizationId: unknown): Effect.Effect<void, never, ConsentTokenStates> =>
  typeof organizationId !== "string" ? Effect.void : Effect.flatMap(ConsentTokenStates, (s) => s.forgetOrganization(organizationId))

export const forgetTokenIssuer = (issuerId: unknown): Effect.Effect<void, never, ConsentTokenStates> =>
  typeof issuerId !== "string" ? Effect.void : Effect.flatMap(ConsentTokenStates, (s) => s.forgetIssuer(issuerId))
