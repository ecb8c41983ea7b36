import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { Timestamp } from "../Domain/Common.js"
import { InvalidInput } from "../Domain/Errors.js"
import { answers, defineAction } from "../Engine/Action.js"
import { recordChange } from "../Engine/AuditTrail.js"
import { decode, ensureMethod } from "../Engine/Bodies.js"
import { nowMillis } from "../Engine/Clock.js"
import { keyOf, SecretHasher, Storage, UnitOfWork } from "../Engine/Ports.js"
import type { Principal } from "../Engine/Principal.js"
import { randomToken } from "../Engine/Random.js"
import { loadVisible } from "../Engine/Reads.js"
import { toOutput } from "../Engine/Views.js"
import { ApiKeysResource } from "./ApiKeys.js"
import { forgetOrganizationCredentials } from "./CredentialCache.js"
import { OrganizationsResource } from "./Organizations.js"

/**
 * Rotating a credential without downtime: the new one is made at once, and the one it replaces
 * keeps working until a date its holder chose (within a bound), so every place that holds it can
 * be changed in the meantime. One replaced credential is kept: a second rotation drops the older
 * one at once, so a leaked credential can always be ended by rotating again with a date of now.
 */

const DAY_MS = 86_400_000

export const RotateSecretInput = Schema.Struct({
  /** Until when the secret being replaced still opens sessions; now or earlier ends it at once. */
  previous_secret_expires_at: Schema.optional(Timestamp)
}).annotations({ examples: [{ previous_secret_expires_at: "2026-11-23T10:00:00.000Z" }] })

export const RotatePublicKeyInput = Schema.Struct({
  /** Until when the public key being replaced is still accepted; now or earlier ends it at once. */
  previous_key_expires_at: Schema.optional(Timestamp)
}).annotations({ examples: [{ previous_key_expires_at: "2026-12-22T10:00:00.000Z" }] })

/** The bounds of each rotation: its default overlap and the longest one a caller may ask. */
export const rotationBounds = {
  secret: { field: "previous_secret_expires_at", defaultDays: 1, maxDays: 30 },
  publicKey: { field: "previous_key_expires_at", defaultDays: 30, maxDays: 90 }
} as const

type Bounds = (typeof rotationBounds)[keyof typeof rotationBounds]

/**
 * Until when the replaced credential is kept, as stored: `null` when it ends now (a date now or
 * past), the default when none is given, and a 400 naming the field beyond the bound.
 */
const previousUntil = (bounds: Bounds, given: string | undefined, now: number): Effect.Effect<string | null, InvalidInput> => {
  const at = given === undefined ? now + bounds.defaultDays * DAY_MS : Date.parse(given)
  if (at > now + bounds.maxDays * DAY_MS) {
    return Effect.fail(new InvalidInput({
      message: `Invalid ${bounds.field}: must be at most ${bounds.maxDays} days ahead`,
      errors: { [bounds.field]: `must be at most ${bounds.maxDays} days ahead` }
    }))
  }
  return Effect.succeed(at <= now ? null : new Date(at).toISOString())
}

const decodeInput = <A>(schema: Schema.Schema<A, any, never>, body: unknown) => {
  const decoded = decode(schema, body ?? {})
  return Either.isLeft(decoded) ? Effect.fail(decoded.left) : Effect.succeed(decoded.right)
}

/**
 * `POST /v1/keys/:id/rotate-secret`: a new secret, shown once in the answer; the replaced one
 * (its hash, as the current one is kept) opens sessions until `previous_secret_expires_at`.
 * Whoever may change the key may rotate it; another organization's key is not found.
 */
export const rotateKeySecret = (principal: Principal, id: string, body: unknown) =>
  Effect.gen(function*() {
    yield* ensureMethod(ApiKeysResource, principal, "update")
    const input = yield* decodeInput(RotateSecretInput, body)
    const now = yield* nowMillis
    const until = yield* previousUntil(rotationBounds.secret, input.previous_secret_expires_at, now)
    const secret = `sk_${randomToken(32)}`
    const secret_hash = yield* Effect.flatMap(SecretHasher, (h) => h.hash(secret))
    const uow = yield* UnitOfWork
    return yield* uow.transaction(Effect.gen(function*() {
      const key = yield* loadVisible(ApiKeysResource, principal, id)
      const repo = (yield* Storage).repository(ApiKeysResource.tableDef)
      const stored = yield* repo.patch(keyOf(ApiKeysResource.tableDef, key), {
        secret_hash,
        previous_secret_hash: until === null ? null : key.secret_hash,
        previous_secret_expires_at: until,
        updated_at: new Date(now).toISOString()
      }, key.version)
      yield* recordChange(ApiKeysResource, principal, "rotate", stored, ["secret"])
      return toOutput(ApiKeysResource, stored, { secret })
    }))
  })

/**
 * `POST /v1/organizations/:id/rotate-public-key`: a new `public_api_key`; the replaced one is
 * accepted until `previous_key_expires_at`, with the organization's origins and rate limits as
 * before. Whoever may change the organization may rotate it.
 */
export const rotatePublicKey = (principal: Principal, id: string, body: unknown) =>
  Effect.gen(function*() {
    yield* ensureMethod(OrganizationsResource, principal, "update")
    const input = yield* decodeInput(RotatePublicKeyInput, body)
    const now = yield* nowMillis
    const until = yield* previousUntil(rotationBounds.publicKey, input.previous_key_expires_at, now)
    const uow = yield* UnitOfWork
    return yield* uow.transaction(Effect.gen(function*() {
      const org = yield* loadVisible(OrganizationsResource, principal, id)
      const repo = (yield* Storage).repository(OrganizationsResource.tableDef)
      const stored = yield* repo.patch(keyOf(OrganizationsResource.tableDef, org), {
        public_api_key: `pk_${randomToken(24)}`,
        previous_public_api_key: until === null ? null : org.public_api_key,
        previous_key_expires_at: until,
        updated_at: new Date(now).toISOString()
      }, org.version)
      yield* recordChange(OrganizationsResource, principal, "rotate", stored, ["public_api_key"])
      return toOutput(OrganizationsResource, stored)
    })).pipe(
      // This process's copies of the old key (kept as current, with no date) go now; other
      // servers drop theirs within the cache's bound.
      Effect.tap(() => forgetOrganizationCredentials(id))
    )
  })

// ---------------------------------------------------------------- declarations

export const RotateKeySecretAction = defineAction({
  place: "keys",
  name: "rotateSecret",
  method: "POST",
  path: "keys/:id/rotate-secret",
  summary: "Give the key a new secret, shown once in the answer; the replaced secret still opens sessions until " +
    "`previous_secret_expires_at` (default 24 hours ahead, at most 30 days; now or earlier ends it at once). " +
    "A secret replaced by an earlier rotation ends at once",
  auth: "bearer",
  body: { name: "RotateSecretInput", schema: RotateSecretInput },
  bodyOptional: true,
  answers: answers.outputOf(ApiKeysResource),
  status: 200,
  revealsCredentials: true,
  target: (request) => ({ def: ApiKeysResource, id: request.id }),
  queryNamesOrganization: false,
  run: (principal, request) => rotateKeySecret(principal, request.id, request.body)
})

export const RotatePublicKeyAction = defineAction({
  place: "organizations",
  name: "rotatePublicKey",
  method: "POST",
  path: "organizations/:id/rotate-public-key",
  summary: "Give the organization a new `public_api_key`; the replaced key is still accepted until " +
    "`previous_key_expires_at` (default 30 days ahead, at most 90 days; now or earlier ends it at once). " +
    "A key replaced by an earlier rotation ends at once",
  auth: "bearer",
  body: { name: "RotatePublicKeyInput", schema: RotatePublicKeyInput },
  bodyOptional: true,
  answers: answers.outputOf(OrganizationsResource),
  status: 200,
  target: (request) => ({ def: OrganizationsResource, id: request.id }),
  queryNamesOrganization: false,
  run: (principal, request) => rotatePublicKey(principal, request.id, request.body)
})
