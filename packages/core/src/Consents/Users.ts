import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { ConsentTokenStates } from "../Accounts/TokenStates.js"
import { type EventConsents } from "../Domain/Consent.js"
import { type DomainError, NotFound } from "../Domain/Errors.js"
import { recordUserErasure } from "./UserErasures.js"
import { filterByConsentState } from "./ConsentStateFilter.js"
import { ConsentPolicies } from "./PolicyCache.js"
import { NoticeVersions } from "../Notices/NoticeVersions.js"
import { emptyState, mergeEvent } from "./Merge.js"
import { nextId } from "../Engine/Ports.js"
import { canAccess, type Principal } from "../Engine/Principal.js"
import { carrying } from "../Engine/Hooks.js"
import { type CoreServices } from "../Engine/Shape.js"
import { portList, type OutputOf } from "../Engine/Resource.js"
import { ensureMethodFor } from "../Engine/Bodies.js"
import { findWithin } from "../Engine/Reads.js"
import { type LookUp } from "../Engine/Shape.js"
import { requireFeature } from "../Engine/Gates.js"
import { resolveView } from "../Engine/Views.js"
import { enqueue, type OutgoingEvent } from "../Webhooks/Outbox.js"
import { DeliveryHandOff, SubscriberRegistrations } from "../Webhooks/Ports.js"
import { WebhookTargets } from "../Webhooks/Targets.js"
import { Digests, ProofFiles } from "./ProofPorts.js"
import { checkConsentStrings, ConsentStringDecoder } from "./ConsentStrings.js"
import { forgetProofFilesOf } from "./Proofs.js"
import { eraseReportsOf } from "./ProofReportRecords.js"
import { DEFAULT_REGULATION, EVENT_DEFAULTS, Users, EventRow, UserRow, events, eventOut } from "./ConsentTables.js"
import { presentUser, presentUsers, regulationsOf, withState, withLast, stateWith, userUpdated } from "./UserStates.js"


/** The confirmed event that records choices given with a user's create or patch. */
const choicesEvent = (user: UserRow, regulation: string, consents: EventConsents, at: string) =>
  Effect.map(nextId, (id): EventRow => ({
    ...EVENT_DEFAULTS,
    id,
    organization_id: user.organization_id,
    regulation,
    user: { id: user.id, ...(user.organization_user_id !== null ? { organization_user_id: user.organization_user_id } : {}) },
    consents,
    user_id: user.id,
    organization_user_id: user.organization_user_id,
    created_at: at,
    updated_at: at,
    version: 1
  }))

/** What a user's create or patch hands on: the regulation named and the event its choices became. */
export interface UserCarry {
  readonly regulation: string
  readonly event?: EventRow
}

export const ConsentUsersResource = Users.with<
  SubscriberRegistrations | WebhookTargets | DeliveryHandOff | ProofFiles | Digests | ConsentTokenStates | ConsentStringDecoder | ConsentPolicies | NoticeVersions,
  UserCarry
>({
  ports: portList(SubscriberRegistrations, WebhookTargets, DeliveryHandOff, ProofFiles, Digests, ConsentTokenStates, ConsentStringDecoder, ConsentPolicies, NoticeVersions),
  // `GET consents/users/:id?$by_organization_user_id=true`: the id is the organization's own user id.
  getBy: {
    param: "$by_organization_user_id",
    description: "`true`: the id in the path is the organization's own id of the user (`organization_user_id`), " +
      "not the server's; nothing else but `organization_id` and `regulation` may then be given",
    get: (principal, id, at) => getUserByOrganizationUserId(principal, id, at)
  },
  hooks: {
    find: (_p, query, _params, asked) => {
      const states = asked.filters.consent_state
      return states === undefined ? Effect.succeed(query) : filterByConsentState(query, asked.view.regulation ?? DEFAULT_REGULATION, states)
    },
    presentAll: (rows, view) => presentUsers(rows, view.regulation ?? DEFAULT_REGULATION),
    // A consent token sees its own user only; any other reads as absent.
    visible: (p, row) => p._tag !== "ConsentToken" || row.organization_user_id === p.organizationUserId,
    create: (_p, row, input) =>
      Effect.gen(function*() {
        const regulation = input.regulation ?? DEFAULT_REGULATION
        if (input.consents === undefined) return { row: { ...row, consent_states: {} }, carry: { regulation } }
        // Initial choices are recorded as one confirmed event, so the log explains the status.
        const event = yield* choicesEvent(row, regulation, yield* checkConsentStrings(input.consents), row.created_at)
        return {
          row: { ...row, consent_states: { [regulation]: withLast(mergeEvent(emptyState, event), event) } },
          carry: { regulation, event }
        }
      }),
    afterCreate: (_p, stored, carry) =>
      Effect.gen(function*() {
        const regulation = carry?.regulation ?? DEFAULT_REGULATION
        const out: Array<OutgoingEvent> = [{ type: "user.created", regulation, parameters: { entity: yield* presentUser(stored, regulation) } }]
        if (carry?.event) {
          const created = yield* Effect.flatMap(events(), (repo) => repo.create(carry.event!))
          out.push({ type: "event.created", regulation, parameters: { entity: eventOut(created) } })
        }
        yield* enqueue(stored.organization_id, out)
      }),
    update: (_p, _before, after, input) =>
      Effect.gen(function*() {
        const regulation = input.regulation ?? DEFAULT_REGULATION
        if (input.consents === undefined) return carrying(after, { regulation })
        // The choices become a confirmed event first, so a status merged from scratch sees it.
        const consents = yield* checkConsentStrings(input.consents)
        const event = yield* Effect.flatMap(events(), (repo) =>
          Effect.flatMap(choicesEvent(after, regulation, consents, after.updated_at), repo.create))
        const next = yield* stateWith(after, event)
        return carrying({ ...after, consent_states: withState(after.consent_states, regulation, next) }, { regulation, event })
      }),
    afterUpdate: (_p, before, after, _input, carry) =>
      Effect.gen(function*() {
        const out: Array<OutgoingEvent> = []
        if (carry?.event) out.push({ type: "event.created", regulation: carry.regulation, parameters: { entity: eventOut(carry.event) } })
        // The new choices concern their regulation; other fields concern every regulation the user has.
        const named = carry?.event ? [carry.regulation] : []
        const fieldsChanged = before.organization_user_id !== after.organization_user_id ||
          before.country !== after.country || JSON.stringify(before.metadata) !== JSON.stringify(after.metadata)
        const concerned = fieldsChanged || named.length === 0 ? [...new Set([...named, ...regulationsOf(after)])] : named
        const source = carry?.event ? eventOut(carry.event) : null
        for (const regulation of concerned) out.push(yield* userUpdated(regulation, source, before, after))
        yield* enqueue(after.organization_id, out)
      }),
    // Erasure: the bytes of its proofs go; their rows go with it like its events. Its proof
    // reports are cut down, and its consent tokens issued until now are refused from now on.
    remove: (_p, row) =>
      Effect.all([
        forgetProofFilesOf(row.organization_id, row.id),
        eraseReportsOf(row.organization_id, row.id),
        recordUserErasure(row.organization_id, row.organization_user_id)
      ], { discard: true }),
    afterRemove: (_p, removed) =>
      // Erasure: the user's events refer to it and went with it.
      Effect.flatMap(
        Effect.forEach(regulationsOf(removed), (regulation) =>
          Effect.map(presentUser(removed, regulation), (entity): OutgoingEvent => ({ type: "user.deleted", regulation, parameters: { entity } }))),
        (out) => enqueue(removed.organization_id, out)
      )
  }
})

/**
 * `GET /v1/consents/users/:id?$by_organization_user_id=true`: the id is the organization's own.
 * Like an id, it is unique only within an organization, so a principal who sees several may
 * have to name one.
 */
export const getUserByOrganizationUserId = (
  principal: Principal,
  organizationUserId: string,
  at: LookUp = {}
): Effect.Effect<OutputOf<typeof Users>, DomainError, CoreServices | ConsentPolicies | NoticeVersions> =>
  Effect.gen(function*() {
    yield* ensureMethodFor(ConsentUsersResource, principal, "get")
    const view = yield* resolveView(ConsentUsersResource, at.query)
    const row = principal._tag === "ConsentToken" && principal.organizationUserId !== organizationUserId
      ? Option.none<UserRow>()
      : yield* findWithin(Users, principal, "organization_user_id", organizationUserId, at)
    if (Option.isNone(row) || !canAccess(principal, row.value.organization_id)) {
      return yield* Effect.fail(new NotFound({ message: `No consent user found for organization user id '${organizationUserId}'` }))
    }
    yield* requireFeature(ConsentUsersResource, principal, row.value.organization_id)
    return yield* presentUser(row.value, view.regulation)
  })
