import {
  type Condition,
  Conflict,
  type FindQuery,
  type Keyset,
  type LinkedTable,
  NotFound,
  type Page,
  type Repository,
  type Row,
  type RowKey,
  Storage,
  type TableDef
} from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import type * as Statement from "@effect/sql/Statement"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { execute, executeText } from "./Execute.js"
import { deferringConnection, inline, literalOf } from "./Pipeline.js"
import { counted, countsOf } from "./RowCounts.js"
import * as Unavailable from "./Unavailable.js"
import { decodeValue, dialectOf, encodeValue, mapWriteError, rowLimit, storedValue } from "./SqlValues.js"

/**
 * The repository port over `SqlClient`, for SQLite and PostgreSQL: one repository per declared
 * table. Identifiers only ever come from table declarations (the query parser has already
 * checked every field), values are always bound parameters.
 */
export const make = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const dialect = dialectOf(sql)
  const cache = new Map<string, Repository>()

  /**
   * PostgreSQL: the tables with a trigger that may change a row before it is inserted, or before
   * it is updated, whose stored row only the database can tell. Read once, when a write would
   * first be deferred.
   */
  let changedBefore: { readonly insert: ReadonlySet<string>; readonly update: ReadonlySet<string> } | undefined
  const tablesChangedBefore = Effect.suspend(() =>
    changedBefore !== undefined ? Effect.succeed(changedBefore) : execute(sql<{ relname: string; tgtype: unknown }>`SELECT c.relname, t.tgtype FROM pg_trigger t
      JOIN pg_class c ON c.oid = t.tgrelid
      WHERE NOT t.tgisinternal AND (t.tgtype & 2) <> 0`).pipe(
      Effect.map((rows) => {
        // pg_trigger.tgtype: 2 before, 4 insert, 16 update.
        const on = (bit: number) => new Set(rows.filter((r) => (Number(r.tgtype) & bit) !== 0).map((r) => r.relname))
        return (changedBefore = { insert: on(4), update: on(16) })
      }),
      Effect.orElseSucceed(() => undefined)
    ))

  /**
   * The WHERE of conditions on a table's columns, each value encoded as its column's. Inside a
   * semi-join the conditions name the inner table's columns unqualified (the innermost table
   * that has a column answers for it) and its links name the outer table's qualified.
   */
  const conditionsOn = (table: LinkedTable) => {
    const col = (name: string) => {
      if (!Object.hasOwn(table.fields, name)) throw new Error(`Unknown column ${table.table}.${name}`)
      return sql(name)
    }
    const param = (field: string, v: unknown) => encodeValue(dialect, table.fields[field], v)
    const compare = { eq: "=", ne: "<>", lt: "<", lte: "<=", gt: ">", gte: ">=" } as const
    /** The JSON array in column `f` holds only `values`; never true of NULL, so never NULL itself. */
    const onlyAmong = (f: Statement.Identifier, values: ReadonlyArray<string>): Statement.Fragment =>
      dialect === "pg"
        ? sql`COALESCE(${f} <@ ${JSON.stringify(values)}::jsonb, false)`
        : values.length === 0
        ? sql`COALESCE(json_array_length(${f}) = 0, 0)`
        : sql`(${f} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM json_each(${f}) AS e WHERE e.value NOT IN ${sql.in(values)}))`
    const condition = (c: Condition): Statement.Fragment => {
      switch (c._tag) {
        case "Compare": {
          const f = col(c.field)
          if (c.value === null) return c.op === "ne" ? sql`${f} IS NOT NULL` : sql`${f} IS NULL`
          const v = param(c.field, c.value)
          if (c.op === "ne") return sql`(${f} <> ${v} OR ${f} IS NULL)`
          return sql`${f} ${sql.literal(compare[c.op])} ${v}`
        }
        case "In": {
          const f = col(c.field)
          const values = c.values.filter((v) => v !== null).map((v) => param(c.field, v))
          const hasNull = values.length !== c.values.length
          if (!c.negate) {
            const inPart = values.length > 0 ? sql`${f} IN ${sql.in(values)}` : sql`1=0`
            return hasNull ? sql`(${inPart} OR ${f} IS NULL)` : inPart
          }
          if (hasNull) return values.length > 0 ? sql`(${f} NOT IN ${sql.in(values)} AND ${f} IS NOT NULL)` : sql`${f} IS NOT NULL`
          return values.length > 0 ? sql`(${f} NOT IN ${sql.in(values)} OR ${f} IS NULL)` : sql`1=1`
        }
        case "Or":
          return c.branches.length === 0 ? sql`1=0` : sql.or(c.branches.map(conjunction))
        case "Prefix": {
          // substr compares exactly on both dialects (SQLite's LIKE ignores ASCII case, and
          // a range comparison would follow PostgreSQL's collation).
          const f = col(c.field)
          const head = sql`substr(${f}, 1, ${sql.literal(String(c.value.length))})`
          return c.negate ? sql`(${f} IS NULL OR ${head} <> ${c.value})` : sql`${head} = ${c.value}`
        }
        case "AllIn": {
          const only = onlyAmong(col(c.field), c.values)
          return c.negate ? sql`NOT (${only})` : only
        }
        case "Exists": {
          const inner = conditionsOn(c.table)
          const linked = c.link.map(([outer, innerField]) => {
            col(outer)
            return sql`${inner.col(innerField)} = ${sql(`${table.table}.${outer}`)}`
          })
          const body = sql`SELECT 1 FROM ${sql(c.table.table)} WHERE ${sql.and([...linked, inner.conjunction(c.where)])}`
          return c.negate ? sql`NOT EXISTS (${body})` : sql`EXISTS (${body})`
        }
      }
    }
    const conjunction = (where: ReadonlyArray<Condition>): Statement.Fragment =>
      where.length === 0 ? sql`1=1` : sql.and(where.map(condition))
    return { col, conjunction }
  }

  const repository = (table: TableDef): Repository => {
    const cached = cache.get(table.table)
    if (cached) return cached
    const t = sql(table.table)
    const columns = Object.keys(table.fields)
    const { col, conjunction } = conditionsOn(table)
    const enc = (row: Row): Row => {
      const out: Row = {}
      // Rows are plain objects: `for...in` sees their own keys, without an array of pairs per row.
      for (const k in row) {
        if (Object.hasOwn(table.fields, k)) out[k] = encodeValue(dialect, table.fields[k], row[k])
      }
      return out
    }
    const dec = (raw: Record<string, unknown>): Row => {
      const out: Row = {}
      for (const c of columns) out[c] = decodeValue(dialect, table.fields[c]!, raw[c])
      return out
    }
    /**
     * The query's sort, then the default sort, then `id` ascending, so equal rows page stably.
     * `id` is unique: a sort on it (in either direction) ends the order there. NULL sorts as
     * the smallest value on every dialect (PostgreSQL's default is the opposite).
     */
    const orderBy = (q: FindQuery) => {
      const keys = [...q.sort, ...table.defaultSort.filter((d) => !q.sort.some((s) => s.field === d.field))]
      const idAt = keys.findIndex((k) => k.field === "id")
      const ordered = idAt === -1 ? [...keys, { field: "id", direction: 1 as const }] : keys.slice(0, idAt + 1)
      return sql.csv(ordered.map((k) => {
        const nulls = table.fields[k.field]?.nullable ? (k.direction === 1 ? " NULLS FIRST" : " NULLS LAST") : ""
        return sql`${k.field === "id" ? sql("id") : col(k.field)} ${sql.literal((k.direction === 1 ? "ASC" : "DESC") + nulls)}`
      }))
    }

    /**
     * Rows after a keyset position, as one row-value comparison (both dialects have them), which
     * an index on the same columns can seek to. Every field must be a non-null column: a
     * comparison with NULL is never true, and the row would silently drop out of the walk.
     */
    const param = (field: string, v: unknown) => encodeValue(dialect, table.fields[field], v)
    const keysetAfter = (k: Keyset): Statement.Fragment => {
      for (const f of k.fields) {
        if (table.fields[f]?.nullable !== false) throw new Error(`Keyset field ${table.table}.${f} must be a non-null column`)
      }
      if (k.after === undefined) return sql`1=1`
      if (k.after.length !== k.fields.length) throw new Error(`A keyset position on ${table.table} needs one value per field`)
      return sql`(${sql.csv(k.fields.map((f) => sql`${col(f)}`))}) > ${sql.in(k.after.map((v, i) => param(k.fields[i]!, v)))}`
    }
    const filter = (q: FindQuery): Statement.Fragment =>
      q.keyset === undefined ? conjunction(q.where) : sql.and([conjunction(q.where), keysetAfter(q.keyset)])

    const countWhere = (where: Statement.Fragment) =>
      execute(sql<{ total: unknown }>`SELECT COUNT(*) AS total FROM ${t} WHERE ${where}`).pipe(
        Effect.map((rows) => Number(rows[0]?.total ?? 0)),
        Unavailable.orDie
      )

    /**
     * Where the database keeps this table's row counts (`RowCounts`), a count whose conditions
     * name only the columns they are kept by (an organization, the common list) is the sum of
     * the matching count rows: the same conditions hold for a row and for its count's row, so
     * it is exact, and it reads a few rows whatever the table holds. Any other count reads the
     * matching rows.
     */
    const countedBy = counted.get(table.table)
    const counts = sql(countsOf(table.table))
    const onCountedColumns = (where: ReadonlyArray<Condition>): boolean =>
      where.every((c) =>
        c._tag === "Or" ? c.branches.every(onCountedColumns) : c._tag !== "Exists" && countedBy!.includes(c.field)
      )
    const count = (where: ReadonlyArray<Condition>) =>
      countedBy !== undefined && onCountedColumns(where)
        ? execute(sql<{ total: unknown }>`SELECT COALESCE(SUM(row_count), 0) AS total FROM ${counts} WHERE ${conjunction(where)}`).pipe(
          // PostgreSQL answers a bigint sum as a numeric, which its driver hands over as a string.
          Effect.map((rows) => Number(rows[0]?.total ?? 0)),
          Unavailable.orDie
        )
        : countWhere(conjunction(where))

    /**
     * A count, held back on a pipelined transaction (`PipelinedConnection.check`): on every write
     * an organization owns, its organization's row is required, and this saves its round trip.
     */
    const requireRow = <E>(where: ReadonlyArray<Condition>, missing: () => E): Effect.Effect<void, E> =>
      Effect.withFiberRuntime<void, E>((fiber) => {
        const deferTo = deferringConnection(fiber)
        if (deferTo !== undefined) {
          const [text, params] = sql`SELECT COUNT(*) FROM ${t} WHERE ${conjunction(where)}`.compile()
          const inlined = inline(text, params)
          if (inlined !== undefined) return Unavailable.orDie(deferTo.check(inlined, missing))
        }
        return Effect.flatMap(count(where), (n) => (n > 0 ? Effect.void : Effect.failSync(missing)))
      })

    /** On the path of every consent event (its user looked up by the organization's id): no generator. */
    const find = (q: FindQuery) =>
      Effect.suspend(() => {
        const where = filter(q)
        const skip = q.keyset ? 0 : q.skip
        // An unordered look-up (one row by a unique key) saves SQLite a sorter per call.
        const order = q.keyset
          ? sql`ORDER BY ${sql.csv(q.keyset.fields.map((f) => sql`${col(f)} ASC`))}`
          : q.ordered === false
          ? sql``
          : sql`ORDER BY ${orderBy(q)}`
        const read = q.limit === 0
          ? Effect.succeed([])
          : execute(sql<Record<string, unknown>>`SELECT * FROM ${t} WHERE ${where} ${order} LIMIT ${rowLimit(sql, q.limit)} OFFSET ${skip}`)
        return Effect.flatMap(read, (rows) => {
          const page = (total: number): Page<Row> => ({ total, limit: q.limit, skip, data: rows.map(dec) })
          if (q.count === false) return Effect.succeed(page(skip + rows.length))
          return Effect.map(q.keyset ? countWhere(where) : count(q.where), page)
        })
      }).pipe(Unavailable.orDie)

    /**
     * The WHERE of one row. A bare id on a table keyed by organization could match a row of
     * each organization: that is a bug in the caller, never a look-up to guess at.
     */
    const keyed = table.key.length > 1
    const match = (key: RowKey): Statement.Fragment => {
      if (typeof key === "string") {
        if (keyed) throw new Error(`${table.table} is keyed by organization: a bare id names no single row`)
        return sql`${sql("id")} = ${key}`
      }
      return sql`${sql("organization_id")} = ${key.organization_id} AND ${sql("id")} = ${key.id}`
    }
    const idOf = (key: RowKey) => (typeof key === "string" ? key : key.id)

    const get = (key: RowKey) =>
      Effect.suspend(() => execute(sql<Record<string, unknown>>`SELECT * FROM ${t} WHERE ${match(key)}`)).pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), dec)),
        Unavailable.orDie
      )

    const quoted = (name: string) => `"${name.replace(/"/g, '""')}"`
    /** The columns every row names, in the first row's order; undefined where one names others. */
    const sharedColumns = (encoded: ReadonlyArray<Row>): ReadonlyArray<string> | undefined => {
      const names = Object.keys(encoded[0]!)
      for (const row of encoded) {
        let n = 0
        for (const name in row) if (Object.hasOwn(row, name)) n++
        if (n !== names.length) return undefined
        for (const name of names) if (!Object.hasOwn(row, name)) return undefined
      }
      return names
    }
    /**
     * Deferred inserts (PostgreSQL, `PipelinedConnection`): the statement's text with its values
     * as literals, all rows naming the same columns; undefined where one cannot be written so.
     */
    const insertText = (encoded: ReadonlyArray<Row>): string | undefined => {
      const names = sharedColumns(encoded)
      if (names === undefined) return undefined
      const values: Array<string> = []
      for (const row of encoded) {
        const literals: Array<string> = []
        for (const name of names) {
          const value = literalOf(row[name])
          if (value === undefined) return undefined
          literals.push(value)
        }
        values.push(`(${literals.join(",")})`)
      }
      return `INSERT INTO ${quoted(table.table)} (${names.map(quoted).join(",")}) VALUES ${values.join(",")}`
    }

    /**
     * The row an insert of every declared column stores, as `RETURNING *` would answer it, where
     * that can be told without the database: each value as its column keeps it. Undefined
     * otherwise (a column left to its default, a value the column would convert).
     */
    const storedOf = (row: Row, encoded: Row): Row | undefined => {
      for (const c of columns) if (!Object.hasOwn(row, c)) return undefined
      return keptAs({}, encoded, columns)
    }

    /**
     * Each of `names`' encoded value as its declared column keeps it, written into `out`;
     * undefined where one is not a declared column or would be converted.
     */
    const keptAs = (out: Row, encoded: Row, names: ReadonlyArray<string>): Row | undefined => {
      for (const c of names) {
        const field = Object.hasOwn(table.fields, c) ? table.fields[c]! : undefined
        const v = field === undefined ? undefined : storedValue(field, encoded[c], dialect)
        if (v === undefined) return undefined
        out[c] = v
      }
      return out
    }

    /**
     * An INSERT of rows that all name the same columns, as text and parameters. The text is kept
     * per columns and number of rows: compiled on every write, it cost about as much as SQLite's
     * run of it, and the statement cache hashed a new string each time. Undefined where a row
     * names other columns than the first (the statement is compiled as usual then).
     */
    const insertTexts = new Map<string, string>()
    const insertStatement = (encoded: ReadonlyArray<Row>, returning: boolean): readonly [string, Array<unknown>] | undefined => {
      const names = sharedColumns(encoded)
      if (names === undefined) return undefined
      const params: Array<unknown> = []
      for (const row of encoded) for (const name of names) params.push(row[name])
      const key = `${encoded.length}${returning ? "*" : ""}|${names.join(",")}`
      let text = insertTexts.get(key)
      if (text === undefined) {
        let i = 0
        const placeholder = dialect === "pg" ? () => `$${++i}` : () => "?"
        const values = encoded.map(() => `(${names.map(placeholder).join(",")})`).join(",")
        text = `INSERT INTO ${quoted(table.table)} (${names.map(quoted).join(",")}) VALUES ${values}${returning ? " RETURNING *" : ""}`
        // Row counts of a batch vary; the texts kept stay few.
        if (insertTexts.size >= 200) insertTexts.clear()
        insertTexts.set(key, text)
      }
      return [text, params]
    }
    const inserted = (encoded: ReadonlyArray<Row>, returning: boolean) => {
      const made = insertStatement(encoded, returning)
      return made !== undefined
        ? executeText(sql, made[0], made[1])
        : execute(sql<Record<string, unknown>>`INSERT INTO ${t} ${sql.insert(encoded)}${sql.literal(returning ? " RETURNING *" : "")}`)
    }

    /** Many rows in one statement, nothing read back (the outbox of one change). */
    const insert = (rows: ReadonlyArray<Row>) =>
      rows.length === 0 ? Effect.void : Effect.withFiberRuntime<void, Conflict>((fiber) => {
        const encoded = rows.map(enc)
        const deferTo = deferringConnection(fiber)
        const text = deferTo && insertText(encoded)
        if (text) {
          deferTo!.defer(text)
          return Effect.void
        }
        return inserted(encoded, false).pipe(
          Effect.catchTag("SqlError", mapWriteError(table)),
          Effect.asVoid
        )
      })

    const createNow = (encoded: Row) =>
      inserted([encoded], true).pipe(
        Effect.catchTag("SqlError", mapWriteError(table)),
        Effect.map((rows) => dec(rows[0]!))
      )

    /**
     * SQLite answers `RETURNING *` with the values as inserted (its triggers cannot change them):
     * where those are known without it (see `storedOf`), the row is not read back and decoded.
     */
    const createKnown = (row: Row, encoded: Row) => {
      const stored = storedOf(row, encoded)
      if (stored === undefined) return createNow(encoded)
      return inserted([encoded], false).pipe(
        Effect.catchTag("SqlError", mapWriteError(table)),
        Effect.as(stored)
      )
    }

    /**
     * Deferred where the row stored is known without the database's answer (see `storedOf`),
     * which saves a round trip, and the decoding of the row read back.
     */
    const create = (row: Row) =>
      Effect.withFiberRuntime<Row, Conflict>((fiber) => {
        const encoded = enc(row)
        const deferTo = deferringConnection(fiber)
        if (deferTo === undefined) return dialect === "sqlite" ? createKnown(row, encoded) : createNow(encoded)
        return Effect.flatMap(tablesChangedBefore, (changed) => {
          const stored = changed === undefined || changed.insert.has(table.table) ? undefined : storedOf(row, encoded)
          const text = stored && insertText([encoded])
          if (!text) return createNow(encoded)
          deferTo.defer(text)
          return Effect.succeed(stored!)
        })
      })

    /** A write that matched nothing is a stale version when the row still exists. */
    const missed = (key: RowKey): Effect.Effect<never, NotFound | Conflict> =>
      Effect.flatMap(get(key), (row): Effect.Effect<never, NotFound | Conflict> =>
        Option.isNone(row)
          ? Effect.fail(new NotFound({ message: `No record found for id '${idOf(key)}'` }))
          : Effect.fail(
            new Conflict({
              message: `The record was changed meanwhile (version ${row.value.version}); reload it and try again`,
              errors: { version: "is not the current version" }
            })
          ))

    /** The versioned update of one row, sent at once or held back. */
    const versionedUpdate = (key: RowKey, values: Row, expectedVersion: number) =>
      sql`UPDATE ${t} SET ${sql.update(values)} WHERE ${match(key)} AND ${sql("version")} = ${expectedVersion}`

    const writeNow = (key: RowKey, values: Row, expectedVersion: number): Effect.Effect<Row, NotFound | Conflict> =>
      Effect.suspend(() => execute(sql<Record<string, unknown>>`${versionedUpdate(key, values, expectedVersion)} RETURNING *`)).pipe(
        Effect.catchTag("SqlError", mapWriteError(table)),
        Effect.flatMap((rows) => (rows.length === 0 ? missed(key) : Effect.succeed(dec(rows[0]!))))
      )

    /**
     * The row an update stores, as `RETURNING *` would answer it, where that can be told without
     * the database: the row the caller read at that version with each written value as its
     * column keeps it. Undefined otherwise.
     */
    const updatedOf = (current: Row, values: Row): Row | undefined => {
      const out: Row = {}
      for (const c of columns) {
        if (!Object.hasOwn(current, c)) return undefined
        out[c] = current[c]
      }
      return keptAs(out, values, Object.keys(values))
    }

    /** SQLite, as `createKnown`: the row the caller read with the values written, when that is known. */
    const writeKnown = (key: RowKey, values: Row, expectedVersion: number, current: Row): Effect.Effect<Row, NotFound | Conflict> => {
      const stored = updatedOf(current, values)
      if (stored === undefined) return writeNow(key, values, expectedVersion)
      return execute(sql`${versionedUpdate(key, values, expectedVersion)} RETURNING 1`).pipe(
        Effect.catchTag("SqlError", mapWriteError(table)),
        Effect.flatMap((rows) => (rows.length === 0 ? missed(key) : Effect.succeed(stored)))
      )
    }

    const staleAtCommit = () =>
      new Conflict({ message: "The record was changed or removed meanwhile; reload it and try again", errors: { version: "is not the current version" } })

    /**
     * Held back (PostgreSQL, `PipelinedConnection`) when the caller hands the row it read at that
     * version and the row stored is known without the database's answer: sent with the next
     * message, as a statement that divides by the count of rows it changed, so that a row that
     * changed or went meanwhile fails the transaction there. Saves the round trip a known user's
     * consent write spent on its update.
     */
    const write = (key: RowKey, changes: Row, expectedVersion: number, current?: Row): Effect.Effect<Row, NotFound | Conflict> =>
      Effect.withFiberRuntime<Row, NotFound | Conflict>((fiber) => {
        const values = enc({ ...changes, version: expectedVersion + 1 })
        // A row never moves to another key (another organization).
        for (const k of table.key) delete values[k]
        const known = current !== undefined && current.version === expectedVersion
        if (known && dialect === "sqlite") return writeKnown(key, values, expectedVersion, current)
        const deferTo = known ? deferringConnection(fiber) : undefined
        if (deferTo === undefined) return writeNow(key, values, expectedVersion)
        return Effect.flatMap(tablesChangedBefore, (changed) => {
          const stored = changed === undefined || changed.update.has(table.table) ? undefined : updatedOf(current!, values)
          if (stored === undefined) return writeNow(key, values, expectedVersion)
          const [text, params] = sql`${versionedUpdate(key, values, expectedVersion)} RETURNING 1`.compile()
          const inlined = inline(text, params)
          if (inlined === undefined) return writeNow(key, values, expectedVersion)
          return deferTo.checkStatement(`WITH changed AS (${inlined}) SELECT 1 / (SELECT COUNT(*) FROM changed) AS present`, staleAtCommit).pipe(
            Effect.catchTag("SqlError", mapWriteError(table)),
            Effect.as(stored)
          )
        })
      })

    const update = (key: RowKey, row: Row, expectedVersion: number) => {
      const full: Row = {}
      for (const c of columns) if (c !== "id" && c !== "created_at") full[c] = row[c] ?? null
      return write(key, full, expectedVersion)
    }

    const remove = (key: RowKey, expectedVersion?: number) => {
      const versionCheck = expectedVersion === undefined ? sql`1=1` : sql`${sql("version")} = ${expectedVersion}`
      return Effect.suspend(() =>
        execute(sql<Record<string, unknown>>`DELETE FROM ${t} WHERE ${match(key)} AND ${versionCheck} RETURNING *`)
      ).pipe(
        Unavailable.orDie,
        Effect.flatMap((rows) =>
          rows.length > 0
            ? Effect.succeed(Option.some(dec(rows[0]!)))
            : expectedVersion === undefined
            ? Effect.succeed(Option.none())
            : Effect.flatMap(get(key), (row) =>
              Option.isNone(row)
                ? Effect.succeed(Option.none<Row>())
                : Effect.fail(new Conflict({ message: "The record was changed meanwhile; reload it and try again" })))
        )
      )
    }

    const repo: Repository = { find, count, requireRow, get, create, insert, update, patch: write, remove }
    cache.set(table.table, repo)
    return repo
  }

  // Rows are decoded column by column from the table's declaration: the boundary where a
  // stored row becomes the declared row type.
  return Storage.of({ repository: <A extends Row>(table: TableDef<A>) => repository(table) as unknown as Repository<A> })
})

export const layer: Layer.Layer<Storage, never, SqlClient.SqlClient> = Layer.effect(Storage, make)
