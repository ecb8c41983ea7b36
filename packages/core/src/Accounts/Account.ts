import { CredentialCache, forgetCredential, forgetOrganizationCredentials } from "./CredentialCache.js"
import { FeatureCache, forgetFeatures } from "./FeatureCache.js"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Record from "effect/Record"
import {
  ApiKey,
  ApiKeyCreate,
  ApiKeyUpdate,
  Member,
  MemberCreate,
  MemberUpdate,
  Organization,
  OrganizationCreate,
  OrganizationOperatorFields,
  OrganizationUpdate,
  premiumFeatureFlags,
  PremiumFeature,
  PremiumFeatureCreate,
  PremiumFeatureUpdate,
  Quota,
  QuotaCreate,
  quotaFields,
  QuotaUpdate,
  Secret,
  SecretCreate,
  SecretUpdate
} from "../Domain/Account.js"
import { Conflict, Forbidden, QuotaExceeded, TooManyRequests } from "../Domain/Errors.js"
import { Ids, SecretHasher, Storage, UnitOfWork } from "../Engine/Ports.js"
import { isOperator, type Principal } from "../Engine/Principal.js"
import { type Condition, eq, type FindQuery, gte } from "../Engine/Query.js"
import { randomToken } from "../Engine/Random.js"
import { declareResource, defineResource, field, portList, type StoredRow } from "../Engine/Resource.js"
import { Settings } from "../Engine/Settings.js"
import { InvitationsTable, PersonsTable, SettingsTable } from "./InternalTables.js"
import { nowIso } from "../Engine/Clock.js"
import { SecretBox } from "../Engine/Secrets.js"
import { forgetSigningKey, SigningKeys } from "./SigningKeys.js"
import { ConsentTokenStates, forgetTokenIssuer, forgetTokenOrganization } from "./TokenStates.js"
import { type InvitationMail, Mailer } from "./Mailer.js"
import { enqueueInvitationMail, MailSignal, signalMail } from "./MailOutbox.js"

// ---------------------------------------------------------------- organizations

export const OrganizationsResource = defineResource({
  name: "organization",
  path: "organizations",
  table: "organizations",
  indexes: [
    { name: "organizations_created_by_person", columns: ["created_by_person_id"] },
    // A public consent write names its organization by the public key.
    { name: "organizations_public_api_key", columns: ["public_api_key"] }
  ],
  output: Organization,
  createInput: OrganizationCreate,
  updateInput: OrganizationUpdate,
  operatorInput: OrganizationOperatorFields,
  methods: ["find", "get", "create", "update", "patch", "remove"],
  operatorOnly: ["remove"],
  ownerField: "id",
  // Who created a self-registered organization: it counts against that person's limit even
  // once the person is no longer a member of it.
  privateFields: { crm_account_id: field.optionalString, created_by_person_id: field.optionalString },
  unique: [["name"]],
  defaults: {
    validate_purpose_id: false,
    disable_preferences_in_consents: false,
    auth_enabled: true,
    auth_allow_user_creation: false,
    auth_message_priority: [],
    allow_tcf_with_custom_text: false,
    allow_chat_support: false,
    consent_tokens_revoked_before: null
  },
  ports: portList<CredentialCache | ConsentTokenStates>(CredentialCache, ConsentTokenStates),
  hooks: {
    create: (principal, row) =>
      Effect.gen(function*() {
        if (principal._tag === "Client") {
          return yield* Effect.fail(new Forbidden({ message: "Organizations are created by the operator or by a member" }))
        }
        const member = principal._tag === "Member"
        if (member) yield* requireOrganizationAllowance(principal.personId)
        return {
          row: {
            ...row,
            self_register: member,
            created_by_person_id: member ? principal.personId : null,
            public_api_key: `pk_${randomToken(24)}`
          }
        }
      }),
    afterCreate: (principal, org) =>
      Effect.gen(function*() {
        yield* provisionOrganization(org.id)
        if (principal._tag === "Member") yield* addMembership(principal.personId, org.id)
      }),
    remove: (_principal, org) =>
      Effect.gen(function*() {
        const settings = yield* Settings
        if (org.id === settings.operatorOrganizationId) {
          return yield* Effect.fail(new Forbidden({ message: "The operator organization cannot be removed" }))
        }
        // Everything the organization owns goes with it: every table that refers to it (an
        // `organization_id` owner field does) is cascaded by the engine.
      }),
    update: (_principal, before, after, input) => Effect.map(nowIso, (now) => ({ ...after, consent_tokens_revoked_before: revokedBefore(before, input, now) })),
    // Its keys and integrations may have gone with it: their sessions end now in this process.
    afterCommit: (output) => Effect.zipRight(forgetOrganizationCredentials(output.id), forgetTokenOrganization(output.id))
  }
})

/**
 * `consent_tokens_revoked_before` as stored: in UTC with milliseconds; a date ahead of the server's
 * clock is taken as now (tokens not minted yet are not "issued before" anything). An update (PUT)
 * that leaves it out keeps it: dropping it would bring every revoked token back.
 */
const revokedBefore = (before: { readonly consent_tokens_revoked_before?: string | null }, input: { readonly consent_tokens_revoked_before?: string | null }, now: string) => {
  const given = input.consent_tokens_revoked_before
  if (given === undefined) return before.consent_tokens_revoked_before ?? null
  if (given === null) return null
  const at = new Date(given).toISOString()
  return at > now ? now : at
}

/**
 * `ORGANIZATIONS_PER_PERSON`: the organizations a person created and that still exist, whether or
 * not the person is still a member (leaving them must not make room for more). Only the
 * operator removes organizations, so a removed one frees its place.
 */
const requireOrganizationAllowance = (personId: string): Effect.Effect<void, QuotaExceeded, Settings | UnitOfWork | Storage> =>
  Effect.gen(function*() {
    const limit = (yield* Settings).organizationsPerPerson
    // Two concurrent creates by one person must not both see "one below the limit".
    yield* Effect.flatMap(UnitOfWork, (uow) => uow.lock(`organizations-per-person:${personId}`))
    const used = yield* (yield* Storage).repository(OrganizationsResource.tableDef).count([eq("created_by_person_id", personId)])
    if (used >= limit) {
      return yield* Effect.fail(
        new QuotaExceeded({
          message: `Quota 'organizations_per_person' reached: a person may create at most ${limit} organizations`,
          quota: "organizations_per_person",
          limit
        })
      )
    }
  })

const baseRow = (organizationId: string) =>
  Effect.gen(function*() {
    const now = yield* nowIso
    const id = yield* Effect.flatMap(Ids, (ids) => ids.next)
    return { id, organization_id: organizationId, created_at: now, updated_at: now, version: 1 }
  })

/** Every organization gets its quota and premium-feature rows in the creating transaction. */
export const provisionOrganization = (organizationId: string) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const settings = yield* Settings
    // One entry per flag, keyed by the flags' type (`Object.fromEntries` would lose the keys).
    const flags = Record.map(PremiumFeatureUpdate.fields, (_, f) => settings.defaultPremiumFeatures.includes(f))
    yield* Effect.orDie(
      storage.repository(QuotasResource.tableDef).create({ ...(yield* baseRow(organizationId)), ...settings.defaultQuotas })
    )
    yield* Effect.orDie(storage.repository(PremiumFeaturesResource.tableDef).create({ ...(yield* baseRow(organizationId)), ...flags }))
  })

/**
 * The membership of the person who created the organization, signed in as that person. Not
 * exported: a membership for anyone else goes through an invitation the person accepts, so none
 * opens at once to whoever holds the password of a person invited elsewhere.
 */
const addMembership = (personId: string, organizationId: string) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    yield* storage.repository(Members.tableDef).create({
      ...(yield* baseRow(organizationId)),
      user_id: personId,
      role_id: null,
      authentication_method: "email_password",
      saml_active: false
    })
  })

// ---------------------------------------------------------------- quotas and premium features

export const QuotasResource = defineResource({
  name: "quota",
  path: "quotas",
  table: "quotas",
  indexes: [],
  output: Quota,
  createInput: QuotaCreate,
  updateInput: QuotaUpdate,
  methods: ["find", "get", "create", "patch"],
  operatorOnly: ["create", "patch"],
  ownerField: "organization_id",
  unique: [["organization_id"]],
  hooks: {
    create: (_p, row, input) =>
      Effect.map(Settings, (s) => {
        const out = { ...row }
        for (const k of quotaFields) if (input[k] === undefined) out[k] = s.defaultQuotas[k]
        return { row: out }
      })
  }
})

export const PremiumFeaturesResource = defineResource({
  name: "premium feature set",
  path: "premium-features",
  table: "premium_features",
  indexes: [],
  output: PremiumFeature,
  createInput: PremiumFeatureCreate,
  updateInput: PremiumFeatureUpdate,
  methods: ["find", "get", "create", "update", "patch"],
  operatorOnly: ["create", "update", "patch"],
  ownerField: "organization_id",
  unique: [["organization_id"]],
  defaults: Object.fromEntries(premiumFeatureFlags.map((f) => [f, false])),
  ports: [FeatureCache],
  hooks: { afterCommit: (output) => forgetFeatures(output.organization_id) }
})

// ---------------------------------------------------------------- keys

const mentions = (where: ReadonlyArray<Condition>, f: string): ReadonlyArray<Condition> =>
  where.flatMap((c) => (c._tag === "Or" ? c.branches.flatMap((b) => mentions(b, f)) : c.field === f ? [c] : []))

/** Internal keys stay out of lists unless asked for, and only the operator may ask. */
const scopeInternalKeys = (principal: Principal, query: FindQuery): Effect.Effect<FindQuery, Forbidden> => {
  const asked = mentions(query.where, "is_internal")
  if (asked.length === 0) return Effect.succeed({ ...query, where: [...query.where, eq("is_internal", false)] })
  if (isOperator(principal)) return Effect.succeed(query)
  const onlyPublic = asked.every((c) => c._tag === "Compare" && c.op === "eq" && c.value === false)
  // Still forced at the top level: a mention inside one `$or` branch does not constrain the others.
  return onlyPublic
    ? Effect.succeed({ ...query, where: [...query.where, eq("is_internal", false)] })
    : Effect.fail(new Forbidden({ message: "Only the operator may list internal keys" }))
}

export const ApiKeysResource = defineResource({
  name: "API key",
  path: "keys",
  table: "api_keys",
  indexes: [{ name: "api_keys_organization", columns: ["organization_id", "created_at"] }],
  output: ApiKey,
  createInput: ApiKeyCreate,
  updateInput: ApiKeyUpdate,
  methods: ["find", "get", "create", "update", "patch", "remove"],
  ownerField: "organization_id",
  transient: ["secret"],
  revealsCredentials: "create",
  privateFields: { secret_hash: field.string },
  unique: [["organization_id", "name"]],
  defaults: { enabled: true, is_internal: false },
  ports: portList<CredentialCache | ConsentTokenStates>(CredentialCache, ConsentTokenStates),
  hooks: {
    // A deleted key's sessions end now in this process, not when its cached entry ages; so do
    // the consent tokens it minted, disabled or deleted.
    afterCommit: (output) => Effect.zipRight(forgetCredential("api_keys", output.id), forgetTokenIssuer(output.id)),
    find: scopeInternalKeys,
    visible: (principal, row) => row.is_internal !== true || isOperator(principal),
    create: (principal, row) =>
      Effect.gen(function*() {
        if (row.is_internal === true && !isOperator(principal)) {
          return yield* Effect.fail(new Forbidden({ message: "Only the operator may create internal keys" }))
        }
        const secret = `sk_${randomToken(32)}`
        const secret_hash = yield* Effect.flatMap(SecretHasher, (h) => h.hash(secret))
        return { row: { ...row, secret_hash }, reveal: { secret } }
      })
  }
})

// ---------------------------------------------------------------- secrets

export const SecretsResource = defineResource({
  name: "secret",
  path: "secrets",
  table: "secrets",
  indexes: [{ name: "secrets_organization", columns: ["organization_id", "created_at"] }],
  output: Secret,
  createInput: SecretCreate,
  updateInput: SecretUpdate,
  methods: ["find", "get", "create", "update", "patch", "remove"],
  ownerField: "organization_id",
  transient: ["secret"],
  // Every answer, not only the one showing the value: the whole service is about credentials.
  revealsCredentials: "every",
  // The value also sealed, not only hashed: it keys the HMAC of signed user ids, which needs it.
  // Secrets made before then hold no sealed value and cannot sign.
  privateFields: { secret_hash: field.string, secret_sealed: field.optionalString },
  quota: "secrets",
  defaults: { require_expiration: false },
  ports: [SigningKeys],
  hooks: {
    // A removed secret stops signing user ids now in this process, not when its kept value ages.
    afterCommit: (output) => forgetSigningKey(output.id),
    create: (_p, row) =>
      Effect.gen(function*() {
        const secret = `ss_${randomToken(32)}`
        const secret_hash = yield* Effect.flatMap(SecretHasher, (h) => h.hash(secret))
        const secret_sealed = yield* Effect.flatMap(SecretBox, (box) => box.seal(secret))
        return { row: { ...row, secret_hash, secret_sealed }, reveal: { secret } }
      })
  }
})

// ---------------------------------------------------------------- members

/** Members are invitations of persons into organizations (the invite flow is its own module). */
const Members = declareResource({
  name: "member",
  path: "members",
  table: "members",
  indexes: [
    { name: "members_user", columns: ["user_id"] },
    { name: "members_organization", columns: ["organization_id", "created_at"] }
  ],
  output: Member,
  createInput: MemberCreate,
  updateInput: MemberUpdate,
  methods: ["find", "get", "create", "patch", "remove"],
  ownerField: "organization_id",
  transient: ["invitation"],
  // The invitation token in the answer to an invite opens a session.
  revealsCredentials: "create",
  unique: [["organization_id", "user_id"]],
  defaults: { authentication_method: "email_password", saml_active: false, role_id: null }
})

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
const invite = (row: StoredRow<typeof Members>, input: typeof MemberCreate.Type) =>
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

// ---------------------------------------------------------------- tables

/** The account's tables, for the features that read them directly (sessions, bootstrap, exports). */
export const Tables = {
  organizations: OrganizationsResource.tableDef,
  quotas: QuotasResource.tableDef,
  premiumFeatures: PremiumFeaturesResource.tableDef,
  keys: ApiKeysResource.tableDef,
  secrets: SecretsResource.tableDef,
  members: MembersResource.tableDef,
  persons: PersonsTable,
  invitations: InvitationsTable,
  settings: SettingsTable
}
