import { CredentialCache, forgetOrganizationCredentials } from "./CredentialCache.js"
import * as Effect from "effect/Effect"
import * as Record from "effect/Record"
import {
  Organization,
  OrganizationCreate,
  OrganizationOperatorFields,
  OrganizationUpdate,
  PremiumFeatureUpdate
} from "../Domain/Account.js"
import { Forbidden, QuotaExceeded } from "../Domain/Errors.js"
import { type AuditPrincipal, recordChange } from "../Engine/AuditTrail.js"
import { nextId, Storage, UnitOfWork } from "../Engine/Ports.js"
import type { Principal } from "../Engine/Principal.js"
import { eq } from "../Engine/Query.js"
import { randomToken } from "../Engine/Random.js"
import { defineResource, portList } from "../Engine/Resource.js"
import { field } from "../Engine/Tables.js"
import { Settings } from "../Engine/Settings.js"
import { nowIso } from "../Engine/Clock.js"
import { ConsentTokenStates, forgetTokenOrganization } from "./TokenStates.js"
import { QuotasResource, PremiumFeaturesResource } from "./Plans.js"
import { Members } from "./MemberTable.js"

export const OrganizationsResource = defineResource({
  name: "organization",
  path: "organizations",
  table: "organizations",
  indexes: [
    { name: "organizations_created_by_person", columns: ["created_by_person_id"] },
    // A public consent write names its organization by the public key.
    { name: "organizations_public_api_key", columns: ["public_api_key"] },
    // …or, until its date, by the key a rotation replaced.
    { name: "organizations_previous_public_api_key", columns: ["previous_public_api_key"] }
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
  privateFields: {
    crm_account_id: field.optionalString,
    created_by_person_id: field.optionalString,
    // The public key a rotation replaced: accepted until `previous_key_expires_at`, never shown.
    previous_public_api_key: field.optionalString
  },
  unique: [["name"]],
  defaults: {
    validate_purpose_id: false,
    disable_preferences_in_consents: false,
    auth_enabled: true,
    auth_allow_user_creation: false,
    auth_message_priority: [],
    allow_tcf_with_custom_text: false,
    allow_chat_support: false,
    consent_tokens_revoked_before: null,
    consent_retention_days: null
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
        yield* provisionOrganization(org.id, principal)
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
    const id = yield* nextId
    return { id, organization_id: organizationId, created_at: now, updated_at: now, version: 1 }
  })

/**
 * Every organization gets its quota and premium-feature rows in the creating transaction, each
 * recorded in the audit trail as made by whoever created the organization.
 */
export const provisionOrganization = (organizationId: string, by: Principal | AuditPrincipal) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const settings = yield* Settings
    // One entry per flag, keyed by the flags' type (`Object.fromEntries` would lose the keys).
    const flags = Record.map(PremiumFeatureUpdate.fields, (_, f) => settings.defaultPremiumFeatures.includes(f))
    const quotas = yield* Effect.orDie(
      storage.repository(QuotasResource.tableDef).create({ ...(yield* baseRow(organizationId)), ...settings.defaultQuotas })
    )
    yield* recordChange(QuotasResource, by, "create", quotas, ["organization_id", ...Object.keys(settings.defaultQuotas)])
    const features = yield* Effect.orDie(
      storage.repository(PremiumFeaturesResource.tableDef).create({ ...(yield* baseRow(organizationId)), ...flags })
    )
    yield* recordChange(PremiumFeaturesResource, by, "create", features, ["organization_id", ...Object.keys(flags)])
  })

/**
 * The membership of the person who created the organization, signed in as that person. Not
 * exported: a membership for anyone else goes through an invitation the person accepts, so none
 * opens at once to whoever holds the password of a person invited elsewhere.
 */
const addMembership = (personId: string, organizationId: string) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const member = yield* storage.repository(Members.tableDef).create({
      ...(yield* baseRow(organizationId)),
      user_id: personId,
      role_id: null,
      authentication_method: "email_password",
      saml_active: false
    })
    yield* recordChange(Members, { kind: "member", id: personId }, "create", member, ["organization_id", "user_id", "authentication_method", "saml_active"])
  })
