import * as Effect from "effect/Effect"
import { nowIso } from "../Engine/Clock.js"
import { Storage } from "../Engine/Ports.js"
import { defineTable, field } from "../Engine/Tables.js"
import { ownedByOrganization } from "../Engine/Resource.js"
import { Digests } from "./ProofPorts.js"
import { ConsentTokenStates } from "../Accounts/TokenStates.js"

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
}, {
  key: ["organization_id", "id"],
  references: [ownedByOrganization],
  // The organization's latest erasure, read backwards: see `requireLiveConsentToken`.
  indexes: [{ name: "consent_user_erasures_latest", columns: ["organization_id", "erased_at", "id"] }]
})

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
    yield* Effect.flatMap(ConsentTokenStates, (s) => Effect.zipRight(s.forgetErasure(organizationId, id), s.forgetLatestErasure(organizationId)))
  }).pipe(Effect.orDie)
