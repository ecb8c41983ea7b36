import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { SigningKeys } from "../Accounts/SigningKeys.js"
import { EVENT_METADATA_TOO_LARGE, type EventUser, withinEventMetadata } from "../Domain/Consent.js"
import { InvalidInput } from "../Domain/Errors.js"
import { eq } from "../Engine/Query.js"
import { type Principal } from "../Engine/Principal.js"
import { portList } from "../Engine/Resource.js"
import { enqueue, type OutgoingEvent } from "../Webhooks/Outbox.js"
import { DeliveryHandOff, SubscriberRegistrations } from "../Webhooks/Ports.js"
import { WebhookTargets } from "../Webhooks/Targets.js"
import { Digests, MediaTypes, ProofFiles } from "./ProofPorts.js"
import { Events, EventRow, UserRow, sourceOf, users, eventOut } from "./ConsentTables.js"
import { presentUser, recompute, setState, applyEvent, loadUser, userUpdated, gpcHolds } from "./UserStates.js"
import { userByOrganizationUserId, writtenUser, tokenFields, resolveUser, firstStates } from "./EndUsers.js"
import { namedProofs } from "./EventProofs.js"
import { ConsentPolicies } from "./PolicyCache.js"
import { NoticeVersions } from "../Notices/NoticeVersions.js"
import { requireApprovedContent } from "./Wording.js"
import { applyGpc } from "./Gpc.js"
import { policyFor } from "./Policies.js"
import { checkConsentStrings, ConsentStringDecoder } from "./ConsentStrings.js"

/** How the person's choice reached the store, as a receipt tells it: null for an API credential. */
const expressionMethodOf = (p: Principal): string | null =>
  p._tag === "PublicKey" ? "public_key" : p._tag === "ConsentToken" ? "consent_token" : null

/** No GPC signal: the policy's refused purposes are not read. */
const noPurposes: Effect.Effect<ReadonlyArray<string> | undefined> = Effect.succeed(undefined)

/** What an event's create hands on: its user as the transaction found or made it. */
export interface EventCarry {
  readonly user: UserRow
  readonly createdUser: boolean
}

export const ConsentEventsResource = Events.with<
  SubscriberRegistrations | WebhookTargets | DeliveryHandOff | MediaTypes | ProofFiles | Digests | SigningKeys | ConsentStringDecoder | ConsentPolicies | NoticeVersions,
  EventCarry
>({
  // Their changes go to the outbox, addressed to the registered subscribers too; proofs may come
  // inline; the consent strings of a write are decoded; the regulation's policy says what a GPC
  // signal refuses, and users in messages show their state under it (kept in memory).
  ports: portList(SubscriberRegistrations, WebhookTargets, DeliveryHandOff, MediaTypes, ProofFiles, Digests, SigningKeys, ConsentStringDecoder, ConsentPolicies, NoticeVersions),
  hooks: {
    // A consent token reads its own user's events, whatever else the query asks.
    find: (p, query) =>
      p._tag !== "ConsentToken" ? Effect.succeed(query) : Effect.map(
        userByOrganizationUserId(p.organizationId, p.organizationUserId),
        (own) => ({ ...query, where: [...query.where, eq("user_id", Option.match(own, { onNone: () => "", onSome: (u) => u.id }))] })
      ),
    // Decoding the consent strings is CPU work that a crafted string stretches to the decoder's
    // time limit: done before the transaction, it holds no lock (on SQLite, every writer's).
    prepare: (_p, row) => Effect.map(checkConsentStrings(row.consents), (consents) => ({ row: { ...row, consents } })),
    create: (p, row, input) =>
      Effect.flatMap(writtenUser(p, row.organization_id, input.user), ({ byId, user: u }) =>
        Effect.flatMap(resolveUser(row.organization_id, u, row, byId), (resolved) => {
          // The policy says what a signal refuses: without a signal, it is not read.
          const signal = row.gpc === true || gpcHolds(resolved.user, row.regulation)
          const refused = signal ? Effect.map(policyFor(row.organization_id, row.regulation), (policy) => policy?.gpc_purpose_ids) : noPurposes
          return Effect.flatMap(refused, (purposeIds) => {
            const gpc = applyGpc(row.consents, { signal, override: input.gpc_override === true, purposeIds })
            const gpcOverride = input.gpc_override === true ? true : null
            // A new user starts with the choices as recorded (what the signal refused included), not as sent.
            const created = resolved.created === undefined ? undefined : gpc.consents === row.consents && gpcOverride === null
              ? resolved.created
              : { ...resolved.created, consent_states: firstStates({ ...row, consents: gpc.consents, gpc_override: gpcOverride }) }
            const user = created ?? resolved.user
            const inserted = created ? Effect.flatMap(users(), (repo) => repo.create(created)) : Effect.void
            const proofs = namedProofs(p, row.organization_id, user.id, row.id, [], input.proofs_id ?? [], input.proofs)
            return Effect.flatMap(
              Effect.zipRight(inserted, Effect.zipLeft(proofs, requireApprovedContent(row.organization_id, input.notice_text_content_id))),
              (proofsId) => {
                const fields = tokenFields(p, row)
                // A consent token's metadata merged in counts too (the body's own was measured when decoded).
                if (fields.metadata !== row.metadata && fields.metadata !== null && !withinEventMetadata(fields.metadata)) {
                  return Effect.failSync(() =>
                    new InvalidInput({ message: `Invalid metadata: ${EVENT_METADATA_TOO_LARGE}`, errors: { metadata: EVENT_METADATA_TOO_LARGE } })
                  )
                }
                const eventUser: EventUser = {
                  id: user.id,
                  ...(user.organization_user_id !== null ? { organization_user_id: user.organization_user_id } : {}),
                  ...(u.metadata != null ? { metadata: u.metadata } : {}),
                  ...(u.country != null ? { country: u.country } : {})
                }
                return Effect.succeed({
                  row: {
                    ...row,
                    ...fields,
                    user: eventUser,
                    user_id: user.id,
                    organization_user_id: user.organization_user_id,
                    proofs_id: proofsId,
                    consents: gpc.consents,
                    gpc: row.gpc === true,
                    gpc_conflict: gpc.conflict ? true : null,
                    gpc_override: gpcOverride,
                    expression_method: expressionMethodOf(p)
                  },
                  // The user as this transaction found or made it, so afterCreate need not read it again.
                  carry: { user, createdUser: created !== undefined }
                })
              }
            )
          })
        })),
    afterCreate: (p, stored, carry) => {
      if (!carry) return Effect.dieMessage("a consent event's create hook carries its user")
      const regulation = stored.regulation
      const organizationId = stored.organization_id
      const eventCreated: OutgoingEvent = {
        type: "event.created",
        regulation,
        parameters: { source: sourceOf(p), entity: eventOut(stored) }
      }
      const user = carry.user
      if (carry.createdUser) {
        return Effect.flatMap(presentUser(user, regulation), (entity) =>
          enqueue(organizationId, [eventCreated, { type: "user.created", regulation, parameters: { entity } }]))
      }
      // A pending event on an existing user changes nothing yet: no user.updated (spec 6.5).
      if (stored.status !== "confirmed") return enqueue(organizationId, [eventCreated])
      return Effect.flatMap(applyEvent(user, stored), (r) =>
        r.choicesChanged
          ? Effect.flatMap(userUpdated(regulation, eventOut(stored), r.before, r.after), (updated) => enqueue(organizationId, [eventCreated, updated]))
          : enqueue(organizationId, [eventCreated]))
    },
    update: (p, before, after, input) =>
      Effect.gen(function*() {
        if (before.status === "confirmed" && after.status !== "confirmed") {
          return yield* Effect.fail(
            new InvalidInput({ message: "Invalid status: a confirmed event is final", errors: { status: "confirmed is final" } })
          )
        }
        const { proofs: _inline, ...checked } = after as EventRow & { proofs?: unknown }
        const row = input.consents === undefined
          ? checked
          : { ...checked, consents: yield* checkConsentStrings(checked.consents, before.consents) }
        if (input.notice_text_content_id !== undefined) yield* requireApprovedContent(row.organization_id, input.notice_text_content_id)
        if (input.proofs_id === undefined && input.proofs === undefined) return row
        const proofsId = yield* namedProofs(
          p,
          row.organization_id,
          row.user_id,
          row.id,
          before.proofs_id,
          input.proofs_id ?? before.proofs_id,
          input.proofs
        )
        return { ...row, proofs_id: proofsId }
      }),
    afterUpdate: (p, before, after) =>
      Effect.gen(function*() {
        const regulation = after.regulation
        const out: Array<OutgoingEvent> = [{
          type: "event.updated",
          regulation,
          parameters: { source: sourceOf(p), old_entity: eventOut(before), new_entity: eventOut(after) }
        }]
        const counts = before.status === "confirmed" || after.status === "confirmed"
        const consentsChanged = JSON.stringify(before.consents) !== JSON.stringify(after.consents)
        if (counts && (consentsChanged || before.status !== after.status)) {
          const user = yield* loadUser(after.organization_id, after.user_id)
          // Confirming the newest event merges it on top; anything else is merged from scratch.
          const r = before.status !== "confirmed" && !consentsChanged
            ? yield* applyEvent(user, after)
            : yield* setState(user, regulation, yield* recompute(user, regulation))
          if (r.choicesChanged) out.push(yield* userUpdated(regulation, eventOut(after), r.before, r.after))
        }
        yield* enqueue(after.organization_id, out)
      }),
    afterRemove: (_p, removed) =>
      Effect.gen(function*() {
        const regulation = removed.regulation
        const out: Array<OutgoingEvent> = [{ type: "event.deleted", regulation, parameters: { entity: eventOut(removed) } }]
        if (removed.status === "confirmed") {
          const user = yield* Effect.flatMap(users(), (repo) =>
            repo.get({ organization_id: removed.organization_id, id: removed.user_id }))
          if (Option.isSome(user)) {
            const r = yield* setState(user.value, regulation, yield* recompute(user.value, regulation))
            if (r.choicesChanged) out.push(yield* userUpdated(regulation, eventOut(removed), r.before, r.after))
          }
        }
        yield* enqueue(removed.organization_id, out)
      })
  }
})
