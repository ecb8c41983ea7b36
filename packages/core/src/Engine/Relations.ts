import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { nowIso } from "./Clock.js"
import { keyOf, type Row, Storage, type TableDef } from "./Ports.js"
import { type Condition, eq } from "./Query.js"

/**
 * Every table the platform stores, with the relations each declares. Provided at composition
 * (from the registry of resources), so the engine finds who refers to a removed row without
 * importing the resources that do.
 */
export class Relations extends Context.Tag("@cmp/core/Relations")<
  Relations,
  { readonly tables: ReadonlyArray<TableDef> }
>() {}

/** The rows of `child` that refer, through `field`, to the removed row of `parent`. */
const referring = (parent: TableDef, removed: Row, field: string): ReadonlyArray<Condition> => [
  eq(field, removed.id as string),
  // An id of a table keyed by organization names a row only within that organization.
  ...(parent.key.includes("organization_id") ? [eq("organization_id", removed.organization_id as string)] : [])
]

/**
 * Runs the declared on-delete behaviour of every relation to a removed row, depth first and in
 * the caller's transaction: referring rows are removed (and their own referrers in turn), or
 * their reference is cleared. Hooks of the referring resources do not run.
 */
export const cascade = (parent: TableDef, removed: Row): Effect.Effect<void, never, Storage | Relations> =>
  Effect.gen(function*() {
    const { tables } = yield* Relations
    const storage = yield* Storage
    for (const child of tables) {
      for (const relation of child.references) {
        if (relation.table !== parent.table) continue
        const repo = storage.repository(child)
        const where = referring(parent, removed, relation.field)
        for (;;) {
          const page = yield* repo.find({ count: false, where, sort: [], ordered: false, limit: 500, skip: 0 })
          if (page.data.length === 0) break
          for (const row of page.data) {
            if (relation.onDelete === "cascade") {
              const gone = yield* Effect.orDie(repo.remove(keyOf(child, row)))
              if (Option.isSome(gone)) yield* cascade(child, gone.value)
            } else {
              const changes: Row = { [relation.field]: null }
              if ("updated_at" in child.fields) changes.updated_at = yield* nowIso
              yield* Effect.orDie(repo.patch(keyOf(child, row), changes, row.version as number))
            }
          }
        }
      }
    }
  })
