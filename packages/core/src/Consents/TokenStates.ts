import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { nowIso } from "../Clock.js"
import { KeptValues, readThrough } from "../KeptValues.js"
import { Storage } from "../Ports.js"
import { defineTable, field, ownedByOrganization } from "../Resource.js"
import { Digests } from "./ProofPorts.js"

/**
 * What a consent token is checked against on every request: its organization (still there, and
 * the date before which it refuses consent tokens), its issuer (still there and enabled) and
 * its user (erased since?). Each answer is kept in memory for a moment, like the credential
 * cache's: a change through this process drops it at once, one through another server is seen
 * within `ttlMs`. Only consent-token requests read them.
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
  readonly forgetOrganization: (organizationId: string) => Effect.Effect<void>
  /** Drops what is kept about an issuer (a key, an integration, a person), in every organization. */
  readonly forgetIssuer: (issuerId: string) => Effect.Effect<void>
  readonly forgetErasure: (organizationId: string, userDigest: string) => Effect.Effect<void>
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
      return {
        organization: (organizationId, load) => readThrough(organizations, organizationId, load),
        issuer: (kind, issuerId, organizationId, load) =>
          Effect.map(
            readThrough(
              issuers,
              `${organizationId}:${kind}:${issuerId}`,
              Effect.map(load, (alive) => ({ issuerId, organizationId, alive }))
            ),
            (kept) => kept.alive
          ),
        erasure: (organizationId, userDigest, load) => readThrough(erasures, erasureKey(organizationId, userDigest), load),
        forgetOrganization: (organizationId) =>
          Effect.sync(() => {
            organizations.forget(organizationId)
            issuers.forgetWhere((kept) => kept.organizationId === organizationId)
          }),
        forgetIssuer: (issuerId) => Effect.sync(() => issuers.forgetWhere((kept) => kept.issuerId === issuerId)),
        forgetErasure: (organizationId, userDigest) => Effect.sync(() => erasures.forget(erasureKey(organizationId, userDigest)))
      }
    })
}

export const forgetTokenOrganization = (organizationId: unknown): Effect.Effect<void, never, ConsentTokenStates> =>
  typeof organizationId !== "string" ? Effect.void : Effect.flatMap(ConsentTokenStates, (s) => s.forgetOrganization(organizationId))

export const forgetTokenIssuer = (issuerId: unknown): Effect.Effect<void, never, ConsentTokenStates> =>
  typeof issuerId !== "string" ? Effect.void : Effect.flatMap(ConsentTokenStates, (s) => s.forgetIssuer(issuerId))

/**
 * The erasures of consent users, so that the tokens issued for an erased user before its
 * erasure are refused (they would make the user again). The user is named by a digest of its
 * `organization_user_id`: the erasure keeps no personal data.
 */
export const ConsentUserErasuresTable = defineTable("consent_user_erasures", {
  organization_id: field.string,
  /** SHA-256 of the erased user's `organization_user_id`. */
  id: field.string,
  erased_at: field.timestamp
}, { key: ["organization_id", "id"], references: [ownedByOrganization] })

export const userDigestOf = (organizationUserId: string) => Effect.map(Digests, (d) => d.sha256(organizationUserId))

/**
 * Records, in the erasure's transaction, that the user's consent tokens issued until now are
 * refused. A user erased again moves the date. The kept answer is dropped here already: a read
 * racing the commit is bounded by the states' time to live like any other server's.
 */
export const recordUserErasure = (organizationId: string, organizationUserId: string | null) =>
  Effect.gen(function*() {
    if (organizationUserId === null) return
    const id = yield* userDigestOf(organizationUserId)
    const repo = (yield* Storage).repository(ConsentUserErasuresTable)
    yield* repo.remove({ organization_id: organizationId, id })
    yield* repo.create({ organization_id: organizationId, id, erased_at: yield* nowIso })
    yield* Effect.flatMap(ConsentTokenStates, (s) => s.forgetErasure(organizationId, id))
  }).pipe(Effect.orDie)
