import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { nowIso, nowMillis, nowSeconds } from "../Engine/Clock.js"
import { answers, defineAction } from "../Engine/Action.js"
import { InvitationAcceptInput, Session, SessionInput } from "../Domain/Account.js"
import { InvalidInput, NotAuthenticated } from "../Domain/Errors.js"
import { CredentialCache, type CredentialTable } from "../Accounts/CredentialCache.js"
import { nextId, SecretHasher, Storage, type TableDef, type TokenClaims, TokenIssuer, UnitOfWork } from "../Engine/Ports.js"
import type { Principal } from "../Engine/Principal.js"
import { findPersonByEmail, membershipsOf } from "../Accounts/Members.js"
import { Tables } from "../Accounts/AccountTables.js"
import { PlatformIntegrationsResource } from "../Accounts/PlatformIntegrations.js"
import { addressKeys, throttled } from "../Accounts/LoginThrottle.js"
import { decode } from "../Engine/Bodies.js"
import { consentTokenPrincipal } from "../Consents/ConsentTokens.js"
import { requireLiveConsentToken } from "../Consents/TokenRevocation.js"
import { Settings } from "../Engine/Settings.js"
import { withService, withServices } from "../Engine/Services.js"

/** One message for every failed login, so a caller cannot tell which part was wrong. */
const invalidLogin = () =>
  new InvalidInput({ message: "Invalid login", errors: { secret: "the key or secret is not valid" } })

/**
 * Exchanges an API key and secret (or an email and password) for an access token.
 * A failed attempt costs the same hashing work whether or not the key exists.
 */
export const createSession = (body: unknown, clientAddress?: string) =>
  Effect.gen(function*() {
    const decoded = decode(SessionInput, body)
    if (Either.isLeft(decoded)) return yield* Effect.fail(decoded.left)
    const input = decoded.right
    // Repeated failures for one key, or from one address, are slowed down.
    return yield* throttled([personKey(input.type, input.key), ...addressKeys("session", clientAddress)], authenticateCredentials(input))
  })

/** The throttle key of a login name: an invitation proving a person's password counts there too. */
const personKey = (type: string, key: string) => `${type}:${key.trim().toLowerCase()}`

const authenticateCredentials = (input: SessionInput) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const hasher = yield* SecretHasher
    const tokens = yield* TokenIssuer
    const settings = yield* Settings
    const iat = yield* nowSeconds
    const exp = iat + settings.tokenTtlSeconds

    if (input.type === "api-key") {
      const key = yield* storage.repository(Tables.keys).get(input.key)
      const hash = Option.match(key, { onNone: () => undefined, onSome: (k) => k.secret_hash })
      const ok = hash === undefined
        ? yield* Effect.as(hasher.hash(input.secret), false)
        : (yield* hasher.verify(input.secret, hash)) || (yield* matchesPreviousSecret(key, input.secret))
      if (!ok || Option.isNone(key) || key.value.enabled !== true) return yield* Effect.fail(invalidLogin())
      const k = key.value
      const kind = k.is_internal === true && k.organization_id === settings.operatorOrganizationId ? "operator" : "client"
      const access_token = yield* tokens.issue({ sub: k.id, kind, org: k.organization_id, iat, exp })
      return { type: "api-key", key: k.id, access_token } satisfies Session
    }

    const person = yield* findPersonByEmail(input.key)
    const hash = Option.flatMapNullable(person, (p) => p.password_hash)
    const ok = Option.isNone(hash)
      ? yield* Effect.as(hasher.hash(input.secret), false)
      : yield* hasher.verify(input.secret, hash.value)
    if (!ok || Option.isNone(person)) return yield* Effect.fail(invalidLogin())
    const access_token = yield* tokens.issue({ sub: person.value.id, kind: "member", iat, exp })
    return { type: "email", key: person.value.email, access_token } satisfies Session
  })

/**
 * Whether the secret is the one the key's last rotation replaced, still before its date. Read
 * from the row the login already loaded, so a key without one costs no more than before.
 */
const matchesPreviousSecret = (
  key: Option.Option<{ readonly previous_secret_hash: string | null; readonly previous_secret_expires_at: string | null }>,
  secret: string
) =>
  Effect.gen(function*() {
    if (Option.isNone(key)) return false
    const { previous_secret_expires_at: until, previous_secret_hash: hash } = key.value
    if (hash === null || until === null || Date.parse(until) <= (yield* nowMillis)) return false
    return yield* Effect.flatMap(SecretHasher, (hasher) => hasher.verify(secret, hash))
  })

const credentialTables: Record<Exclude<CredentialTable, "public_keys">, TableDef> = {
  api_keys: Tables.keys,
  platform_integrations: PlatformIntegrationsResource.tableDef
}

/**
 * A deleted key's or integration's tokens end with it (a disabled one's run until they expire:
 * disabling only stops new sessions). Asked on every request, so it goes through the cache.
 * Answers the table the credential was found in.
 */
const requireCredential = (organizationId: string, tables: ReadonlyArray<keyof typeof credentialTables>, id: string) =>
  withServices([CredentialCache, Storage], ([cache, storage]) => {
    // Built only when failing: an error captures a stack trace.
    const gone = Effect.failSync(() => new NotAuthenticated({ message: "The credential of this token no longer exists" }))
    // Asked on every request: the tables in turn, without a generator.
    const inTable = (i: number): Effect.Effect<keyof typeof credentialTables, NotAuthenticated> => {
      const table = tables[i]
      if (table === undefined) return gone
      return Effect.flatMap(
        cache.read(
          table,
          id,
          Effect.suspend(() =>
            Effect.map(storage.repository(credentialTables[table]).get(id), (row) =>
              Option.getOrUndefined(Option.map(row, (r) => ({ organizationId: r.organization_id as string }))))
          )
        ),
        (owner) => owner === undefined ? inTable(i + 1) : owner.organizationId === organizationId ? Effect.succeed(table) : gone
      )
    }
    return inTable(0)
  })

const notHere = () => Effect.fail(new NotAuthenticated({ message: "This token cannot be used here" }))

/** The principal of a verified access token's claims, its credential still there. */
const principalOf = (claims: TokenClaims): Effect.Effect<Principal, NotAuthenticated, Storage | CredentialCache> => {
  switch (claims.kind) {
    case "operator": {
      const org = claims.org
      if (!org) return notHere()
      return Effect.as(requireCredential(org, ["api_keys"], claims.sub), { _tag: "Operator", keyId: claims.sub, organizationId: org } satisfies Principal)
    }
    case "client": {
      const org = claims.org
      if (!org) return notHere()
      // Integration tokens issued before they had their own kind said `client` too.
      return Effect.map(requireCredential(org, ["api_keys", "platform_integrations"], claims.sub), (table): Principal =>
        table === "api_keys"
          ? { _tag: "Client", keyId: claims.sub, organizationId: org } satisfies Principal
          : { _tag: "Client", keyId: claims.sub, organizationId: org, via: "integration" } satisfies Principal)
    }
    case "integration": {
      const org = claims.org
      if (!org) return notHere()
      return Effect.as(
        requireCredential(org, ["platform_integrations"], claims.sub),
        { _tag: "Client", keyId: claims.sub, organizationId: org, via: "integration" } satisfies Principal
      )
    }
    case "member":
      return Effect.map(membershipsOf(claims.sub), (organizationIds): Principal => ({ _tag: "Member", personId: claims.sub, organizationIds }))
  }
  return notHere()
}

/**
 * Verifies a bearer token and builds the principal it stands for. Asked on every request: written
 * with plain combinators, it allocates no generator per step.
 */
export const authenticate = (token: string | undefined) => {
  if (!token) return Effect.fail(new NotAuthenticated({ message: "No access token was sent" }))
  return Effect.flatMap(nowSeconds, (now) => withService(TokenIssuer, (tokens) =>
    Effect.matchEffect(tokens.verify(token, now), {
      // Not an access token: perhaps an end user's consent token, which reaches only its own consent.
      onFailure: (invalid) =>
        Effect.matchEffect(tokens.verifyConsent(token, now), {
          onFailure: () => Effect.fail(invalid),
          onSuccess: (consent) => Effect.as(requireLiveConsentToken(consent), consentTokenPrincipal(consent))
        }),
      onSuccess: principalOf
    })))
}

/** Creates or updates a person's password (used by invitations and the CLI). */
export const setPersonPassword = (input: { email: string; name: string; password: string }) =>
  Effect.gen(function*() {
    if (input.password.length < 8) {
      return yield* Effect.fail(
        new InvalidInput({ message: "Invalid password: too short", errors: { password: "must have at least 8 characters" } })
      )
    }
    const storage = yield* Storage
    const repo = storage.repository(Tables.persons)
    const password_hash = yield* Effect.flatMap(SecretHasher, (h) => h.hash(input.password))
    const now = yield* nowIso
    const existing = yield* findPersonByEmail(input.email)
    if (Option.isSome(existing)) {
      return yield* Effect.orDie(
        repo.patch(existing.value.id, { password_hash, updated_at: now }, existing.value.version)
      )
    }
    const id = yield* nextId
    return yield* Effect.orDie(repo.create({
      id,
      email: input.email.trim().toLowerCase(),
      name: input.name,
      password_hash,
      created_at: now,
      updated_at: now,
      version: 1
    }))
  })

const invalidInvitation = () =>
  new InvalidInput({ message: "Invalid or expired invitation", errors: { token: "is not a valid invitation" } })

/**
 * Accepts an invitation: a new person sets its password; a person who already has one proves
 * it (so an inviter holding the token cannot take over an existing account). Answers with an
 * email session, like `POST /v1/sessions`.
 */
export const acceptInvitation = (body: unknown, clientAddress?: string) =>
  Effect.gen(function*() {
    const decoded = decode(InvitationAcceptInput, body)
    if (Either.isLeft(decoded)) return yield* Effect.fail(decoded.left)
    const { password, token } = decoded.right
    const m = /^inv_([^.]+)\.(.+)$/.exec(token)
    // Guessing tokens, or a person's password through an invitation, is slowed like logins.
    const keys = [...(m ? [`inv:${m[1]}`] : []), ...addressKeys("invitation", clientAddress)]
    return yield* throttled(keys, m ? redeemInvitation(m[1]!, m[2]!, password) : Effect.fail(invalidInvitation()))
  })

const redeemInvitation = (invitationId: string, secret: string, password: string) =>
  Effect.gen(function*() {
    const storage = yield* Storage
    const hasher = yield* SecretHasher
    const settings = yield* Settings
    const invitations = storage.repository(Tables.invitations)
    const persons = storage.repository(Tables.persons)
    const uow = yield* UnitOfWork
    return yield* uow.transaction(Effect.gen(function*() {
      const invitation = yield* invitations.get(invitationId)
      if (Option.isNone(invitation)) {
        yield* hasher.hash(secret)
        return yield* Effect.fail(invalidInvitation())
      }
      const inv = invitation.value
      const now = yield* nowIso
      const ok = yield* hasher.verify(secret, inv.token_hash)
      if (!ok || inv.accepted_at !== null || (inv.expires_at) <= now) {
        return yield* Effect.fail(invalidInvitation())
      }
      const person = yield* persons.get(inv.person_id)
      if (Option.isNone(person)) return yield* Effect.fail(invalidInvitation())
      const p = person.value
      if (typeof p.password_hash === "string") {
        // A guess at the person's password here counts with the guesses by email login.
        const proof = Effect.filterOrFail(hasher.verify(password, p.password_hash), (matches) => matches, () =>
          new InvalidInput({
            message: "This person already has a password: accept with it",
            errors: { password: "does not match the existing password" }
          }))
        yield* throttled([personKey("email", p.email)], proof)
      } else {
        const password_hash = yield* hasher.hash(password)
        yield* persons.patch(p.id, { password_hash, updated_at: now }, p.version).pipe(
          Effect.mapError(() => invalidInvitation())
        )
      }
      yield* invitations.patch(inv.id, { accepted_at: now, updated_at: now }, inv.version).pipe(
        Effect.mapError(() => invalidInvitation())
      )
      const iat = yield* nowSeconds
      const access_token = yield* (yield* TokenIssuer).issue({
        sub: p.id,
        kind: "member",
        iat,
        exp: iat + settings.tokenTtlSeconds
      })
      return { type: "email", key: p.email, access_token } satisfies Session
    }))
  })

// ---------------------------------------------------------------- declarations

export const CreateSessionAction = defineAction({
  place: "sessions",
  name: "create",
  method: "POST",
  path: "sessions",
  summary: "Create a session (obtain an access token)",
  auth: "none",
  body: { name: "SessionInput", schema: SessionInput },
  answers: answers.schema("Session", Session),
  status: 201,
  revealsCredentials: true,
  run: (_principal, request) => createSession(request.body, request.address)
})

// The invitation token itself is the credential; answers with an email session.
export const AcceptInvitationAction = defineAction({
  place: "invitations",
  name: "accept",
  method: "POST",
  path: "invitations/accept",
  tag: "members",
  summary: "Accept a member invitation: set a password (or prove the existing one) and open an email session",
  auth: "none",
  body: { name: "InvitationAcceptInput", schema: InvitationAcceptInput },
  answers: answers.schema("Session", Session),
  status: 201,
  revealsCredentials: true,
  run: (_principal, request) => acceptInvitation(request.body, request.address)
})
