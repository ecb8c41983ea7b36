import {
  AttemptsTable,
  type Condition,
  DeliveriesResource,
  DeliveryQueue,
  type DeliveryRecord,
  field,
  Conflict,
  type FieldInfo,
  type FindQuery,
  type Keyset,
  NotFound,
  type Page,
  type Repository,
  type Row,
  type RowKey,
  Storage,
  SUBSCRIBER_PREFIX,
  subscriberOf,
  subscriberTarget,
  type TableDef,
  UnitOfWork,
  UsageStore
} from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as Statement from "@effect/sql/Statement"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Unavailable from "./Unavailable.js"

/**
 * One implementation of the core storage ports over `SqlClient`, for SQLite and PostgreSQL.
 * Identifiers only ever come from table declarations (the query parser has already checked
 * every field), values are always bound parameters. The dialects differ in how booleans,
 * JSON and timestamps come back, which `decodeValue` absorbs.
 */

type Dialect = "sqlite" | "pg"

const encodeValue = (dialect: Dialect, info: FieldInfo | undefined, v: unknown): unknown => {
  if (v === undefined || v === null) return null
  switch (info?.kind) {
    case "boolean":
      return dialect === "sqlite" ? (v ? 1 : 0) : Boolean(v)
    case "json":
      return JSON.stringify(v)
    case "timestamp": {
      // One canonical form (UTC, milliseconds): SQLite stores and compares timestamps as text,
      // so `+02:00` or a missing `.000` would otherwise compare by spelling, not by instant.
      if (v instanceof Date) return v.toISOString()
      const ms = typeof v === "string" ? Date.parse(v) : Number.NaN
      return Number.isNaN(ms) ? v : new Date(ms).toISOString()
    }
    default:
      return v
  }
}

const canonicalIso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

const decodeValue = (dialect: Dialect, info: FieldInfo, v: unknown): unknown => {
  if (v === null || v === undefined) return null
  switch (info.kind) {
    case "boolean":
      return v === true || v === 1 || v === "1" || v === "t" || v === "true"
    case "json":
      // SQLite keeps JSON as text; PostgreSQL's JSONB comes back already decoded, where a
      // string is a JSON string value (`"[1]"`), not JSON text to parse again.
      return dialect === "sqlite" && typeof v === "string" ? JSON.parse(v) : v
    case "timestamp":
      if (v instanceof Date) return v.toISOString()
      // SQLite hands back the canonical form it was given: no need to parse it again.
      return typeof v === "string" && canonicalIso.test(v) ? v : new Date(String(v)).toISOString()
    case "number":
      return typeof v === "number" ? v : Number(v)
    case "string":
      return String(v)
  }
}

const uniqueColumns = (error: SqlError): ReadonlyArray<string> | undefined => {
  const cause = error.cause as { code?: unknown; message?: unknown; detail?: unknown } | undefined
  const code = String(cause?.code ?? "")
  if (code === "23505") {
    const m = /Key \(([^)]+)\)/.exec(String(cause?.detail ?? ""))
    return m ? m[1]!.split(",").map((s) => s.trim().replace(/"/g, "")) : []
  }
  if (code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY") {
    const m = /constraint failed: (.*)$/.exec(String(cause?.message ?? ""))
    return m ? m[1]!.split(",").map((s) => s.trim().split(".").pop()!) : []
  }
  return undefined
}

const conflictFrom = (table: TableDef, columns: ReadonlyArray<string>) => {
  const named = columns.filter((c) => c !== "organization_id")
  const fieldName = named[named.length - 1] ?? columns[columns.length - 1] ?? "id"
  return new Conflict({
    message: `A record with this ${fieldName} already exists`,
    errors: { [fieldName]: "already exists" }
  })
}

/** Unique violations become Conflict; every other SQL failure is a defect (a 500). */
const mapWriteError = (table: TableDef) => (error: SqlError) => {
  const columns = uniqueColumns(error)
  return columns === undefined ? Unavailable.die(error) : Effect.fail(conflictFrom(table, columns))
}

export const make = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const dialect: Dialect = sql.onDialectOrElse({ pg: () => "pg" as const, orElse: () => "sqlite" as const })
  const cache = new Map<string, Repository>()

  const repository = (table: TableDef): Repository => {
    const cached = cache.get(table.table)
    if (cached) return cached
    const t = sql(table.table)
    const columns = Object.keys(table.fields)
    const col = (name: string) => {
      if (!Object.hasOwn(table.fields, name)) throw new Error(`Unknown column ${table.table}.${name}`)
      return sql(name)
    }
    const enc = (row: Row): Row => {
      const out: Row = {}
      for (const [k, v] of Object.entries(row)) {
        if (Object.hasOwn(table.fields, k)) out[k] = encodeValue(dialect, table.fields[k], v)
      }
      return out
    }
    const dec = (raw: Record<string, unknown>): Row => {
      const out: Row = {}
      for (const c of columns) out[c] = decodeValue(dialect, table.fields[c]!, raw[c])
      return out
    }
    const param = (field: string, v: unknown) => encodeValue(dialect, table.fields[field], v)

    const compare = { eq: "=", ne: "<>", lt: "<", lte: "<=", gt: ">", gte: ">=" } as const
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
      }
    }
    const conjunction = (where: ReadonlyArray<Condition>): Statement.Fragment =>
      where.length === 0 ? sql`1=1` : sql.and(where.map(condition))

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

    const count = (where: ReadonlyArray<Condition>) => countWhere(conjunction(where))
    const countWhere = (where: Statement.Fragment) =>
      sql<{ total: unknown }>`SELECT COUNT(*) AS total FROM ${t} WHERE ${where}`.pipe(
        Effect.map((rows) => Number(rows[0]?.total ?? 0)),
        Unavailable.orDie
      )

    const find = (q: FindQuery) =>
      Effect.gen(function*() {
        const where = filter(q)
        const skip = q.keyset ? 0 : q.skip
        // An unordered look-up (one row by a unique key) saves SQLite a sorter per call.
        const order = q.keyset
          ? sql`ORDER BY ${sql.csv(q.keyset.fields.map((f) => sql`${col(f)} ASC`))}`
          : q.ordered === false
          ? sql``
          : sql`ORDER BY ${orderBy(q)}`
        const rows = q.limit === 0
          ? []
          : yield* sql<Record<string, unknown>>`SELECT * FROM ${t} WHERE ${where} ${order} LIMIT ${q.limit} OFFSET ${skip}`
        const total = q.count === false ? skip + rows.length : yield* countWhere(where)
        return { total, limit: q.limit, skip, data: rows.map(dec) } satisfies Page<Row>
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
      Effect.suspend(() => sql<Record<string, unknown>>`SELECT * FROM ${t} WHERE ${match(key)}`).pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), dec)),
        Unavailable.orDie
      )

    /** Many rows in one statement, nothing read back (the outbox of one change). */
    const insert = (rows: ReadonlyArray<Row>) =>
      rows.length === 0
        ? Effect.void
        : sql`INSERT INTO ${t} ${sql.insert(rows.map(enc))}`.pipe(
          Effect.catchTag("SqlError", mapWriteError(table)),
          Effect.asVoid
        )

    const create = (row: Row) =>
      sql<Record<string, unknown>>`INSERT INTO ${t} ${sql.insert(enc(row))} RETURNING *`.pipe(
        Effect.catchTag("SqlError", mapWriteError(table)),
        Effect.map((rows) => dec(rows[0]!))
      )

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

    const write = (key: RowKey, changes: Row, expectedVersion: number): Effect.Effect<Row, NotFound | Conflict> =>
      Effect.suspend(() => {
        const values = enc({ ...changes, version: expectedVersion + 1 })
        // A row never moves to another key (another organization).
        for (const k of table.key) delete values[k]
        return sql<Record<string, unknown>>`UPDATE ${t} SET ${sql.update(values)} WHERE ${match(key)} AND ${
          sql("version")
        } = ${expectedVersion} RETURNING *`
      }).pipe(
        Effect.catchTag("SqlError", mapWriteError(table)),
        Effect.flatMap((rows) => (rows.length === 0 ? missed(key) : Effect.succeed(dec(rows[0]!))))
      )

    const update = (key: RowKey, row: Row, expectedVersion: number) => {
      const full: Row = {}
      for (const c of columns) if (c !== "id" && c !== "created_at") full[c] = row[c] ?? null
      return write(key, full, expectedVersion)
    }

    const remove = (key: RowKey, expectedVersion?: number) => {
      const versionCheck = expectedVersion === undefined ? sql`1=1` : sql`${sql("version")} = ${expectedVersion}`
      return Effect.suspend(() =>
        sql<Record<string, unknown>>`DELETE FROM ${t} WHERE ${match(key)} AND ${versionCheck} RETURNING *`
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

    const repo: Repository = { find, count, get, create, insert, update, patch: write, remove }
    cache.set(table.table, repo)
    return repo
  }

  const plainTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Unavailable.classifyTransaction(sql.withTransaction(effect)) as Effect.Effect<A, E, R>

  /**
   * Group commit (SQLite): SQLite runs one write transaction at a time, and most of a small
   * transaction's cost is its COMMIT writing the same index pages again. Transactions that queue
   * up while one runs are run together, each in its own savepoint (a failing one rolls back
   * alone), under one COMMIT. Each caller hears its own outcome only after that COMMIT, so
   * nothing is acknowledged before it is durable. Each body runs with its caller's fiber refs
   * (clock, log annotations) and context, plus the batch's connection.
   */
  interface Waiting {
    readonly effect: Effect.Effect<unknown, unknown, never>
    readonly refs: FiberRefs.FiberRefs
    readonly done: Deferred.Deferred<unknown, unknown>
  }
  const waiting = dialect === "sqlite" ? yield* Queue.unbounded<Waiting>() : undefined

  const runBatch = (batch: ReadonlyArray<Waiting>) =>
    Effect.gen(function*() {
      const exits: Array<Exit.Exit<unknown, unknown>> = []
      const outcome = yield* Effect.exit(plainTransaction(Effect.gen(function*() {
        const tx = Option.getOrThrow(yield* Effect.serviceOption(SqlClient.TransactionConnection))
        const own = yield* Effect.getFiberRefs
        for (const item of batch) {
          yield* Effect.setFiberRefs(item.refs)
          const context = Context.add(FiberRefs.getOrDefault(item.refs, FiberRef.currentContext), SqlClient.TransactionConnection, tx)
          const exit = yield* Effect.exit(Effect.locally(plainTransaction(item.effect), FiberRef.currentContext, context))
          yield* Effect.setFiberRefs(own)
          exits.push(exit)
          // A database error (disk full, I/O) may have ended the whole transaction in SQLite:
          // the rest of the batch must not run outside it. They wait for the next batch.
          if (exit._tag === "Failure" && Cause.isDie(exit.cause)) break
        }
      })))
      for (let i = 0; i < exits.length; i++) {
        const exit = exits[i]!
        // A failed COMMIT loses every write of the batch: each caller hears that failure.
        yield* Deferred.done(batch[i]!.done, outcome._tag === "Failure" && exit._tag === "Success" ? outcome : exit)
      }
      const rest = batch.slice(exits.length)
      // Nothing ran (BEGIN failed): each caller hears why. Otherwise the rest runs next time.
      if (exits.length === 0 && outcome._tag === "Failure") {
        for (const item of rest) yield* Deferred.done(item.done, outcome)
      } else if (rest.length > 0) yield* Queue.offerAll(waiting!, rest)
    })

  // After the first arrival, one turn of the event loop lets work already received join a batch.
  const nextTurn = Effect.async<void>((resume) => {
    const handle = setImmediate(() => resume(Effect.void))
    return Effect.sync(() => clearImmediate(handle))
  })
  /** Runs `run` on everything queued, at most `max` at a time, for as long as the store lives. */
  const drainInBatches = <A>(queue: Queue.Queue<A>, max: number, run: (batch: ReadonlyArray<A>) => Effect.Effect<void>) =>
    Effect.forkScoped(Effect.forever(
      Queue.take(queue).pipe(
        Effect.zipLeft(nextTurn),
        Effect.flatMap((first) => Effect.map(Queue.takeUpTo(queue, max - 1), (rest) => [first, ...rest])),
        Effect.flatMap(run)
      )
    ))

  if (waiting) {
    yield* drainInBatches(waiting, 64, runBatch)
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Queue.takeAll(waiting), (left) => Effect.forEach(left, (item) => Deferred.interrupt(item.done), { discard: true }))
    )
  }

  const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
    if (!waiting) return plainTransaction(effect)
    return Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (inside) =>
      // Already inside a transaction: a savepoint, as before.
      Option.isSome(inside) ? plainTransaction(effect) : Effect.withFiberRuntime<A, E, R>((fiber) => {
        const done = Deferred.unsafeMake<unknown, unknown>(fiber.id())
        const item: Waiting = { effect: effect as Effect.Effect<unknown, unknown, never>, refs: fiber.getFiberRefs(), done }
        return Effect.zipRight(Queue.offer(waiting, item), Deferred.await(done)) as Effect.Effect<A, E, R>
      }))
  }

  // SQLite runs one transaction at a time already; PostgreSQL needs a transaction-scoped lock.
  const lock = (key: string): Effect.Effect<void> =>
    sql.onDialectOrElse({
      pg: () => sql`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0))`.pipe(Effect.asVoid, Unavailable.orDie),
      orElse: () => Effect.void
    })

  const usage = {
    add: (organizationId: string, period: string, n: number) =>
      sql<{ count: unknown }>`INSERT INTO api_usage (organization_id, period, count) VALUES (${organizationId}, ${period}, ${n})
        ON CONFLICT (organization_id, period) DO UPDATE SET count = api_usage.count + excluded.count
        RETURNING count`.pipe(Effect.map((rows) => Number(rows[0]?.count ?? n)), Unavailable.orDie),
    get: (organizationId: string, period: string) =>
      sql<{ count: unknown }>`SELECT count FROM api_usage WHERE organization_id = ${organizationId} AND period = ${period}`.pipe(
        Effect.map((rows) => Number(rows[0]?.count ?? 0)),
        Unavailable.orDie
      )
  }

  const attempts = repository(AttemptsTable)
  const deliveryRow = (raw: Record<string, unknown>) => {
    const out: Row = {}
    for (const [k, info] of Object.entries(DeliveriesResource.tableDef.fields)) out[k] = decodeValue(dialect, info, raw[k])
    return out as unknown as DeliveryRecord
  }
  // Concurrent claimers on PostgreSQL skip each other's rows instead of waiting or doubling up;
  // SQLite has one writer at a time already.
  const skipLocked = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE SKIP LOCKED"), orElse: () => sql.literal("") })

  /**
   * A dispatcher finishes many messages at once (32 calls in flight): their attempts and moves
   * are written together, one transaction per turn of the event loop instead of one each, which
   * saves PostgreSQL three round trips per message. Each caller still hears whether its own
   * message moved; if the transaction fails, every caller of the batch hears the failure (the
   * messages stay leased and are tried again when the lease ends).
   */
  type Completion = Parameters<DeliveryQueue["Type"]["complete"]>[0]
  const completions = yield* Queue.unbounded<{ readonly completion: Completion; readonly done: Deferred.Deferred<boolean> }>()
  const completeBatch = (batch: ReadonlyArray<{ readonly completion: Completion; readonly done: Deferred.Deferred<boolean> }>) =>
    Effect.exit(transaction(Effect.gen(function*() {
      yield* Unavailable.orDie(attempts.insert(batch.map((b) => ({ ...b.completion.attempt }))))
      const moved = new Set<unknown>()
      if (dialect === "pg") {
        // One statement for the whole batch: each statement is a round trip on PostgreSQL.
        const values = sql.csv(batch.map(({ completion: { id, now, outcome, workerId } }) =>
          sql`(${id}, ${workerId}, ${outcome.status}, ${outcome.attempts_count}, ${outcome.next_attempt_at}, ${outcome.last_status_code}, ${now})`
        ))
        const rows = yield* sql<{ id: unknown }>`UPDATE webhook_deliveries AS d
          SET status = v.status, attempts_count = v.attempts_count::int,
              next_attempt_at = v.next_attempt_at::timestamptz, last_status_code = v.last_status_code::int,
              lease_until = NULL, leased_by = NULL, updated_at = v.now::timestamptz, version = d.version + 1
          FROM (VALUES ${values}) AS v (id, worker, status, attempts_count, next_attempt_at, last_status_code, now)
          WHERE d.id = v.id AND d.leased_by = v.worker AND d.status = 'delivering'
          RETURNING d.id`.pipe(Unavailable.orDie)
        for (const r of rows) moved.add(r.id)
      } else {
        for (const { completion: { id, now, outcome, workerId } } of batch) {
          const rows = yield* sql<{ id: unknown }>`UPDATE webhook_deliveries
            SET status = ${outcome.status}, attempts_count = ${outcome.attempts_count},
                next_attempt_at = ${outcome.next_attempt_at}, last_status_code = ${outcome.last_status_code},
                lease_until = NULL, leased_by = NULL, updated_at = ${now}, version = version + 1
            WHERE id = ${id} AND leased_by = ${workerId} AND status = 'delivering'
            RETURNING id`.pipe(Unavailable.orDie)
          for (const r of rows) moved.add(r.id)
        }
      }
      return batch.map((b) => moved.has(b.completion.id))
    }))).pipe(
      Effect.flatMap((exit) =>
        Effect.forEach(batch, (b, i) =>
          Deferred.done(b.done, exit._tag === "Success" ? Exit.succeed(exit.value[i]!) : Exit.failCause(exit.cause)), { discard: true })
      )
    )
  yield* drainInBatches(completions, 200, completeBatch)

  /**
   * The messages this process may take: every webhook's, and an in-process subscriber's only
   * when this process has its handler (`webhook_id` is `subscriber:<name>`).
   */
  const claimable = (subscribers: ReadonlyArray<string> | undefined) => {
    const ids = (subscribers ?? []).map(subscriberTarget)
    return ids.length > 0
      ? sql`(webhook_id NOT LIKE ${`${SUBSCRIBER_PREFIX}%`} OR webhook_id IN ${sql.in(ids)})`
      : sql`webhook_id NOT LIKE ${`${SUBSCRIBER_PREFIX}%`}`
  }

  const queue = DeliveryQueue.of({
    claim: ({ leaseUntil, limit, now, subscribers, workerId }) =>
      sql<Record<string, unknown>>`UPDATE webhook_deliveries
        SET status = 'delivering', lease_until = ${leaseUntil}, leased_by = ${workerId}, version = version + 1
        WHERE id IN (
          SELECT id FROM webhook_deliveries
          WHERE ((status = 'pending' AND next_attempt_at <= ${now}) OR (status = 'delivering' AND lease_until <= ${now}))
            AND ${claimable(subscribers)}
          ORDER BY next_attempt_at ASC
          LIMIT ${limit}
          ${skipLocked}
        )
        RETURNING *`.pipe(Effect.map((rows) => rows.map(deliveryRow)), Unavailable.orDie),
    complete: (completion) =>
      Effect.flatMap(Deferred.make<boolean>(), (done) =>
        Effect.zipRight(Queue.offer(completions, { completion, done }), Deferred.await(done))),
    nextDueAt: (options) => {
      const handled = new Set((options?.subscribers ?? []).map(subscriberTarget))
      const mine = (webhookId: string) => subscriberOf(webhookId) === undefined || handled.has(webhookId)
      return Effect.gen(function*() {
        // The earliest pending message is one read of the due index. Only when it belongs to a
        // subscriber this process does not handle is the filtered minimum needed, which reads
        // every pending row's webhook_id.
        const [first] = yield* sql<{ t: unknown; webhook_id: string }>`SELECT next_attempt_at AS t, webhook_id
          FROM webhook_deliveries WHERE status = 'pending' ORDER BY next_attempt_at ASC LIMIT 1`
        const pending = first === undefined
          ? []
          : mine(first.webhook_id)
          ? [first.t]
          : (yield* sql<{ t: unknown }>`SELECT MIN(next_attempt_at) AS t FROM webhook_deliveries
              WHERE status = 'pending' AND ${claimable(options?.subscribers)}`).map((r) => r.t)
        // Messages in flight are few (a lease per call in flight): their scan is short.
        const leases = yield* sql<{ t: unknown }>`SELECT MIN(lease_until) AS t FROM webhook_deliveries
          WHERE status = 'delivering' AND ${claimable(options?.subscribers)}`
        const due = [...pending, ...leases.map((r) => r.t)]
          .filter((t) => t !== null && t !== undefined)
          .map((t) => decodeValue(dialect, field.timestamp, t) as string)
          .sort()
        return Option.fromNullable(due[0])
      }).pipe(Unavailable.orDie)
    }
  })

  return {
    // Rows are decoded column by column from the table's declaration: the boundary where a
    // stored row becomes the declared row type.
    storage: Storage.of({ repository: <A extends Row>(table: TableDef<A>) => repository(table) as unknown as Repository<A> }),
    unitOfWork: UnitOfWork.of({ transaction, lock }),
    usage: UsageStore.of(usage),
    queue
  }
})

/** The three storage ports over whatever `SqlClient` is provided. */
export const layer: Layer.Layer<Storage | UnitOfWork | UsageStore | DeliveryQueue, never, SqlClient.SqlClient> = Layer.scopedContext(
  Effect.map(make, ({ queue, storage, unitOfWork, usage }) =>
    Context.make(Storage, storage).pipe(
      Context.add(UnitOfWork, unitOfWork),
      Context.add(UsageStore, usage),
      Context.add(DeliveryQueue, queue)
    ))
)
