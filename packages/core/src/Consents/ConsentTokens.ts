import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { answers, defineAction } from "../Engine/Action.js"
import { nowSeconds } from "../Engine/Clock.js"
import {
  type ConsentToken,
  ConsentToken as ConsentTokenSchema,
  ConsentTokenInput,
  DEFAULT_CONSENT_TOKEN_LIFETIME
} from "../Domain/Consent.js"
import { Forbidden, InvalidInput } from "../Domain/Errors.js"
import { outcomeOf } from "../Engine/Metrics.js"
import { type ConsentTokenClaims, nextId, TokenIssuer } from "../Engine/Ports.js"
import { isEndUser, isOperator, type Principal, requireOrganization } from "../Engine/Principal.js"
import { decode } from "../Engine/Bodies.js"
import { requireExistingOrganization, requireFlag } from "../Engine/Gates.js"
import { issuerOf } from "./TokenRevocation.js"

/**
 * Consent tokens: a backend (a client key, a member, the operator) hands one end user a
 * credential for its own consent, for a preference center or a link in an e-mail. It is a
 * signed token, kept nowhere: it lives until it expires, unless its issuer, its organization or
 * its user goes first (`TokenRevocation`).
 */

const FEATURE = "consents_api" as const

/** What a token carries rides in every request's `Authorization` header: kept well under the usual header limits. */
const MAX_CARRIED_BYTES = 4096

export const createConsentToken = (principal: Principal, body: unknown) =>
  Effect.gen(function*() {
    const issuer = issuerOf(principal)
    if (isEndUser(principal) || issuer === undefined) {
      return yield* Effect.fail(new Forbidden({ message: "Consent tokens are made by the organization's backend" }))
    }
    const decoded = decode(ConsentTokenInput, body)
    if (Either.isLeft(decoded)) return yield* Effect.fail(decoded.left)
    const input = decoded.right
    yield* requireOrganization(principal, input.organization_id)
    yield* requireExistingOrganization(input.organization_id)
    if (!isOperator(principal)) yield* requireFlag(FEATURE, input.organization_id)
    const carried = JSON.stringify({ metadata: input.metadata ?? null, delegate: input.delegate ?? null })
    if (new TextEncoder().encode(carried).byteLength > MAX_CARRIED_BYTES) {
      return yield* Effect.fail(new InvalidInput({
        message: `Invalid metadata: a token carries at most ${MAX_CARRIED_BYTES} bytes of metadata and delegate`,
        errors: { metadata: `metadata and delegate together must be at most ${MAX_CARRIED_BYTES} bytes as JSON` }
      }))
    }
    const lifetime = input.lifetime ?? DEFAULT_CONSENT_TOKEN_LIFETIME
    const iat = yield* nowSeconds
    const claims: ConsentTokenClaims = {
      jti: yield* nextId,
      org: input.organization_id,
      sub: input.organization_user_id,
      iat,
      exp: iat + lifetime,
      issuer,
      ...(input.metadata != null ? { metadata: input.metadata } : {}),
      ...(input.delegate != null ? { delegate: input.delegate } : {})
    }
    const id_token = yield* Effect.flatMap(TokenIssuer, (tokens) => tokens.issueConsent(claims))
    return {
      organization_id: input.organization_id,
      organization_user_id: input.organization_user_id,
      lifetime,
      ...(input.metadata != null ? { metadata: input.metadata } : {}),
      ...(input.delegate != null ? { delegate: input.delegate } : {}),
      expires_at: new Date(claims.exp * 1000).toISOString(),
      id_token
    } satisfies ConsentToken
  })

/** The principal a verified consent token stands for. */
export const consentTokenPrincipal = (claims: ConsentTokenClaims): Principal => ({
  _tag: "ConsentToken",
  tokenId: claims.jti,
  organizationId: claims.org,
  organizationUserId: claims.sub,
  metadata: claims.metadata,
  delegate: claims.delegate
})

export const CreateConsentTokenAction = defineAction({
  place: "consents/tokens",
  name: "create",
  method: "POST",
  path: "consents/tokens",
  tag: "consents/tokens",
  summary: "Create a consent token: one end user's credential for reading and recording its own consent",
  auth: "bearer",
  body: { name: "ConsentTokenInput", schema: ConsentTokenInput },
  answers: answers.schema("ConsentToken", ConsentTokenSchema),
  status: 201,
  revealsCredentials: true,
  premiumFeature: FEATURE,
  queryNamesOrganization: false,
  // The consents API (`/v1/consents/…`) is outside `api_requests`.
  countsApiRequests: false,
  metric: (metrics, { status }) => metrics.consentTokenRequest(outcomeOf(status)),
  run: (principal, request) => createConsentToken(principal, request.body)
})
