import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"

/** Parses a PEM certificate; `Some(reason)` when it is not a usable certificate. */
export class CertificateValidator extends Context.Tag("@cmp/core/CertificateValidator")<
  CertificateValidator,
  { readonly check: (pem: string, nowMillis: number) => Effect.Effect<Option.Option<string>> }
>() {}
