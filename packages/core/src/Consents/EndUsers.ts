import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { nowIso } from "../Engine/Clock.js"
import { both } from "../Engine/Sequence.js"
import { type EventConsents, type EventUser, type EventUserInput } from "../Domain/Consent.js"
import { Forbidden, InvalidInput } from "../Domain/Errors.js"
import { verifyUserIdAuth } from "./VouchedUsers.js"
import { emptyState, type MergeableEvent, mergeEvent, withLast } from "./Merge.js"
import { type Ids, nextId } from "../Engine/Ports.js"
import { type EndUserPrincipal, isEndUser, type Principal } from "../Engine/Principal.js"
import { eq } from "../Engine/Query.js"
import { requireFlag } from "../Engine/Gates.js"
import { UserConsentsValue, EventRow, UserRow, users } from "./ConsentTables.js"

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
export const writtenUser = (p: Principal, organizationId: string, u: EventUserInput) => {
  if (isEndUser(p)) return endUserOf(p, organizationId, u)
  const { organization_user_id_auth: auth, ...user } = u
  const written = { user, byId: undefined }
  return auth !== undefined && u.organization_user_id != null
    ? Effect.as(verifyUserIdAuth(organizationId, u.organization_user_id, auth), written)
    : Effect.succeed(written)
}

/** A consent token's metadata under the event's own (the event's keys win), and its delegate. */
export const tokenFields = (p: Principal, row: Pick<EventRow, "metadata" | "delegate">): Pick<EventRow, "metadata" | "delegate"> => {
  if (p._tag === "PublicKey") return { metadata: row.metadata, delegate: null }
  if (p._tag !== "ConsentToken") return { metadata: row.metadata, delegate: row.delegate }
  return {
    metadata: p.metadata === undefined ? row.metadata : { ...p.metadata, ...row.metadata },
    delegate: (p.delegate as EventRow["delegate"] | undefined) ?? null
  }
}

/** What a new user created by an event starts with: a confirmed event's choices (version 1), else nothing. */
export const firstStates = (
  event: MergeableEvent & { readonly status: string; readonly regulation: string; readonly id: string; readonly notice_text_content_id?: string | null | undefined }
): UserConsentsValue =>
  event.status === "confirmed" ? { [event.regulation]: withLast(mergeEvent(emptyState, event), event) } : {}

/** An event's user as found, or as it creates it (`created`, to be inserted). */
export type ResolvedUser =
  | { readonly user: UserRow; readonly created: undefined }
  | { readonly user: UserRow; readonly created: UserRow }

/** Finds the event's user in the organization, or builds the new one the event creates. */
export const resolveUser = (
  organizationId: string,
  u: EventUser,
  event: { status: string; regulation: string; consents: EventConsents; created_at: string; id: string; notice_text_content_id?: string | null | undefined },
  byId?: Option.Option<UserRow>
) => {
  if (!u.id && !u.organization_user_id) {
    return Effect.failSync(() =>
      new InvalidInput({
        message: "Invalid user: give user.id or user.organization_user_id",
        errors: { user: "needs id or organization_user_id" }
      })
    )
  }
  // Only this organization's users: another may use the same id for a user of its own.
  const found = u.id
    ? byId !== undefined ? Effect.succeed(byId) : userById(organizationId, u.id)
    : userByOrganizationUserId(organizationId, u.organization_user_id!)
  return Effect.flatMap(found, (found): Effect.Effect<ResolvedUser, never, Ids> => {
    if (Option.isSome(found)) return Effect.succeed({ user: found.value, created: undefined })
    const newId = u.id != null ? Effect.succeed(u.id) : nextId
    return Effect.map(both(nowIso, newId), ([now, id]) => {
      const created: UserRow = {
        id,
        organization_id: organizationId,
        organization_user_id: u.organization_user_id ?? null,
        metadata: u.metadata ?? null,
        country: u.country ?? null,
        consent_states: firstStates(event),
        created_at: now,
        updated_at: now,
        version: 1
      }
      return { user: created, created }
    })
  })
}
