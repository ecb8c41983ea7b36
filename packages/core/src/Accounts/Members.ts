import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { MemberCreate } from "../Domain/Account.js"
import { Conflict, TooManyRequests } from "../Domain/Errors.js"
import { Ids, SecretHasher, Storage, UnitOfWork } from "../Engine/Ports.js"
import { eq, gte } from "../Engine/Query.js"
import { randomToken } from "../Engine/Random.js"
import { portList, type StoredRow } from "../Engine/Resource.js"
import { Settings } from "../Engine/Settings.js"
import { InvitationsTable, PersonsTable } from "./InternalTables.js"
import { nowIso } from "../Engine/Clock.js"
import { ConsentTokenStates, forgetTokenIssuer } from "./TokenStates.js"
import { type InvitationMail, Mailer } from "./Mailer.js"
import { enqueueInvitationMail, MailSignal, signalMail } from "./MailOutbox.js"
import { OrganizationsResource } from "./Organizations.js"
import { Members } from "./MemberTable.js"

export const MembersResource = Members.with<Mailer | MailSignal | ConsentTokenStates>({
  ports: portList<Mailer | MailSignal | ConsentTokenStates>(Mailer, MailSignal, ConsentTokenStates),
  hooks: {
    create: (_principal, row, input) => invite(row, input),
    // The invitation's mail was queued with the invite: the mail dispatcher sends it now. A person
    // removed from the organization: the consent tokens it minted there end now.
    afterCommit: (output) => Effect.zipRight(signalMail, forgetTokenIssuer(output.user_id))
  }
})

const INVITATION_TTL_MS = 7 * 24 * 3600 * 1000

/** The window of `INVITATIONS_PER_HOUR`. */
const INVITATION_WINDOW_MS = 3600 * 1000

/**
 * `INVITATIONS_PER_HOUR`: the invitations an organization made in the last hour, counted in the
 * store (they hold across servers) and for every inviter, the operator included: the limit
 * protects the mail server's reputation, which any inviter spends. Invitations are never
 * deleted with their member, so removing one does not make room.
 */
const requireInvitationAllowance = (organizationId: string, now: string) =>
  Effect.gen(function*() {
    const limit = (yield* Settings).invitationsPerHour
    // Two concurrent invites must not both see "one below the limit".
    yield* Effect.flatMap(UnitOfWork, (uow) => uow.lock(`invitations-per-hour:${organizationId}`))
    const invitations = (yield* Storage).repository(InvitationsTable)
    // Times are whole milliseconds: one made exactly an hour ago has left the window.
    const since = new Date(Date.parse(now) - INVITATION_WINDOW_MS + 1).toISOString()
    const where = [eq("organization_id", organizationId), gte("created_at", since)]
    const made = yield* invitations.count(where)
    if (made < limit) return
    // A place frees once the `made - limit + 1` oldest have left the window.
    const page = yield* invitations.find({
      count: false,
      where,
      sort: [{ field: "created_at", direction: 1 }],
      limit: 1,
      skip: made - limit
    })
    const freesAt = Date.parse(page.data[0]?.created_at ?? now) + INVITATION_WINDOW_MS
    return yield* Effect.fail(
      new TooManyRequests({
        message: `Too many invitations: an organization may send at most ${limit} in an hour`,
        retryAfterSeconds: Math.max(1, Math.ceil((freesAt - Date.parse(now)) / 1000))
      })
    )
  })

/** Creating a member invites a person: the person is created when absent. */
export const invite = (row: StoredRow<typeof Members>, input: typeof MemberCreate.Type) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const ids = yield* Ids
    const now = yield* nowIso
    yield* requireInvitationAllowance(row.organization_id, now)
    const email = input.email.trim().toLowerCase()
    const found = yield* findPersonByEmail(email)
    const person = Option.isSome(found) ? found.value : yield* Effect.orDie(
      storage.repository(PersonsTable).create({
        id: yield* ids.next,
        email,
        name: input.name,
        password_hash: null,
        created_at: now,
        updated_at: now,
        version: 1
      })
    )
    const already = yield* storage.repository(Members.tableDef).count([
      eq("organization_id", row.organization_id),
      eq("user_id", person.id)
    ])
    if (already > 0) {
      return yield* Effect.fail(
        new Conflict({
          message: "This person is already a member of the organization",
          errors: { email: "is already a member" }
        })
      )
    }
    const invitationId = yield* ids.next
    const secret = randomToken(32)
    const expires_at = new Date(Date.parse(now) + INVITATION_TTL_MS).toISOString()
    yield* Effect.orDie(storage.repository(InvitationsTable).create({
      id: invitationId,
      person_id: person.id,
      organization_id: row.organization_id,
      member_id: row.id,
      token_hash: yield* Effect.flatMap(SecretHasher, (h) => h.hash(secret)),
      expires_at,
      accepted_at: null,
      created_at: now,
      updated_at: now,
      version: 1
    }))
    const token = `inv_${invitationId}.${secret}`
    const mailer = yield* Mailer
    if (!mailer.delivers) return { row: { ...row, user_id: person.id }, reveal: { invitation: { token, expires_at } } }
    // The token goes to the address invited and nowhere else: whoever sets a new person's
    // password has read that person's mail, never the inviter. The mail is queued in this
    // transaction and sent after the commit, so no write waits for the mail server.
    const organization = yield* storage.repository(OrganizationsResource.tableDef).get(row.organization_id)
    const mail: InvitationMail = {
      to: email,
      name: person.name,
      organizationName: Option.match(organization, { onNone: () => row.organization_id, onSome: (o) => o.name }),
      token,
      expiresAt: expires_at
    }
    yield* enqueueInvitationMail(row.organization_id, invitationId, mail)
    return { row: { ...row, user_id: person.id } }
  })

/**
 * The organizations a person is a member of. An invited membership counts only once its own
 * invitation is accepted: persons are shared by every organization, so the first organization
 * to have its invitation accepted sets the person's password, and that must not open another
 * organization's pending membership to whoever holds that password.
 */
export const membershipsOf = (personId: string) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const page = yield* storage.repository(MembersResource.tableDef).find({
      count: false,
      where: [eq("user_id", personId)],
      sort: [],
      limit: 10_000,
      skip: 0
    })
    const invitations = yield* storage.repository(InvitationsTable).find({
      count: false,
      where: [eq("person_id", personId)],
      sort: [],
      limit: 10_000,
      skip: 0
    })
    const invited = new Set<string>()
    const accepted = new Set<string>()
    for (const i of invitations.data) {
      invited.add(i.member_id)
      if (i.accepted_at !== null) accepted.add(i.member_id)
    }
    // A membership without an invitation is the one its creator got with a new organization.
    return page.data.filter((m) => !invited.has(m.id) || accepted.has(m.id))
      .map((m) => m.organization_id)
  })

export const findPersonByEmail = (email: string) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const page = yield* storage.repository(PersonsTable).find({
      count: false,
      where: [eq("email", email.trim().toLowerCase())],
      sort: [],
      limit: 1,
      skip: 0
    })
    return Option.fromNullable(page.data[0])
  })
