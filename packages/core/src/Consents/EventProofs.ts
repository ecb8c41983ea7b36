import * as Effect from "effect/Effect"
import { Forbidden } from "../Domain/Errors.js"
import { isEndUser, type Principal } from "../Engine/Principal.js"
import { requireFlag } from "../Engine/Gates.js"
import { linkProofs, requireProofs, storeProof } from "./Proofs.js"

/**
 * The proofs an event names once written: those `named` (the organization's own), then the
 * files sent inline, kept now as its user's proofs. End users may send files but not name
 * proofs already kept: they could not have seen them.
 */
export const namedProofs = (
  p: Principal,
  organizationId: string,
  userId: string,
  eventId: string,
  before: ReadonlyArray<string>,
  named: ReadonlyArray<string>,
  inline: ReadonlyArray<{ readonly file: string }> | undefined
) =>
  // Most events name and send no proofs: then nothing is read or linked.
  named.length === 0 && (inline?.length ?? 0) === 0 && before.length === 0 ? Effect.succeed<Array<string>>([]) : Effect.gen(function*() {
    if (isEndUser(p) && named.length > 0) {
      return yield* Effect.fail(new Forbidden({ message: "A public key or consent token may send proofs, not name proofs already kept" }))
    }
    if (named.length > 0 || (inline?.length ?? 0) > 0) yield* requireFlag("versions_and_proofs", organizationId)
    yield* requireProofs(organizationId, named.filter((id) => !before.includes(id)), "proofs_id")
    const kept: Array<string> = []
    for (const [i, proof] of (inline ?? []).entries()) {
      kept.push((yield* storeProof(organizationId, proof.file, userId, `proofs.${i}.file`)).id)
    }
    const all = [...new Set([...named, ...kept])]
    yield* linkProofs(organizationId, eventId, before, all)
    return all
  })
