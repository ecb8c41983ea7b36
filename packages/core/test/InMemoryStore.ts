import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Conflict, NotAuthenticated, NotFound } from "../src/Domain/Errors.js"
import {
  Ids,
  type Page,
  type Repository,
  type Row,
  SecretHasher,
  Storage,
  type TableDef,
  type TokenClaims,
  TokenIssuer,
  UnitOfWork,
  UsageStore
} from "../src/Ports.js"
import type { CompareOp, Condition, FindQuery, Scalar, SortKey } from "../src/Query.js"
import { Settings, type SettingsShape } from "../src/Settings.js"
import { SecretBox } from "../src/Webhooks/Ports.js"
import { LoginThrottle } from "../src/LoginThrottle.js"

/**
 * An in-memory test double of the storage ports, following the semantics of the SQL store
 * (packages/store-sql): only declared columns are kept, unset columns are `null`, `null`
 * compares like SQL NULL, `$ne` also matches NULL, paging ends with `id`, writes are
 * conditional on the expected version, and unique column sets raise `Conflict`.
 * Transactions restore a snapshot when the effect fails, so "changes nothing" is testable.
 */

export interface InMemoryState {
  /** table name → id → row */
  readonly tables: Map<string, Map<string, Row>>
  /** `${organizationId}|${period}` → count */
  readonly usage: Map<string, number>
  /** Every call to `UsageStore.add`, in order. */
  readonly usageAdds: Array<{ organizationId: string; period: string; count: number }>
}

export class InMemory extends Context.Tag("test/InMemory")<InMemory, InMemoryState>() {}

const clone = <A>(a: A): A => structuredClone(a)

const isNull = (v: unknown) => v === null || v === undefined

/** -1/0/1, or undefined when either side is NULL (SQL: the comparison is unknown). */
const cmp = (a: unknown, b: unknown): number | undefined => {
  if (isNull(a) || isNull(b)) return undefined
  if (typeof a === "number" && typeof b === "number") return a < b ? -1 : a > b ? 1 : 0
  if (typeof a === "boolean" && typeof b === "boolean") return a === b ? 0 : a ? 1 : -1
  const x = String(a)
  const y = String(b)
  return x < y ? -1 : x > y ? 1 : 0
}

const compareMatches = (v: unknown, op: CompareOp, value: Scalar): boolean => {
  if (value === null) return op === "ne" ? !isNull(v) : op === "eq" ? isNull(v) : false
  if (op === "ne") return isNull(v) || cmp(v, value) !== 0
  const r = cmp(v, value)
  if (r === undefined) return false
  return op === "eq" ? r === 0 : op === "lt" ? r < 0 : op === "lte" ? r <= 0 : op === "gt" ? r > 0 : r >= 0
}

const matches = (row: Row, c: Condition): boolean => {
  switch (c._tag) {
    case "Compare":
      return compareMatches(row[c.field], c.op, c.value)
    case "In": {
      const v = row[c.field]
      const values: ReadonlyArray<Scalar> = c.values
      const hasNull = values.some((x) => x === null)
      const inValues = !isNull(v) && values.some((x) => x !== null && cmp(v, x) === 0)
      if (!c.negate) return inValues || (hasNull && isNull(v))
      if (hasNull) return !isNull(v) && !inValues
      return isNull(v) || !inValues
    }
    case "Or":
      return c.branches.some((b) => b.every((cc) => matches(row, cc)))
  }
}

const sortRows = (rows: Array<Row>, keys: ReadonlyArray<SortKey>): Array<Row> =>
  rows.sort((a, b) => {
    for (const k of keys) {
      const x = a[k.field]
      const y = b[k.field]
      // NULLs first when ascending (as SQLite does).
      const r = isNull(x) && isNull(y) ? 0 : isNull(x) ? -1 : isNull(y) ? 1 : cmp(x, y)!
      if (r !== 0) return r * k.direction
    }
    return 0
  })

const conflict = (table: TableDef, columns: ReadonlyArray<string>) => {
  const named = columns.filter((c) => c !== "organization_id")
  const fieldName = named[named.length - 1] ?? columns[columns.length - 1] ?? "id"
  return new Conflict({ message: `A record with this ${fieldName} already exists`, errors: { [fieldName]: "already exists" } })
}

const makeRepository = (state: InMemoryState, table: TableDef): Repository => {
  const rows = (): Map<string, Row> => {
    let t = state.tables.get(table.table)
    if (!t) {
      t = new Map()
      state.tables.set(table.table, t)
    }
    return t
  }
  const columns = Object.keys(table.fields)
  const onlyColumns = (row: Row): Row => {
    const out: Row = {}
    for (const [k, v] of Object.entries(row)) if (k in table.fields) out[k] = v === undefined ? null : clone(v)
    return out
  }
  /** SQL unique constraints: NULLs never collide. */
  const uniqueViolation = (candidate: Row, selfId: string | undefined): Conflict | undefined => {
    for (const set of table.unique) {
      if (set.some((c) => isNull(candidate[c]))) continue
      for (const other of rows().values()) {
        if (other.id === selfId) continue
        if (set.every((c) => JSON.stringify(other[c]) === JSON.stringify(candidate[c]))) return conflict(table, set)
      }
    }
    return undefined
  }
  const select = (where: ReadonlyArray<Condition>) => [...rows().values()].filter((r) => where.every((c) => matches(r, c)))

  const find = (q: FindQuery) =>
    Effect.sync((): Page<Row> => {
      const all = select(q.where)
      const keys: Array<SortKey> = [
        ...q.sort,
        ...table.defaultSort.filter((d) => !q.sort.some((s) => s.field === d.field))
      ].filter((k) => k.field !== "id")
      keys.push({ field: "id", direction: 1 })
      const data = q.limit === 0 ? [] : sortRows(all, keys).slice(q.skip, q.skip + q.limit).map(clone)
      return { total: all.length, limit: q.limit, skip: q.skip, data }
    })

  const write = (id: string, changes: Row, expectedVersion: number, full: boolean) =>
    Effect.suspend((): Effect.Effect<Row, NotFound | Conflict> => {
      const current = rows().get(id)
      if (!current) return Effect.fail(new NotFound({ message: `No record found for id '${id}'` }))
      if (current.version !== expectedVersion) {
        return Effect.fail(
          new Conflict({
            message: `The record was changed meanwhile (version ${current.version}); reload it and try again`,
            errors: { version: "is not the current version" }
          })
        )
      }
      const next: Row = full
        ? Object.fromEntries(
          columns.map((c) => [c, c === "id" || c === "created_at" ? current[c] : clone(changes[c] ?? null)])
        )
        : { ...current, ...onlyColumns(changes), id }
      next.version = expectedVersion + 1
      const dup = uniqueViolation(next, id)
      if (dup) return Effect.fail(dup)
      rows().set(id, next)
      return Effect.succeed(clone(next))
    })

  const create = (row: Row) =>
    Effect.suspend(() => {
      const full: Row = Object.fromEntries(columns.map((c) => [c, null]))
      Object.assign(full, onlyColumns(row))
      const id = full.id
      if (typeof id !== "string") return Effect.die(new Error(`${table.table}: create without a string id`))
      if (rows().has(id)) return Effect.fail(conflict(table, ["id"]))
      const dup = uniqueViolation(full, undefined)
      if (dup) return Effect.fail(dup)
      rows().set(id, full)
      return Effect.succeed(clone(full))
    })

  return {
    find,
    count: (where) => Effect.sync(() => select(where).length),
    get: (id) => Effect.sync(() => Option.map(Option.fromNullable(rows().get(id)), clone)),
    create,
    insert: (many) => Effect.forEach(many, create, { discard: true }),
    update: (id, row, expectedVersion) => write(id, row, expectedVersion, true),
    patch: (id, changes, expectedVersion) => write(id, changes, expectedVersion, false),
    remove: (id, expectedVersion) =>
      Effect.suspend(() => {
        const current = rows().get(id)
        if (!current) return Effect.succeed(Option.none<Row>())
        if (expectedVersion !== undefined && current.version !== expectedVersion) {
          return Effect.fail(new Conflict({ message: "The record was changed meanwhile; reload it and try again" }))
        }
        rows().delete(id)
        return Effect.succeed(Option.some(clone(current)))
      })
  }
}

const snapshot = (state: InMemoryState) => {
  const tables = new Map([...state.tables].map(([k, v]) => [k, clone(v)]))
  const usage = new Map(state.usage)
  return () => {
    state.tables.clear()
    for (const [k, v] of tables) state.tables.set(k, v)
    state.usage.clear()
    for (const [k, v] of usage) state.usage.set(k, v)
  }
}

/** The state plus Storage, UnitOfWork and UsageStore over it. */
export const storeLayer: Layer.Layer<InMemory | Storage | UnitOfWork | UsageStore> = Layer.effectContext(
  Effect.sync(() => {
    const state: InMemoryState = { tables: new Map(), usage: new Map(), usageAdds: [] }
    const repos = new Map<string, Repository>()
    const storage = {
      repository: (table: TableDef) => {
        let r = repos.get(table.table)
        if (!r) {
          r = makeRepository(state, table)
          repos.set(table.table, r)
        }
        return r
      }
    }
    const uow = {
      transaction: <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
        Effect.suspend(() => {
          const restore = snapshot(state)
          return Effect.onError(effect, () => Effect.sync(restore))
        }),
      // One JavaScript thread and no awaits inside a use-case's reads: nothing to serialise.
      lock: (_key: string) => Effect.void
    }
    const usage = {
      add: (organizationId: string, period: string, count: number) =>
        Effect.sync(() => {
          state.usageAdds.push({ organizationId, period, count })
          const k = `${organizationId}|${period}`
          const total = (state.usage.get(k) ?? 0) + count
          state.usage.set(k, total)
          return total
        }),
      get: (organizationId: string, period: string) =>
        Effect.sync(() => state.usage.get(`${organizationId}|${period}`) ?? 0)
    }
    return Context.make(InMemory, state).pipe(
      Context.add(Storage, storage),
      Context.add(UnitOfWork, uow),
      Context.add(UsageStore, usage)
    )
  })
)

/** Predictable ids in creation order: id-0001, id-0002, ... */
export const idsLayer = Layer.sync(Ids, () => {
  let n = 0
  return { next: Effect.sync(() => `id-${String(++n).padStart(4, "0")}`) }
})

export const FAKE_HASH_PREFIX = "h:"

export const hasherLayer = Layer.succeed(SecretHasher, {
  hash: (secret) => Effect.succeed(FAKE_HASH_PREFIX + secret),
  verify: (secret, hash) => Effect.succeed(hash === FAKE_HASH_PREFIX + secret)
})

/** Token = the JSON of its claims; verify parses it and checks `exp`. */
export const tokenLayer = Layer.succeed(TokenIssuer, {
  issue: (claims) => Effect.succeed(JSON.stringify(claims)),
  verify: (token, nowSeconds) =>
    Effect.suspend(() => {
      let claims: TokenClaims
      try {
        claims = JSON.parse(token) as TokenClaims
      } catch {
        return Effect.fail(new NotAuthenticated({ message: "Malformed token" }))
      }
      if (typeof claims !== "object" || claims === null || typeof claims.exp !== "number") {
        return Effect.fail(new NotAuthenticated({ message: "Malformed token" }))
      }
      if (claims.exp <= nowSeconds) return Effect.fail(new NotAuthenticated({ message: "The token has expired" }))
      return Effect.succeed(claims)
    })
})

/** A transparent "encryption" double: sealing is visible, so tests can see it happened. */
const secretBoxLayer = Layer.succeed(SecretBox, {
  seal: (plaintext: string) => Effect.succeed(`sealed:${plaintext}`),
  open: (sealed: string) => Effect.succeed(sealed.replace(/^sealed:/, ""))
})

export type TestServices =
  | InMemory
  | Storage
  | UnitOfWork
  | UsageStore
  | Ids
  | SecretHasher
  | TokenIssuer
  | Settings
  | SecretBox
  | LoginThrottle

/** A fresh, empty world for each test that provides it. */
export const testLayer = (settings: Partial<SettingsShape> = {}): Layer.Layer<TestServices> =>
  Layer.mergeAll(storeLayer, idsLayer, hasherLayer, tokenLayer, secretBoxLayer, LoginThrottle.layer(), Settings.layer(settings))
