import { Ids, Storage, WebhooksResource } from "@cmp/core"
import { SqliteStore } from "@cmp/store-sqlite"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { RESEAL_BATCH, resealSecrets, secretBoxKeyId, secretBoxOf } from "../src/index.js"

/**
 * The re-seal against writes at the same moment: a server still sealing with the old key
 * rewrites webhooks' secrets while the re-seal runs. No write is lost (every row holds what its
 * last writer wrote), the re-seal never seals the value it read over a newer one, and a second
 * run leaves every value under the new key.
 */

const A = crypto.randomBytes(32)
const B = crypto.randomBytes(32)
const ROWS = 3 * RESEAL_BATCH + 17
const at = new Date(Date.UTC(2026, 0, 1)).toISOString()

const underA = secretBoxOf({ current: A, openers: [] })
const both = secretBoxOf({ current: B, openers: [A] })
const plaintextOf = (sealed: string) => {
  const opened = both.open(sealed)
  if (typeof opened !== "string") throw opened
  return opened
}

const hook = (i: number) => ({
  id: `w${String(i).padStart(4, "0")}`,
  organization_id: "o1",
  url: `https://example.com/${i}`,
  enabled: true,
  event_types: [],
  flatten: false,
  regulations: ["gdpr"],
  auth: null,
  signing_secret_sealed: underA.seal(`whsec_${i}_0`),
  previous_secret_sealed: null,
  previous_secret_expires_at: null,
  auth_client_secret_sealed: i % 2 === 0 ? underA.seal(`client_${i}`) : null,
  created_at: at,
  updated_at: at,
  version: 1
})

describe("re-seal", () => {
  it.live("beside a writer sealing with the old key: no write lost, none written over; a second run finishes", () =>
    Effect.gen(function*() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cmp-reseal-"))
      const store = Layer.merge(SqliteStore.layer({ filename: path.join(dir, "consent.db") }), Ids.Live)
      const run = Effect.gen(function*() {
        const repo = (yield* Storage).repository(WebhooksResource.tableDef)
        for (let i = 0; i < ROWS; i++) yield* repo.create(hook(i) as never)
        const keys = { encryptionKey: B.toString("hex"), encryptionKeyPrevious: A.toString("base64") }

        // Each row rewritten twice by a server still on A, as a rotation would: read, then a write conditional on its version.
        const written = new Map<string, string>()
        const writer = Effect.gen(function*() {
          for (let round = 1; round <= 2; round++) {
            for (let i = 0; i < ROWS; i++) {
              const id = hook(i).id
              for (;;) {
                const row = (yield* repo.get(id)).pipe((o) => (o._tag === "Some" ? o.value : undefined))!
                const secret = `whsec_${i}_${round}`
                const done = yield* repo.patch(id, { signing_secret_sealed: underA.seal(secret) } as never, row.version).pipe(
                  Effect.as(true),
                  Effect.catchAll(() => Effect.succeed(false))
                )
                if (done) {
                  written.set(id, secret)
                  break
                }
              }
              if (i % 25 === 0) yield* Effect.yieldNow()
            }
          }
        })
        const writing = yield* Effect.fork(writer)
        const first = yield* resealSecrets(keys)
        yield* Fiber.join(writing)
        assert.strictEqual(first.unopened, 0)
        assert.isAbove(first.tables.webhooks!.resealed, 0)

        const rows = (yield* repo.find({ where: [], sort: [], limit: 1000, skip: 0, count: false })).data
        assert.strictEqual(rows.length, ROWS)
        for (const row of rows) {
          // The last write of each row is the writer's, whichever of the two came last.
          assert.strictEqual(plaintextOf(row.signing_secret_sealed), written.get(row.id), row.id)
          const i = Number(row.id.slice(1))
          if (row.auth_client_secret_sealed !== null) assert.strictEqual(plaintextOf(row.auth_client_secret_sealed), `client_${i}`)
        }

        // A second run: everything under B, nothing opened by A alone any more.
        const second = yield* resealSecrets(keys)
        assert.strictEqual(second.unopened, 0)
        const third = yield* resealSecrets(keys)
        assert.deepStrictEqual([third.resealed, third.unopened], [0, 0])
        assert.strictEqual(third.tables.webhooks!.already_current, ROWS + Math.ceil(ROWS / 2))
        const after = (yield* repo.find({ where: [], sort: [], limit: 1000, skip: 0, count: false })).data
        const kidB = secretBoxKeyId(B)
        for (const row of after) {
          assert.isTrue(row.signing_secret_sealed.startsWith(`v2.${kidB}.`))
          assert.strictEqual(plaintextOf(row.signing_secret_sealed), written.get(row.id))
        }
      })
      yield* Effect.provide(run, store).pipe(Effect.ensuring(Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))))
    }), 60_000)
})
