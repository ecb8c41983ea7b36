import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { NotAuthenticated } from "../Domain/Errors.js"
import { type ConsentTokenClaims, type ConsentTokenIssuer, Storage } from "../Engine/Ports.js"
import type { Principal } from "../Engine/Principal.js"
import { membershipsOf } from "../Accounts/Members.js"
import { Tables } from "../Accounts/AccountTables.js"
import { PlatformIntegrationsResource } from "../Accounts/PlatformIntegrations.js"
import { Settings } from "../Engine/Settings.js"
import { eq } from "../Engine/Query.js"
import { ConsentTokenStates } from "../Accounts/TokenStates.js"
import { ConsentUserErasuresTable, userDigestOf } from "./UserErasures.js"

/**
 * A consent token dies with whoever minted it: checked like an access token on every request,
 * it is refused once its issuer (key, integration, membership) or its organization has been
 * removed or disabled, once the organization revoked the tokens issued before a date, and once
 * its user has been erased. Every answer comes from `ConsentTokenStates`, so a token's request
 * costs no store read while the answers are kept, and other requests none at all.
 */

/** The issuer a consent token names: who the principal minting it stands for. */
export const issuerOf = (principal: Principal): ConsentTokenIssuer | undefined => {
  switch (principal._tag) {
    case "Operator":
      return principal.via === "in-process" ? { kind: "host", id: principal.keyId } : { kind: "operator", id: principal.keyId }
    case "Client":
      return principal.via === "in-process"
        ? { kind: "host", id: principal.keyId }
        : { kind: principal.via === "integration" ? "integration" : "client", id: principal.keyId }
    case "Member":
      return { kind: "member", id: principal.personId }
    case "PublicKey":
    case "ConsentToken":
      return undefined
  }
}

const refused = (why: string) => new NotAuthenticated({ message: `The consent token is no longer valid: ${why}` })

/** Whether the issuer may still vouch for a token of `organizationId`, read from the store. */
const issuerAlive = (issuer: ConsentTokenIssuer, organizationId: string) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    switch (issuer.kind) {
      case "host":
        return true
      case "member":
        return (yield* membershipsOf(issuer.id)).includes(organizationId)
      case "integration": {
        const row = yield* storage.repository(PlatformIntegrationsResource.tableDef).get(issuer.id)
        return Option.isSome(row) && row.value.enabled === true && row.value.organization_id === organizationId
      }
      case "client":
      case "operator": {
        const row = yield* storage.repository(Tables.keys).get(issuer.id)
        if (Option.isNone(row) || row.value.enabled !== true) return false
        if (issuer.kind === "client") return row.value.organization_id === organizationId
        return row.value.is_internal === true && row.value.organization_id === (yield* Settings).operatorOrganizationId
      }
    }
  })

/**
 * Refuses a consent token whose organization, issuer or user is gone, or that its organization
 * revoked. Times are compared to the second of the token's `iat`: a token minted in the same
 * second as a revocation or an erasure is refused too (the backend mints another).
 */
export const requireLiveConsentToken = (claims: ConsentTokenClaims) =>
  Effect.gen(function*() {
    const issuer = claims.issuer
    if (issuer === undefined) return yield* Effect.fail(refused("it was minted before consent tokens named their issuer"))
    const states = yield* ConsentTokenStates
    const storage = yield* Storage
    const issuedAt = claims.iat * 1000
    const revokedBefore = yield* states.organization(
      claims.org,
      Effect.suspend(() =>
        Effect.map(storage.repository(Tables.organizations).get(claims.org), (row) =>
          Option.match(row, {
            onNone: () => undefined,
            onSome: (o) => typeof o.consent_tokens_revoked_before === "string" ? Date.parse(o.consent_tokens_revoked_before) : null
          }))
      )
    )
    if (revokedBefore === undefined) return yield* Effect.fail(refused("its organization no longer exists"))
    if (revokedBefore !== null && issuedAt <= revokedBefore) {
      return yield* Effect.fail(refused("its organization revoked the consent tokens issued before a later date"))
    }
    const alive = yield* states.issuer(issuer.kind, issuer.id, claims.org, Effect.suspend(() => issuerAlive(issuer, claims.org)))
    if (!alive) return yield* Effect.fail(refused("whoever minted it has been removed or disabled"))
    // A token issued after the organization's latest erasure cannot be refused for one: on the
    // path of every consent-token write, this saves reading its own user's erasure, a read per
    // user that a kept answer rarely saves (each user has a token of its own).
    const latestErasure = yield* states.latestErasure(
      claims.org,
      Effect.suspend(() =>
        Effect.map(
          storage.repository(ConsentUserErasuresTable).find({
            where: [eq("organization_id", claims.org)],
            sort: [{ field: "erased_at", direction: -1 }, { field: "id", direction: -1 }],
            limit: 1,
            skip: 0,
            count: false
          }),
          (page) => (page.data[0] === undefined ? null : Date.parse(page.data[0].erased_at))
        )
      )
    )
    if (latestErasure === null || issuedAt > latestErasure) return
    const userDigest = yield* userDigestOf(claims.sub)
    const erasedAt = yield* states.erasure(
      claims.org,
      userDigest,
      Effect.suspend(() =>
        Effect.map(
          storage.repository(ConsentUserErasuresTable).get({ organization_id: claims.org, id: userDigest }),
          (row) => Option.match(row, { onNone: () => null, onSome: (e) => Date.parse(e.erased_at) })
        )
      )
    )
    if (erasedAt !== null && issuedAt <= erasedAt) return yield* Effect.fail(refused("its user has been erased"))
  })
