import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { answers, defineAction } from "../Engine/Action.js"
import { recordChange } from "../Engine/AuditTrail.js"
import { decode, ensureMethod } from "../Engine/Bodies.js"
import { nowMillis } from "../Engine/Clock.js"
import { requireFeatureBeforeBody } from "../Engine/Gates.js"
import { UnitOfWork } from "../Engine/Ports.js"
import type { Principal } from "../Engine/Principal.js"
import { loadVisible } from "../Engine/Reads.js"
import { SecretBox } from "../Engine/Secrets.js"
import { outputOfRow, repoOf } from "../Engine/Views.js"
import { DEFAULT_SECRET_OVERLAP_S, WebhookSecretRotation } from "../Domain/Webhook.js"
import { announceWebhookChange } from "./Changes.js"
import { forgetEndpoint } from "./Ports.js"
import { newSigningSecret, WebhooksResource } from "./Webhooks.js"

/**
 * A webhook's signing secret replaced without a gap: the new one signs every message from the
 * commit on, and the replaced one signs beside it until the overlap ends, so a receiver that
 * still holds the old secret keeps verifying while it learns the new one. At most two secrets
 * sign: rotating again during an overlap makes the secret it replaces the previous one, and the
 * one before stops at once.
 *
 * Signatures are made per attempt, at send time, from the webhook's row: a message queued
 * before the rotation and sent after it is signed with the secrets of its attempt's time.
 */
export const rotateSigningSecret = (principal: Principal, id: string, body: unknown) =>
  Effect.gen(function*() {
    // Who may update the webhook may rotate its secret; an end user's credential never may.
    yield* ensureMethod(WebhooksResource, principal, "update")
    // The webhook gives the organization: until it is read, gated on the principal's.
    yield* requireFeatureBeforeBody(WebhooksResource, principal, body, undefined)
    const decoded = decode(WebhookSecretRotation, body === undefined ? {} : body)
    if (Either.isLeft(decoded)) return yield* Effect.fail(decoded.left)
    const overlapS = decoded.right.overlap_s ?? DEFAULT_SECRET_OVERLAP_S
    const secret = newSigningSecret()
    const sealed = yield* Effect.flatMap(SecretBox, (box) => box.seal(secret))
    const uow = yield* UnitOfWork
    const output = yield* uow.transaction(
      Effect.gen(function*() {
        const before = yield* loadVisible(WebhooksResource, principal, id)
        const nowMs = yield* nowMillis
        const keeps = overlapS > 0
        const repo = yield* repoOf(WebhooksResource)
        const stored = yield* repo.patch(before.id, {
          signing_secret_sealed: sealed,
          // Already sealed: the replaced secret is never opened here, and never answered.
          previous_secret_sealed: keeps ? before.signing_secret_sealed : null,
          previous_secret_expires_at: keeps ? new Date(nowMs + overlapS * 1000).toISOString() : null,
          updated_at: new Date(nowMs).toISOString()
        }, before.version)
        // Other servers drop their copy of the webhook (and its opened secrets) as this commits.
        yield* announceWebhookChange(stored.organization_id, stored.id)
        yield* recordChange(WebhooksResource, principal, "rotate", stored, ["signing_secret"])
        return yield* outputOfRow(WebhooksResource, stored, {}, { signing_secret: secret })
      })
    )
    yield* forgetEndpoint(output.id)
    return output
  })

export const RotateSigningSecretAction = defineAction({
  place: "webhooks",
  name: "rotateSecret",
  method: "POST",
  path: "webhooks/:id/rotate-secret",
  summary: "Replace the webhook's signing secret: the answer shows the new `signing_secret` this once; until " +
    "`previous_secret_expires_at` (`overlap_s` seconds, default 86400, at most 604800; 0: at once) every message " +
    "carries a signature with the new secret and one with the old",
  auth: "bearer",
  body: { name: "WebhookSecretRotation", schema: WebhookSecretRotation },
  bodyOptional: true,
  answers: answers.outputOf(WebhooksResource),
  status: 200,
  revealsCredentials: true,
  premiumFeature: "webhooks",
  target: (request) => ({ def: WebhooksResource, id: request.id }),
  queryNamesOrganization: false,
  run: (principal, request) => rotateSigningSecret(principal, request.id, request.body)
})
