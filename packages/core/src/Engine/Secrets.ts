import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"

/**
 * The server's own keys at work: secrets kept sealed at rest and values signed for later checks.
 * Every feature that keeps a secret or hands out a signed value uses these.
 */

/** Reversible encryption of secrets the service must use later (signing keys, OAuth secrets). */
export class SecretBox extends Context.Tag("@cmp/core/SecretBox")<
  SecretBox,
  {
    readonly seal: (plaintext: string) => Effect.Effect<string>
    readonly open: (sealed: string) => Effect.Effect<string>
  }
>() {}

/**
 * Signs a URL so its target can check it was issued by this server and is not expired; and
 * checks the values this server puts in URLs for itself (a page cursor).
 */
export class UrlSigner extends Context.Tag("@cmp/core/UrlSigner")<
  UrlSigner,
  {
    readonly sign: (url: string, expiresAtSeconds: number) => Effect.Effect<string>
    /**
     * A keyed check value (base64url) of `data`, with a key of its own per `purpose`: a value
     * handed out for one purpose is never taken for another, nor for a signed URL. Every server
     * sharing the store computes the same.
     */
    readonly mac: (purpose: string, data: string) => Effect.Effect<string>
  }
>() {}
