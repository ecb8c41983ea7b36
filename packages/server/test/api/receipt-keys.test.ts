import { rotateReceiptSigningKey, type StoreLayer } from "@cmp/platform"
import { PgStore } from "@cmp/store-postgres"
import { SqliteStore } from "@cmp/store-sqlite"
import { createTestDatabase } from "@cmp/test-support/database"
import canonicalize from "canonicalize"
import * as Effect from "effect/Effect"
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet } from "jose"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { call, storeKind, unique } from "./helpers.js"
import { useServer } from "./fixture.js"

/**
 * The receipt signing key across a rotation: the server's database is also opened by the
 * rotation, as the `rotate-receipt-key` command opens it. Receipts signed before still verify
 * against the published keys after; the server signs with the new key once it read the ring
 * again (at most a minute later, on its clock).
 */

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-receipt-keys-"))
const database = storeKind === "postgres" ? await createTestDatabase({ clients: 4 }) : undefined
const storeLayer = (): StoreLayer =>
  database === undefined
    ? SqliteStore.layer({ filename: path.join(dir, "consent.db") })
    : PgStore.layer({ url: database.url, maxConnections: 1 })

const { server, op, tenant } = useServer(() => ({ store: storeLayer() }))

afterAll(async () => {
  await database?.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

const jwks = async (): Promise<JSONWebKeySet> => {
  const r = await call(server.url, "GET", "/v1/consents/receipts/jwks")
  expect(r.status, r.text).toBe(200)
  return r.body as JSONWebKeySet
}

const verifies = async (answer: { receipt: unknown; jws: string }, keys: JSONWebKeySet) => {
  const verified = await compactVerify(answer.jws, createLocalJWKSet(keys), { algorithms: ["EdDSA"] })
  return new TextDecoder().decode(verified.payload) === canonicalize(answer.receipt)
}

describe("rotating the receipt signing key", () => {
  it("a receipt signed before still verifies; the server signs with the new key once it read the ring again", async () => {
    const t = await tenant({ consents_api: true })
    const ouid = unique("customer")
    const e = await t.call("POST", "/v1/consents/events", {
      body: { organization_id: t.org.id, user: { organization_user_id: ouid }, consents: { purposes: [{ id: "analytics", enabled: true }] } }
    })
    expect(e.status, e.text).toBe(201)
    const receipt = async () => {
      const r = await t.call("GET", `/v1/consents/users/${e.body.user.id}/receipt`)
      expect(r.status, r.text).toBe(200)
      return r.body as { receipt: unknown; jws: string }
    }
    const before = await receipt()
    const oldKid = decodeProtectedHeader(before.jws).kid
    expect((await jwks()).keys.map((k) => k.kid)).toEqual([oldKid])

    const rotated = await Effect.runPromise(rotateReceiptSigningKey(storeLayer()))
    expect(rotated.retired).toEqual([oldKid])
    expect(rotated.kid).not.toBe(oldKid)
    // The operator's command is in the audit trail, operator-wide, with the new key's id only.
    const trail = await op.call("GET", `/v1/audit-logs?resource=receipt-signing-keys&resource_id=${rotated.kid}`)
    expect(trail.status, trail.text).toBe(200)
    expect(trail.body.data).toEqual([expect.objectContaining({
      organization_id: null,
      action: "rotate",
      principal: { kind: "host", id: "rotate-receipt-key" },
      fields: ["key"],
      address: null
    })])

    // Within the minute the server keeps the ring it read, it still signs with the old key.
    expect(decodeProtectedHeader((await receipt()).jws).kid).toBe(oldKid)
    server.clock.advance(60_000)
    const after = await receipt()
    expect(decodeProtectedHeader(after.jws).kid).toBe(rotated.kid)
    const keys = await jwks()
    expect(keys.keys.map((k) => k.kid)).toEqual([rotated.kid, oldKid])
    expect(await verifies(before, keys)).toBe(true)
    expect(await verifies(after, keys)).toBe(true)

    // A second rotation retires both; every receipt still verifies.
    const again = await Effect.runPromise(rotateReceiptSigningKey(storeLayer()))
    expect(again.retired).toEqual([rotated.kid, oldKid])
    server.clock.advance(60_000)
    const third = await receipt()
    expect(decodeProtectedHeader(third.jws).kid).toBe(again.kid)
    const all = await jwks()
    expect(all.keys.map((k) => k.kid)).toEqual([again.kid, rotated.kid, oldKid])
    for (const signed of [before, after, third]) expect(await verifies(signed, all)).toBe(true)
  })
})
