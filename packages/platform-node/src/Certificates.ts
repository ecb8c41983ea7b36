import { CertificateValidator } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as crypto from "node:crypto"

/** Parses the PEM with node:crypto's X509Certificate; an expired certificate is refused too. */
export const checkCertificatePem = (pem: string, nowMillis: number): Option.Option<string> => {
  let cert: crypto.X509Certificate
  try {
    cert = new crypto.X509Certificate(pem)
  } catch {
    return Option.some("must be a valid PEM X.509 certificate")
  }
  if (Date.parse(cert.validTo) <= nowMillis) return Option.some(`the certificate expired on ${cert.validTo}`)
  return Option.none()
}

export const X509CertificateValidatorLive = Layer.succeed(CertificateValidator, {
  check: (pem: string, nowMillis: number) => Effect.sync(() => checkCertificatePem(pem, nowMillis))
})
