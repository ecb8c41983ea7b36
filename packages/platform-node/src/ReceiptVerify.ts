import canonicalize from "canonicalize"
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet } from "jose"

/**
 * Checks a consent receipt offline, as anyone holding the published keys can: the JWS's
 * signature (EdDSA only) by the key its `kid` names, its payload being RFC 8785 JSON, and, when
 * the receipt's JSON travels beside it, that JSON being the payload.
 */

export type ReceiptVerification =
  | { readonly valid: true; readonly kid: string; readonly receipt: Record<string, unknown> }
  | { readonly valid: false; readonly reason: string; readonly receipt?: Record<string, unknown> | undefined }

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The JWS and the receipt beside it, from a receipt answer (`{ receipt, jws }`) or a bare JWS. */
export const receiptParts = (input: unknown): { readonly jws: string; readonly receipt?: unknown } | undefined => {
  if (typeof input === "string") return { jws: input.trim() }
  if (isRecord(input) && typeof input.jws === "string") return { jws: input.jws, ...(input.receipt !== undefined ? { receipt: input.receipt } : {}) }
  return undefined
}

export const verifyReceipt = async (input: unknown, jwks: JSONWebKeySet): Promise<ReceiptVerification> => {
  const parts = receiptParts(input)
  if (parts === undefined) return { valid: false, reason: "not a receipt: expected { receipt, jws } or a compact JWS" }
  const beside = isRecord(parts.receipt) ? parts.receipt : undefined
  let kid: string | undefined
  try {
    const header = decodeProtectedHeader(parts.jws)
    if (header.alg !== "EdDSA") return { valid: false, reason: `unexpected algorithm ${String(header.alg)}`, receipt: beside }
    kid = header.kid
  } catch {
    return { valid: false, reason: "not a compact JWS", receipt: beside }
  }
  if (kid === undefined || !jwks.keys.some((k) => k.kid === kid)) {
    return { valid: false, reason: `no key ${kid ?? "(none named)"} in the key set`, receipt: beside }
  }
  let payload: string
  try {
    const verified = await compactVerify(parts.jws, createLocalJWKSet(jwks), { algorithms: ["EdDSA"] })
    payload = new TextDecoder("utf-8", { fatal: true }).decode(verified.payload)
  } catch {
    return { valid: false, reason: "the signature does not verify", receipt: beside }
  }
  let signed: unknown
  try {
    signed = JSON.parse(payload)
  } catch {
    return { valid: false, reason: "the signed payload is not JSON", receipt: beside }
  }
  if (!isRecord(signed) || canonicalize(signed) !== payload) {
    return { valid: false, reason: "the signed payload is not the RFC 8785 JSON of a receipt", receipt: beside }
  }
  if (parts.receipt !== undefined && canonicalize(parts.receipt) !== payload) {
    return { valid: false, reason: "the receipt differs from what the JWS signs", receipt: signed }
  }
  return { valid: true, kid, receipt: signed }
}
