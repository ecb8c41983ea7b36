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
  /** `v1,<base64 HMAC-SHA256>`. */
  readonly "webhook-signature": string
}

/**
 * The three signature headers for one request. `msgId` is the message id, the same on every
 * retry so receivers can deduplicate; `timestampSeconds` is the time of this attempt.
 * Fails when the secret is not a usable `whsec_` / base64 key.
 */
export const sign = (options: {
  readonly secret: string
  readonly msgId: string
  readonly timestampSeconds: number
  readonly body: string
}): Effect.Effect<SignatureHeaders, SignError> =>
  Effect.try({
    try: () => {
      const signature = new Webhook(options.secret).sign(
        options.msgId,
        new Date(options.timestampSeconds * 1000),
        options.body
      )
      return {
        "webhook-id": options.msgId,
        "webhook-timestamp": String(options.timestampSeconds),
        "webhook-signature": signature
      }
    },
    catch: (e) => new SignError({ message: `signing failed: ${e instanceof Error ? e.message : String(e)}` })
  })
