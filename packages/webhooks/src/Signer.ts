import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { Webhook } from "standardwebhooks"

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): receivers verify them with
 * any Standard Webhooks library, given the endpoint's `whsec_…` secret. The signature covers
 * `webhook-id.webhook-timestamp.body`, so it must be computed over the exact body string that
 * is sent; re-serialising the payload afterwards would break it.
 */

export class SignError extends Data.TaggedError("SignError")<{ readonly message: string }> {}

export interface SignatureHeaders {
  readonly "webhook-id": string
  /** Unix seconds. */
  readonly "webhook-timestamp": string
  /** `v1,<base64 HMAC-SHA256>`, or two of them, space-separated, during a rotation's overlap. */
  readonly "webhook-signature": string
}

/**
 * The three signature headers for one request. `msgId` is the message id, the same on every
 * retry so receivers can deduplicate; `timestampSeconds` is the time of this attempt.
 * With `previousSecret` (a rotation's overlap), `webhook-signature` holds two signatures,
 * space-separated, the current secret's first: a receiver verifies with either secret.
 * Fails when a secret is not a usable `whsec_` / base64 key.
 */
export const sign = (options: SignOptions): Effect.Effect<SignatureHeaders, SignError> =>
  Effect.suspend(() => {
    const signed = signNow(options)
    return signed instanceof SignError ? Effect.fail(signed) : Effect.succeed(signed)
  })

export interface SignOptions {
  readonly secret: string
  readonly previousSecret?: string | undefined
  readonly msgId: string
  readonly timestampSeconds: number
  readonly body: string
}

/** `sign` without an Effect around it, for the dispatcher's path of every message. */
export const signNow = (options: SignOptions): SignatureHeaders | SignError => {
  try {
    const at = new Date(options.timestampSeconds * 1000)
    const signatures = [options.secret, ...(options.previousSecret === undefined ? [] : [options.previousSecret])]
      .map((secret) => new Webhook(secret).sign(options.msgId, at, options.body))
    return {
      "webhook-id": options.msgId,
      "webhook-timestamp": String(options.timestampSeconds),
      "webhook-signature": signatures.join(" ")
    }
  } catch (e) {
    return new SignError({ message: `signing failed: ${e instanceof Error ? e.message : String(e)}` })
  }
}
