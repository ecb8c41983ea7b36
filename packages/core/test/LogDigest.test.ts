import * as crypto from "node:crypto"
import { describe, expect, it } from "vitest"
import { canonicalJson } from "../src/Consents/CanonicalJson.js"
import { LOGGED_TABLES, rowDigest } from "../src/Consents/ConsentLog.js"

const digests = {
  sha256: (s: string) => crypto.createHash("sha256").update(s, "utf8").digest("hex"),
  canonicalJson
} as unknown as Parameters<typeof rowDigest>[0]

/** A consent event's row as the store kept it before its GPC columns were added. */
const before = {
  id: "e1",
  organization_id: "o1",
  user_id: "u1",
  status: "confirmed",
  regulation: "gdpr",
  consents: { purposes: [{ id: "a", enabled: true }] },
  created_at: "2026-01-01T00:00:00.000Z",
  version: 1
}

describe("the digest of a logged row", () => {
  it("leaves out a column added later while the row holds the value rows had before it", () => {
    const old = rowDigest(digests, "consent_events", before)
    expect(rowDigest(digests, "consent_events", { ...before, ...LOGGED_TABLES.consent_events!.addedLater })).toBe(old)
  })

  it("covers the column once it holds anything else", () => {
    const old = rowDigest(digests, "consent_events", before)
    for (const changed of [{ gpc: true }, { gpc_conflict: true }, { gpc_override: true }]) {
      const row = { ...before, ...LOGGED_TABLES.consent_events!.addedLater, ...changed }
      expect(rowDigest(digests, "consent_events", row)).not.toBe(old)
    }
  })

  it("is the plain digest of the row's canonical JSON elsewhere", () => {
    const row = { id: "u1", organization_id: "o1", gpc: false }
    expect(rowDigest(digests, "consent_users", row)).toBe(digests.sha256(canonicalJson(row)))
  })
})
