import { ProofFiles, type ProofKey } from "@cmp/core"
import { dataUri, samplePng } from "@cmp/test-support/proof-samples"
import { sqlite } from "@cmp/store-sqlite"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ConsentPlatformApi, createPlatform } from "../src/index.js"
import { organizationIn } from "./hostFixture.js"

/**
 * A host keeps the bytes of proofs elsewhere (an object store) by handing in its own
 * `ProofFiles` after the store's, as docs/embedding.md shows: the platform then writes, reads and
 * removes them there, and the database holds none.
 */

const kept = new Map<string, Uint8Array>()
const keyOf = (key: ProofKey) => `${key.organization_id}/${key.id}`
const objectStore = Layer.succeed(ProofFiles, {
  put: (key, bytes) => Effect.sync(() => void kept.set(keyOf(key), bytes)),
  get: (key) => Effect.sync(() => Option.fromNullable(kept.get(keyOf(key)))),
  remove: (key) => Effect.sync(() => void kept.delete(keyOf(key))),
  forget: (organizationId) => Effect.sync(() => {
    for (const k of [...kept.keys()]) if (k.startsWith(`${organizationId}/`)) kept.delete(k)
  })
})

let cmp: ConsentPlatformApi
beforeAll(async () => {
  cmp = await createPlatform({
    store: Layer.merge(sqlite({ filename: ":memory:" }), objectStore),
    hashCost: 1024,
    logLevel: "None",
    dispatcher: false
  })
})
afterAll(() => cmp?.dispose())

describe("a host's own ProofFiles", () => {
  it("receives the bytes of a proof, answers them back, and loses them when the proof is removed", async () => {
    const org = await organizationIn(cmp, "Object store", { versions_and_proofs: true, consents_api: true })
    const acme = cmp.forOrganization(org.id)
    const png = samplePng()
    const proof = await acme.consents.proofs.create({ organization_id: org.id, file: dataUri("image/png", png) })
    expect([...kept.keys()]).toEqual([`${org.id}/${proof.id}`])
    expect(Array.from(kept.get(`${org.id}/${proof.id}`)!)).toEqual(Array.from(png))
    const read = await acme.consents.proofs.get(proof.id)
    expect(read.file).toBe(dataUri("image/png", png))
    await acme.consents.proofs.remove(proof.id)
    expect(kept.size).toBe(0)
  })
})
