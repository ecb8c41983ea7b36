import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { nowIso } from "../Clock.js"
import {
  ConsentEvent,
  ConsentEventCreate,
  ConsentEventUpdate,
  type ConsentState,
  ConsentUser,
  ConsentUserCreate,
  ConsentUserUpdate,
  EVENT_METADATA_TOO_LARGE,
  type EventConsents,
  type EventUser,
  type EventUserInput,
  PUBLIC_EVENT_ANSWER,
  Regulation,
  type UserConsents,
  type UserConsentStates,
  withinEventMetadata
} from "../Domain/Consent.js"
import { type DomainError, Forbidden, InvalidInput, NotFound } from "../Domain/Errors.js"
import { verifyUserIdAuth } from "../Consents/VouchedUsers.js"
import { recordUserErasure } from "../Consents/UserErasures.js"
import { emptyState, mergeAll, mergeEvent, sameConsents } from "../Consents/Merge.js"
import { type OperationMetric, outcomeOf } from "../Metrics.js"
import { Ids, keyOf, Storage, type TableDef } from "../Ports.js"
import { Relations } from "../Relations.js"
import { canAccess, type EndUserPrincipal, isEndUser, type Principal } from "../Principal.js"
import { eq } from "../Query.js"
import { carrying, type CoreServices, declareResource, portList, field, jsonField, type OutputOf, type StoredRow } from "../Resource.js"
import { ensureMethodFor, findWithin, type LookUp, requireFeature, requireFlag, resolveView, toOutput } from "../Service.js"
import { enqueue, type OutgoingEvent } from "../Webhooks/Outbox.js"
import { SubscriberRegistrations } from "../Webhooks/Ports.js"
import { Digests, MediaTypes, ProofFiles } from "../Consents/ProofPorts.js"
import { FILE_BODY_LIMIT, forgetProofFilesOf, linkProofs, requireProofs, storeProof } from "./Proofs.js"
import { eraseReportsOf } from "./ProofReportRecords.js"

/**
 * Consent events and end users. A user's effective status, per regulation, is the merge of
 * its confirmed events in `created_at` order; every change is told to the organization's
 * webhooks through the outbox, in the same transaction (spec section 6).
 */

const DEFAULT_REGULATION = "gdpr"

type UserConsentsValue = Record<string, ConsentState>

/** Where `regulation` and `consents` of a user come from: the view, not a column. */
const userView = ["regulation", "consents"] as const

/** A written event counts as ingested; one through the public key is a public write, by how it ended. */
const eventWritten: OperationMetric = (metrics, { principal, status }) =>
  Effect.all([
    principal === "PublicKey" ? metrics.publicWrite(outcomeOf(status)) : Effect.void,
    status === 201 ? metrics.consentEventsIngested(1) : Effect.void
  ], { discard: true })

/** The data of the two declarations; their behaviour is added below, once the helpers exist. */
const Events = declareResource({

  name: "consent event",
  path: "consents/events",
  table: "consent_events",
  indexes: [
    { name: "consent_events_organization", columns: ["organization_id", "created_at"] },
    { name: "consent_events_user", columns: ["organization_id", "user_id", "regulation", "created_at"] },
    { name: "consent_events_organization_user", columns: ["organization_id", "organization_user_id"] }
  ],
  keyedByOrganization: true,
  output: ConsentEvent,
  createInput: ConsentEventCreate,
  updateInput: ConsentEventUpdate,
  methods: ["find", "get", "create", "patch", "remove"],
  ownerField: "organization_id",
  premiumFeature: "consents_api",
  // A visitor's page records events with the public key; a consent token records and reads its user's.
  endUsers: {
    methods: { create: ["public-key", "consent-token"], find: ["consent-token"] },
    publicAnswer: PUBLIC_EVENT_ANSWER,
    elsewhere: {
      "public-key": "A public key only records consent events (POST /v1/consents/events): other requests need an access token",
      "consent-token": "A consent token reads and records its own user's consent only"
    }
  },
  // The consents API (`/v1/consents/…`) is outside `api_requests`.
  countsApiRequests: false,
  metrics: { create: eventWritten },
  cursorPaging: true,
  privateFields: { user_id: field.string, organization_user_id: field.optionalString },
  queryable: ["user_id", "organization_user_id"],
  references: [{ field: "user_id", table: "consent_users", onDelete: "cascade" }],
  defaults: { status: "confirmed", regulation: DEFAULT_REGULATION, metadata: null, delegate: null, proofs_id: [], notice_text_content_id: null },
  // Proofs may travel inline, as data URIs.
  bodyLimit: FILE_BODY_LIMIT
})

const Users = declareResource({

  name: "consent user",
  path: "consents/users",
  table: "consent_users",
  indexes: [
    { name: "consent_users_organization", columns: ["organization_id", "created_at"] },
    // Exports page through a range of users by `updated_at`.
    { name: "consent_users_organization_updated", columns: ["organization_id", "updated_at"] }
  ],
  keyedByOrganization: true,
  transient: userView,
  // Every regulation's effective status; the output shows one of them.
  privateFields: { consent_states: jsonField<UserConsentStates>() },
  viewParams: { regulation: Regulation },
  output: ConsentUser,
  createInput: ConsentUserCreate,
  updateInput: ConsentUserUpdate,
  methods: ["find", "get", "create", "patch", "remove"],
  ownerField: "organization_id",
  premiumFeature: "consents_api",
  // A consent token reads its own user (by id or by `$by_organization_user_id`).
  endUsers: { methods: { get: ["consent-token"] } },
  // The consents API (`/v1/consents/…`) is outside `api_requests`.
  countsApiRequests: false,
  cursorPaging: true,
  unique: [["organization_id", "organization_user_id"]],
  passthrough: ["$by_organization_user_id"],
  defaults: { consent_states: {}, metadata: null, country: null, organization_user_id: null },
})

type EventRow = StoredRow<typeof Events>
type UserRow = StoredRow<typeof Users>

/**
 * Who made a change (the `source` of `event.created` and `event.updated`): a public key is
 * named by its organization, never by its value; a consent token by its id.
 */
const sourceOf = (p: Principal) => {
  switch (p._tag) {
    case "Member":
      return { type: "member", id: p.personId }
    case "Operator":
      return { type: "operator", id: p.keyId }
    case "Client":
      return { type: "api-key", id: p.keyId }
    case "PublicKey":
      return { type: "public-key", organization_id: p.organizationId }
    case "ConsentToken":
      return { type: "consent-token", id: p.tokenId }
  }
}

const users = () => Effect.map(Storage, (s) => s.repository(Users.tableDef))
const events = () => Effect.map(Storage, (s) => s.repository(Events.tableDef))

const eventOut = (row: EventRow) => toOutput(Events, row)

/** An effective status with the shape of an event's `consents`, every list present. */
export const consentsView = (state: ConsentState | undefined): UserConsents => {
  const v = state?.vendors ?? {}
  return {
    purposes: state?.purposes ?? [],
    vendors: { enabled: v.enabled ?? [], disabled: v.disabled ?? [], enabled_li: v.enabled_li ?? [], disabled_li: v.disabled_li ?? [] },
    ...(state?.tcfcs !== undefined ? { tcfcs: state.tcfcs } : {})
  }
}

/**
 * A regulation is a client's code, so it may be the name of a property every object inherits
 * (`constructor`, `__proto__`): read and write the states by own keys only.
 */
const stateOf = (states: UserConsentStates, regulation: string): ConsentState | undefined =>
  Object.hasOwn(states, regulation) ? states[regulation] : undefined

/** A user as clients see it: its effective status for one regulation. */
export const userOut = (row: UserRow, regulation: string = DEFAULT_REGULATION) =>
  toOutput(Users, row, { regulation, consents: consentsView(stateOf(row.consent_states, regulation)) })

/** The regulations a user has a status for (`gdpr` when none): what a change of the user concerns. */
export const regulationsOf = (row: UserRow): ReadonlyArray<string> => {
  const known = Object.keys(row.consent_states)
  return known.length > 0 ? known : [DEFAULT_REGULATION]
}

/** Every confirmed event of a user for a regulation, merged from scratch. */
const recompute = (user: UserRow, regulation: string) =>
  Effect.gen(function*() {
    const repo = yield* events()
    const all: Array<{ consents: EventConsents; created_at: string; id: string }> = []
    for (let skip = 0;; skip += 1000) {
      const page = yield* repo.find({
        count: false,
        where: [
          eq("organization_id", user.organization_id),
          eq("user_id", user.id),
          eq("regulation", regulation),
          eq("status", "confirmed")
        ],
        sort: [{ field: "created_at", direction: 1 }],
        limit: 1000,
        skip
      })
      for (const e of page.data) {
        all.push({ consents: e.consents, created_at: e.created_at, id: e.id })
      }
      if (page.data.length < 1000) break
    }
    return all.length === 0 ? undefined : mergeAll(all)
  })

const withState = (states: UserConsentStates, regulation: string, next: ConsentState | undefined): UserConsentsValue => {
  const out: UserConsentsValue = { ...states }
  if (next === undefined) delete out[regulation]
  // Not `out[regulation] = next`: under `__proto__` that would replace the prototype instead.
  else Object.defineProperty(out, regulation, { value: next, enumerable: true, writable: true, configurable: true })
  return out
}

/**
 * A user's status once a newly confirmed event counts: merged on top when it is the newest,
 * else from scratch (the event must be stored by then).
 */
const stateWith = (user: UserRow, event: { regulation: string; consents: EventConsents; created_at: string }) => {
  const current = stateOf(user.consent_states, event.regulation)
  return current === undefined || (current.updated_at ?? "") <= event.created_at
    ? Effect.succeed<ConsentState | undefined>(mergeEvent(current ?? emptyState, event))
    : recompute(user, event.regulation)
}

/**
 * Writes a user's new state for one regulation when it differs; answers the user before and
 * after, and whether the choices (not just the time) changed.
 */
const setState = (user: UserRow, regulation: string, next: ConsentState | undefined) =>
  Effect.gen(function*() {
    const current = stateOf(user.consent_states, regulation)
    const choicesChanged = !sameConsents(current, next)
    if (!choicesChanged && current?.updated_at === next?.updated_at) return { before: user, after: user, choicesChanged }
    const repo = yield* users()
    const after = yield* repo.patch(
      keyOf(Users.tableDef, user),
      { consent_states: withState(user.consent_states, regulation, next), updated_at: yield* nowIso },
      user.version
    )
    return { before: user, after, choicesChanged }
  })

/** Applies a newly confirmed event: incrementally when it is the newest, else from scratch. */
const applyEvent = (user: UserRow, event: EventRow) =>
  Effect.gen(function*() {
    return yield* setState(user, event.regulation, yield* stateWith(user, event))
  })

const loadUser = (organizationId: string, id: string) =>
  Effect.flatMap(users(), (repo) =>
    Effect.flatMap(repo.get({ organization_id: organizationId, id }), Option.match({
      onNone: () => Effect.dieMessage(`consent user ${id} vanished inside its transaction`),
      onSome: Effect.succeed
    })))

const userUpdated = (regulation: string, source: unknown, before: UserRow, after: UserRow): OutgoingEvent => ({
  type: "user.updated",
  regulation,
  parameters: { source, old_entity: userOut(before, regulation), new_entity: userOut(after, regulation) }
})

// ---------------------------------------------------------------- events

/** Consent of known users (with `organization_user_id`) or of guests, recorded by end users. */
const requireEndUserFeature = (organizationId: string, known: boolean) =>
  requireFlag(known ? "store_cmp_consents" : "store_guest_cmp_consents", organizationId)

const userById = (organizationId: string, id: string) =>
  Effect.flatMap(users(), (repo) => repo.get({ organization_id: organizationId, id }))

export const userByOrganizationUserId = (organizationId: string, organizationUserId: string) =>
  Effect.map(
    Effect.flatMap(users(), (repo) =>
      repo.find({
        count: false,
        where: [eq("organization_id", organizationId), eq("organization_user_id", organizationUserId)],
        sort: [],
        ordered: false,
        limit: 1,
        skip: 0
      })),
    (page) => Option.fromNullable(page.data[0])
  )

/**
 * The proofs an event names once written: those `named` (the organization's own), then the
 * files sent inline, kept now as its user's proofs. End users may send files but not name
 * proofs already kept: they could not have seen them.
 */
const namedProofs = (
  p: Principal,
  organizationId: string,
  userId: string,
  eventId: string,
  before: ReadonlyArray<string>,
  named: ReadonlyArray<string>,
  inline: ReadonlyArray<{ readonly file: string }> | undefined
) =>
  Effect.gen(function*() {
    const changed = named.length > 0 || (inline?.length ?? 0) > 0 || before.length > 0
    if (!changed) return [] as Array<string>
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

/** The wording an event names must be an approved content of its organization. */
const requireApprovedContent = (organizationId: string, contentId: string | null | undefined) =>
  Effect.gen(function*() {
    if (contentId === undefined || contentId === null) return
    // Found by name among the stored tables: the notices' declarations name consent events (a TC
    // string of an event), so importing them here would make the two modules need each other.
    const table = (yield* Relations).tables.find((t) => t.table === "notice_text_contents") as TableDef | undefined
    if (table === undefined) return yield* Effect.dieMessage("notice_text_contents is not a stored table")
    const found = yield* Effect.flatMap(Storage, (s) => s.repository(table).get(contentId))
    if (Option.isNone(found) || found.value.organization_id !== organizationId || found.value.status !== "approved") {
      return yield* Effect.fail(new InvalidInput({
        message: "Invalid notice_text_content_id: it names no approved notice text content of this organization",
        errors: { notice_text_content_id: "names no approved notice text content of this organization" }
      }))
    }
  })

const notYours = () => new Forbidden({ message: "Invalid user: user.id names another user than the one this credential vouches for" })

/**
 * The user an end user's write may name. A guest (no `organization_user_id`) is named by the id
 * its device keeps, and may not be a known person: that would change their consent without
 * proof. A known user needs the organization's word for its id: a consent token, or a signed
 * user id. Either way `user.id` may not name someone else.
 */
const endUserOf = (p: EndUserPrincipal, organizationId: string, u: EventUserInput) =>
  Effect.gen(function*() {
    const { organization_user_id_auth: auth, ...user } = u
    if (p._tag === "ConsentToken") {
      if (u.organization_user_id != null && u.organization_user_id !== p.organizationUserId) {
        return yield* Effect.fail(new Forbidden({ message: "Invalid user: a consent token records its own user's consent only" }))
      }
      yield* requireEndUserFeature(organizationId, true)
      const own = yield* userByOrganizationUserId(organizationId, p.organizationUserId)
      if (Option.isSome(own)) {
        if (u.id != null && u.id !== own.value.id) return yield* Effect.fail(notYours())
        return { user: { ...user, id: own.value.id, organization_user_id: p.organizationUserId }, byId: own }
      }
      const byId = u.id != null ? yield* userById(organizationId, u.id) : undefined
      if (byId !== undefined && Option.isSome(byId)) return yield* Effect.fail(notYours())
      return { user: { ...user, organization_user_id: p.organizationUserId }, byId }
    }
    if (u.organization_user_id == null) {
      yield* requireEndUserFeature(organizationId, false)
      if (u.id == null) {
        return yield* Effect.fail(new InvalidInput({
          message: "Invalid user: a guest's consent names user.id, the id its device keeps",
          errors: { "user.id": "is required for a guest" }
        }))
      }
      const found = yield* userById(organizationId, u.id)
      if (Option.isSome(found) && found.value.organization_user_id !== null) {
        return yield* Effect.fail(new Forbidden({
          message: "Invalid user: this user is a known person; record their consent with their vouched-for user id"
        }))
      }
      return { user, byId: found }
    }
    yield* requireEndUserFeature(organizationId, true)
    yield* verifyUserIdAuth(organizationId, u.organization_user_id, auth)
    if (u.id == null) return { user, byId: undefined }
    const found = yield* userById(organizationId, u.id)
    if (Option.isSome(found) && found.value.organization_user_id !== u.organization_user_id) return yield* Effect.fail(notYours())
    return { user, byId: found }
  })

/**
 * The user a write names, as checked for its principal (a backend's signed id is checked too,
 * never kept), and the user its `id` names when the check already read it.
 */
const writtenUser = (p: Principal, organizationId: string, u: EventUserInput) =>
  Effect.gen(function*() {
    if (isEndUser(p)) return yield* endUserOf(p, organizationId, u)
    const { organization_user_id_auth: auth, ...user } = u
    if (auth !== undefined && u.organization_user_id != null) yield* verifyUserIdAuth(organizationId, u.organization_user_id, auth)
    return { user, byId: undefined }
  })

/** A consent token's metadata under the event's own (the event's keys win), and its delegate. */
const tokenFields = (p: Principal, row: Pick<EventRow, "metadata" | "delegate">): Pick<EventRow, "metadata" | "delegate"> => {
  if (p._tag === "PublicKey") return { metadata: row.metadata, delegate: null }
  if (p._tag !== "ConsentToken") return { metadata: row.metadata, delegate: row.delegate }
  return {
    metadata: p.metadata === undefined ? row.metadata : { ...p.metadata, ...row.metadata },
    delegate: (p.delegate as EventRow["delegate"] | undefined) ?? null
  }
}

/** Finds the event's user in the organization, or builds the new one the event creates. */
const resolveUser = (
  organizationId: string,
  u: EventUser,
  event: { status: string; regulation: string; consents: EventConsents; created_at: string },
  byId?: Option.Option<UserRow>
) =>
  Effect.gen(function*() {
    if (!u.id && !u.organization_user_id) {
      return yield* Effect.fail(
        new InvalidInput({
          message: "Invalid user: give user.id or user.organization_user_id",
          errors: { user: "needs id or organization_user_id" }
        })
      )
    }
    // Only this organization's users: another may use the same id for a user of its own.
    const found = u.id
      ? byId ?? (yield* userById(organizationId, u.id))
      : yield* userByOrganizationUserId(organizationId, u.organization_user_id!)
    if (Option.isSome(found)) return { user: found.value, created: undefined }
    const now = yield* nowIso
    // A new user created by a confirmed event starts with that event's choices (version 1).
    const consentStates: UserConsentsValue = event.status === "confirmed"
      ? { [event.regulation]: mergeEvent(emptyState, event) }
      : {}
    const created: UserRow = {
      id: u.id ?? (yield* Effect.flatMap(Ids, (ids) => ids.next)),
      organization_id: organizationId,
      organization_user_id: u.organization_user_id ?? null,
      metadata: u.metadata ?? null,
      country: u.country ?? null,
      consent_states: consentStates,
      created_at: now,
      updated_at: now,
      version: 1
    }
    return { user: created, created }
  })

/** What an event's create hands on: its user as the transaction found or made it. */
export interface EventCarry {
  readonly user: UserRow
  readonly createdUser: boolean
}

export const ConsentEventsResource = Events.with<SubscriberRegistrations | MediaTypes | ProofFiles | Digests, EventCarry>({
  // Their changes go to the outbox, addressed to the registered subscribers too; proofs may come inline.
  ports: portList(SubscriberRegistrations, MediaTypes, ProofFiles, Digests),
  hooks: {
    // A consent token reads its own user's events, whatever else the query asks.
    find: (p, query) =>
      p._tag !== "ConsentToken" ? Effect.succeed(query) : Effect.map(
        userByOrganizationUserId(p.organizationId, p.organizationUserId),
        (own) => ({ ...query, where: [...query.where, eq("user_id", Option.match(own, { onNone: () => "", onSome: (u) => u.id }))] })
      ),
    create: (p, row, input) =>
      Effect.gen(function*() {
        const { byId, user: u } = yield* writtenUser(p, row.organization_id, input.user)
        const { created, user } = yield* resolveUser(row.organization_id, u, row, byId)
        if (created) yield* Effect.flatMap(users(), (repo) => repo.create(created))
        const proofsId = yield* namedProofs(p, row.organization_id, user.id, row.id, [], input.proofs_id ?? [], input.proofs)
        yield* requireApprovedContent(row.organization_id, input.notice_text_content_id)
        const eventUser: EventUser = {
          id: user.id,
          ...(user.organization_user_id !== null ? { organization_user_id: user.organization_user_id } : {}),
          ...(u.metadata != null ? { metadata: u.metadata } : {}),
          ...(u.country != null ? { country: u.country } : {})
        }
        const fields = tokenFields(p, row)
        // A consent token's metadata merged in counts too (the body's own was measured when decoded).
        if (fields.metadata !== row.metadata && fields.metadata !== null && !withinEventMetadata(fields.metadata)) {
          return yield* Effect.fail(new InvalidInput({
            message: `Invalid metadata: ${EVENT_METADATA_TOO_LARGE}`,
            errors: { metadata: EVENT_METADATA_TOO_LARGE }
          }))
        }
        return {
          row: {
            ...row,
            ...fields,
            user: eventUser,
            user_id: user.id,
            organization_user_id: user.organization_user_id,
            proofs_id: proofsId
          },
          // The user as this transaction found or made it, so afterCreate need not read it again.
          carry: { user, createdUser: created !== undefined }
        }
      }),
    afterCreate: (p, stored, carry) =>
      Effect.gen(function*() {
        const regulation = stored.regulation
        const out: Array<OutgoingEvent> = [{
          type: "event.created",
          regulation,
          parameters: { source: sourceOf(p), entity: eventOut(stored) }
        }]
        if (!carry) return yield* Effect.dieMessage("a consent event's create hook carries its user")
        const user = carry.user
        if (carry.createdUser) {
          out.push({ type: "user.created", regulation, parameters: { entity: userOut(user, regulation) } })
        } else if (stored.status === "confirmed") {
          const r = yield* applyEvent(user, stored)
          if (r.choicesChanged) out.push(userUpdated(regulation, eventOut(stored), r.before, r.after))
        }
        // A pending event on an existing user changes nothing yet: no user.updated (spec 6.5).
        yield* enqueue(stored.organization_id, out)
      }),
    update: (p, before, after, input) =>
      Effect.gen(function*() {
        if (before.status === "confirmed" && after.status !== "confirmed") {
          return yield* Effect.fail(
            new InvalidInput({ message: "Invalid status: a confirmed event is final", errors: { status: "confirmed is final" } })
          )
        }
        const { proofs: _inline, ...row } = after as EventRow & { proofs?: unknown }
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
          if (r.choicesChanged) out.push(userUpdated(regulation, eventOut(after), r.before, r.after))
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
            if (r.choicesChanged) out.push(userUpdated(regulation, eventOut(removed), r.before, r.after))
          }
        }
        yield* enqueue(removed.organization_id, out)
      })
  }
})

// ---------------------------------------------------------------- users

/** The confirmed event that records choices given with a user's create or patch. */
const choicesEvent = (user: UserRow, regulation: string, consents: EventConsents, at: string) =>
  Effect.map(Effect.flatMap(Ids, (ids) => ids.next), (id): EventRow => ({
    id,
    organization_id: user.organization_id,
    status: "confirmed",
    regulation,
    metadata: null,
    delegate: null,
    proofs_id: [],
    notice_text_content_id: null,
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

export const ConsentUsersResource = Users.with<SubscriberRegistrations | ProofFiles | Digests, UserCarry>({
  ports: portList(SubscriberRegistrations, ProofFiles, Digests),
  // `GET consents/users/:id?$by_organization_user_id=true`: the id is the organization's own user id.
  getBy: { param: "$by_organization_user_id", get: (principal, id, at) => getUserByOrganizationUserId(principal, id, at) },
  hooks: {
    present: (row, view) => userOut(row, view.regulation ?? DEFAULT_REGULATION),
    // A consent token sees its own user only; any other reads as absent.
    visible: (p, row) => p._tag !== "ConsentToken" || row.organization_user_id === p.organizationUserId,
    create: (_p, row, input) =>
      Effect.gen(function*() {
        const regulation = input.regulation ?? DEFAULT_REGULATION
        if (input.consents === undefined) return { row: { ...row, consent_states: {} }, carry: { regulation } }
        // Initial choices are recorded as one confirmed event, so the log explains the status.
        const event = yield* choicesEvent(row, regulation, input.consents, row.created_at)
        return {
          row: { ...row, consent_states: { [regulation]: mergeEvent(emptyState, event) } },
          carry: { regulation, event }
        }
      }),
    afterCreate: (_p, stored, carry) =>
      Effect.gen(function*() {
        const regulation = carry?.regulation ?? DEFAULT_REGULATION
        const out: Array<OutgoingEvent> = [{ type: "user.created", regulation, parameters: { entity: userOut(stored, regulation) } }]
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
        const event = yield* Effect.flatMap(events(), (repo) =>
          Effect.flatMap(choicesEvent(after, regulation, input.consents!, after.updated_at), repo.create))
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
        for (const regulation of concerned) out.push(userUpdated(regulation, source, before, after))
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
      enqueue(
        removed.organization_id,
        regulationsOf(removed).map((regulation) => ({
          type: "user.deleted",
          regulation,
          parameters: { entity: userOut(removed, regulation) }
        }))
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
): Effect.Effect<OutputOf<typeof Users>, DomainError, CoreServices> =>
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
    return userOut(row.value, view.regulation)
  })
