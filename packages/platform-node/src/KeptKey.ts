import { nowIso, Storage, Tables } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as crypto from "node:crypto"

/**
 * A random 32-byte key generated once and kept in the settings table, for keys the operator did
 * not configure. Two servers starting at once: the loser of the insert reads the winner's key.
 */
export const keptKey = (id: string) =>
  Effect.gen(function*() {
    const repo = (yield* Storage).repository(Tables.settings)
    const existing = yield* repo.get(id)
    if (Option.isSome(existing)) return Buffer.from(existing.value.value as string, "base64")
    const now = yield* nowIso
    const value = crypto.randomBytes(32).toString("base64")
    const kept = yield* repo.create({ id, value, created_at: now, updated_at: now, version: 1 }).pipe(
      Effect.as(value),
      Effect.catchTag("Conflict", () => Effect.map(repo.get(id), (o) => Option.getOrThrow(o).value as string))
    )
    return Buffer.from(kept, "base64")
  })
