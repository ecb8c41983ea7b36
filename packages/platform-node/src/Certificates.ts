import { CertificateValidator } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as crypto from "node:crypto"

const pemBlock = /-----BEGIN ([A-Z0-9 ]+)-----/g

/**
 * Parses the PEM with node:crypto's X509Certificate; an expired certificate is refused too, and
 * so is anything beside the one certificate (X509Certificate reads the first block and ignores
 * the rest, which would then be stored unchecked).
 */
export const checkCertificatePem = (pem: string, nowMillis: number): Option.Option<string> => {
  const blocks = Array.from(pem.matchAll(pemBlock), (m) => m[1])
  if (blocks.some((label) => label?.includes("PRIVATE KEY"))) return Option.some("must not contain a private key: send the certificate only")
  const trimmed = pem.trim()
  if (blocks.length !== 1 || blocks[0] !== "CERTIFICATE" || !trimmed.startsWith("-----BEGIN CERTIFICATE-----") ||
    !trimmed.endsWith("-----END CERTIFICATE-----")) {
    return Option.some("must be exactly one PEM certificate and nothing else")
  }
  let cert: crypto.X509Certificate
  try {
    cert = new crypto.X509Certificate(trimmed)
  } catch {
    return Option.some("must be a valid PEM X.509 certificate")
  }
  if (Date.parse(cert.validTo) <= nowMillis) return Option.some(`the certificate expired on ${cert.validTo}`)
  return Option.none()
}

export const X509CertificateValidatorLive = Layer.succeed(CertificateValidator, {
  check: (pem: string, nowMillis: number) => Effect.sync(() => checkCertificatePem(pem, nowMillis))
})
