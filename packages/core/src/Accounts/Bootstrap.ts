import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { hostPrincipal, recordChange } from "../Engine/AuditTrail.js"
import { nowIso } from "../Engine/Clock.js"
import { nextId, SecretHasher, Storage, UnitOfWork } from "../Engine/Ports.js"
import { randomToken } from "../Engine/Random.js"
import { OrganizationsResource, provisionOrganization } from "./Organizations.js"
import { ApiKeysResource } from "./ApiKeys.js"
import { Tables } from "./AccountTables.js"
import { Settings } from "../Engine/Settings.js"

/** Who the audit trail says made what the first start and `pnpm bootstrap` make. */
const BOOTSTRAP = hostPrincipal("bootstrap")

/** Creates the operator organization (with its quota and features) when it is missing. */
export const ensureOperatorOrganization = Effect.gen(function*() {
  const storage = yield* Storage
  const settings = yield* Settings
  const orgs = storage.repository(Tables.organizations)
  const existing = yield* orgs.get(settings.operatorOrganizationId)
  if (Option.isSome(existing)) return
  const now = yield* nowIso
  const org = yield* Effect.orDie(orgs.create({
    id: settings.operatorOrganizationId,
    name: "Operator",
    website: null,
    industry_id: null,
    analytics_url: null,
    public_api_key: `pk_${randomToken(24)}`,
    validate_purpose_id: false,
    disable_preferences_in_consents: false,
    auth_enabled: true,
    auth_allow_user_creation: false,
    auth_message_priority: [],
    allow_tcf_with_custom_text: false,
    self_register: false,
    organization_group_id: null,
    organization_group_name: null,
    iab_tcf_cmp_id: null,
    allow_chat_support: false,
    consent_tokens_revoked_before: null,
    previous_key_expires_at: null,
    consent_retention_days: null,
    previous_public_api_key: null,
    crm_account_id: null,
    created_by_person_id: null,
    created_at: now,
    updated_at: now,
    version: 1
  }))
  yield* recordChange(OrganizationsResource, BOOTSTRAP, "create", org, ["name"])
  yield* provisionOrganization(settings.operatorOrganizationId, BOOTSTRAP)
})

const createOperatorKeyRow = (id: string, secret: string, name: string) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const settings = yield* Settings
    const now = yield* nowIso
    const secret_hash = yield* Effect.flatMap(SecretHasher, (h) => h.hash(secret))
    const key = yield* Effect.orDie(storage.repository(Tables.keys).create({
      id,
      name,
      description: "Operator key created at bootstrap",
      organization_id: settings.operatorOrganizationId,
      enabled: true,
      is_internal: true,
      secret_hash,
      previous_secret_hash: null,
      previous_secret_expires_at: null,
      created_at: now,
      updated_at: now,
      version: 1
    }))
    yield* recordChange(ApiKeysResource, BOOTSTRAP, "create", key, ["name", "description", "organization_id", "enabled", "is_internal"])
    return key
  })

/**
 * First start: the operator organization, and the operator key named by configuration
 * (`ADMIN_API_KEY`/`ADMIN_API_SECRET`) when it does not exist yet.
 */
/** Servers starting at once on one database bootstrap one after the other. */
const BOOTSTRAP_LOCK = "bootstrap"

export const bootstrap = (admin: { readonly key?: string | undefined; readonly secret?: string | undefined }) =>
  Effect.flatMap(UnitOfWork, (uow) =>
    uow.transaction(Effect.gen(function*() {
      yield* uow.lock(BOOTSTRAP_LOCK)
      yield* ensureOperatorOrganization
      if (!admin.key || !admin.secret) return Option.none()
      const existing = yield* (yield* Storage).repository(Tables.keys).get(admin.key)
      if (Option.isNone(existing)) yield* createOperatorKeyRow(admin.key, admin.secret, `admin-${admin.key}`)
      return existing
    }))).pipe(Effect.flatMap((existing) =>
      Option.isSome(existing) && admin.key && admin.secret ? warnOfChangedSecret(admin.key, admin.secret, existing.value.secret_hash) : Effect.void
    ))

/**
 * The operator key is made from `ADMIN_API_SECRET` once and kept hashed: a secret changed since
 * is not taken, and sessions with it fail as any wrong secret does ("Invalid login"). Said at
 * start, without the secret, rather than left for the operator to find out at the first login.
 * Checked after the transaction, so the hashing holds no lock.
 */
const warnOfChangedSecret = (key: string, secret: string, secretHash: string) =>
  Effect.flatMap(SecretHasher, (h) => h.verify(secret, secretHash)).pipe(Effect.flatMap((opens) =>
    opens ? Effect.void : Effect.logWarning(
      `ADMIN_API_SECRET does not open the operator key '${key}' kept in the database: the key was made on the ` +
        "first start with the secret given then and is stored hashed, so a secret changed since is ignored and " +
        "sessions with it fail (\"Invalid login\"). Start with the first secret; in development, start with a fresh " +
        "database instead (another SQLITE_PATH or DATABASE_URL). `pnpm bootstrap` prints a new operator key."
    )
  ))

/** A new operator key with a random secret (the `bootstrap` command). */
export const createOperatorKey = Effect.flatMap(UnitOfWork, (uow) =>
  uow.transaction(Effect.gen(function*() {
    yield* uow.lock(BOOTSTRAP_LOCK)
    yield* ensureOperatorOrganization
    const id = yield* nextId
    const secret = `sk_${randomToken(32)}`
    yield* createOperatorKeyRow(id, secret, `operator-${id.slice(0, 8)}`)
    return { key: id, secret, organization_id: (yield* Settings).operatorOrganizationId }
  })))
