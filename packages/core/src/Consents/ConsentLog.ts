import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scheduler from "effect/Scheduler"
import type * as Scope from "effect/Scope"
import { nowIso } from "../Engine/Clock.js"
import { type CommitWork, type Repository, type Row, Storage, type TableDef, UnitOfWork } from "../Engine/Ports.js"
import type { Condition } from "../Engine/Query.js"
import { defineTable, field } from "../Engine/Tables.js"
import { Digests, ProofFiles } from "./ProofPorts.js"

/**
 * The tamper-evident consent log. Every create, update and remove of an organization's consent
 * events, users and proofs appends, in the write's own transaction, an entry to one of the
 * organization's `SHARDS` chains: each entry's hash covers the previous entry's hash, its own
 * position and what changed, so rewriting any entry (or a row it covers) shows. A user's rows
 * all go to the chain its id picks, so concurrent writers of different users rarely wait for
 * each other, and a user's history is in one chain.
 *
 * An entry holds digests only: which row (a digest of its table, organization and id) and
 * what it became (a digest of the row's canonical JSON, or null when removed). Erasing a user
 * removes its rows and leaves entries nobody can read personal data from.
 */

export const SHARDS = 16

/** The tables whose rows the log covers, the kind an entry names them by, and the id whose chain they go to. */
export interface LoggedTable {
  readonly kind: "event" | "user" | "proof"
  readonly chainOf: (row: Row) => string
  /**
   * Columns added after rows were logged, with the value every row had before: a row holding
   * that value digests without the column, so a migration that adds one leaves the digests of
   * the rows already logged true (a verify would otherwise find every older row rewritten).
   */
  readonly addedLater?: Readonly<Record<string, unknown>>
}

export const LOGGED_TABLES: Readonly<Record<string, LoggedTable>> = {
  consent_events: { kind: "event", chainOf: (row) => String(row.user_id), addedLater: { expression_method: null, gpc: false, gpc_conflict: null, gpc_override: null } },
  consent_users: { kind: "user", chainOf: (row) => String(row.id) },
  // A proof sent with a user's event is that user's (erased with it); one made alone, its own.
  consent_proofs: { kind: "proof", chainOf: (row) => String(row.user_id ?? row.id) }
}

/** The chain of an id: FNV-1a over its UTF-16 code units, so every server picks the same one. */
export const shardOf = (chainId: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < chainId.length; i++) {
    h ^= chainId.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return (h >>> 0) % SHARDS
}

export const ConsentLogTable = defineTable("consent_log", {
  organization_id: field.string,
  shard: field.number,
  seq: field.bigint,
  created_at: field.timestamp,
  /** The canonical JSON the hash covers, kept as the exact text that was hashed. */
  changes: field.string,
  hash: field.string
}, { key: ["organization_id", "shard", "seq"] })

/** The last entry of each chain (its position, hash, text and time): the row a writer locks to append the next one. */
export const ConsentLogHeadsTable = defineTable("consent_log_heads", {
  organization_id: field.string,
  shard: field.number,
  seq: field.bigint,
  hash: field.string,
  changes: field.string,
  created_at: field.timestamp
}, { key: ["organization_id", "shard"] })

export interface LogEntry {
  readonly organization_id: string
  readonly shard: number
  readonly seq: number
  readonly created_at: string
  readonly changes: string
  readonly hash: string
}

export interface LogHead {
  readonly shard: number
  readonly seq: number
  readonly hash: string
}

/** One entry to append: its chain, its text (as hashed and kept) and time, and how its hash follows from the previous one. */
export interface LogAppend {
  readonly organizationId: string
  readonly shard: number
  readonly changes: string
  readonly at: string
  readonly link: (previous: string, seq: number) => string
}

/** A position in the log: entries are read in (shard, seq) order. */
export interface LogPosition {
  readonly shard: number
  readonly seq: number
}

/** What one change of the log says of a row, handed to a verify's scratch in log order. */
export interface NotedChange {
  readonly subject: string
  readonly shard: number
  readonly seq: number
  /** The row's digest after the change; null once removed. */
  readonly digest: string | null
  readonly kind: string
  /** Its place among the changes the verify read, from 0 in log order. */
  readonly order: number
}

/** What the log last says of a subject, and the order of the change that first named it. */
export interface LatestChange {
  readonly subject: string
  readonly shard: number
  readonly seq: number
  readonly digest: string | null
  readonly kind: string
  readonly first: number
}

/** A current row of a logged table, as a verify read it, handed to its scratch. */
export interface NotedRow {
  readonly subject: string
  readonly digest: string
  readonly table: string
  readonly id: string
  /** The chain its rows go to. */
  readonly shard: number
  /** Its place among the rows the verify read, from 0. */
  readonly order: number
}

/**
 * A subject whose rows disagree with what the log last says of it: a row and the latest change
 * with another digest (or none: a row the log never named), or a latest change that says the
 * row exists and no row (`row` null).
 */
export interface ScratchMismatch {
  readonly latest: LatestChange | null
  readonly row: NotedRow | null
}

/**
 * A verify's scratch: where it leaves what the log says of each subject, and the current rows,
 * so that it holds no more than a page of either itself. Every change and row is handed over
 * first, a batch at a time, as read; then the store compares them, a page of subjects at a time
 * (in an order of its own), and answers only what disagrees. Gone when its scope closes.
 */
export interface LogScratch {
  /** Changes in log order: a subject's later change replaces what an earlier one said, and keeps the order of its first. */
  readonly noteChanges: (changes: ReadonlyArray<NotedChange>) => Effect.Effect<void>
  /** The current rows of the logged tables. */
  readonly noteRows: (rows: ReadonlyArray<NotedRow>) => Effect.Effect<void>
  /**
   * Once every change and row is noted (nothing is noted after): the mismatches of about `limit`
   * subjects after the position `after` (undefined: from the start), and where the next page
   * starts (undefined: there is none). A position is the store's own.
   */
  readonly mismatches: (after: string | undefined, limit: number) => Effect.Effect<{
    readonly found: ReadonlyArray<ScratchMismatch>
    readonly next: string | undefined
  }>
}

/**
 * Where the log is kept (a store). `append` adds one entry to each chain it names (at most one
 * entry per chain, in the order given, which is the order chains are locked in) and answers their
 * heads in that order. It runs inside the caller's transaction and waits while another
 * transaction appends to the same chain, so a chain never forks, however many servers write.
 * `link` is the hash of an entry from the previous one; a store may compute the same value itself
 * (inside its statement) instead of calling it.
 */
export class ConsentLogStore extends Context.Tag("@cmp/core/ConsentLogStore")<
  ConsentLogStore,
  {
    readonly append: (entries: ReadonlyArray<LogAppend>) => Effect.Effect<ReadonlyArray<LogHead>>
    /**
     * `append`, from work run before a COMMIT (`UnitOfWork.beforeCommit`): the entries are part
     * of the transaction all the same, but a store may send them with the COMMIT itself instead
     * of on their own (a round trip fewer on every consent write), so it answers nothing. If they
     * cannot be appended, the transaction does not commit.
     */
    readonly appendOnCommit: (entries: ReadonlyArray<LogAppend>) => Effect.Effect<void>
    /** Entries in (shard, seq) order, after a position, of one chain or all. */
    readonly entries: (
      organizationId: string,
      options: { readonly shard?: number | undefined; readonly after?: LogPosition | undefined; readonly limit: number }
    ) => Effect.Effect<ReadonlyArray<LogEntry>>
    readonly heads: (organizationId: string) => Effect.Effect<ReadonlyArray<LogHead>>
    /** A verify's scratch, empty, for as long as the scope is open. */
    readonly scratch: Effect.Effect<LogScratch, never, Scope.Scope>
    /** Drops an organization's log (the organization is removed). */
    readonly forget: (organizationId: string) => Effect.Effect<void>
  }
>() {}

/** The hash of an entry: SHA-256 of the previous entry's hash, its sequence number and its text, each on a line. */
export const linkHash = (sha256: (s: string) => string) => (previous: string, seq: number, changes: string): string =>
  sha256(`${previous}\n${seq}\n${changes}`)

/** The head of an organization's log: SHA-256 of its chains' last hashes, in order, one per line ("" for an empty chain). */
export const headOf = (sha256: (s: string) => string, heads: ReadonlyArray<LogHead>): string => {
  const last: Array<string> = Array.from({ length: SHARDS }, () => "")
  for (const h of heads) if (h.shard >= 0 && h.shard < SHARDS) last[h.shard] = h.hash
  return sha256(last.join("\n"))
}

/** Which row an entry names: a digest of its table, organization and id (never the id itself). */
export const subjectOf = (sha256: (s: string) => string, table: string, organizationId: string, id: string): string =>
  sha256(`${table}\n${organizationId}\n${id}`)

/** What an entry says of one row. */
export interface LoggedChange {
  /** `create`, `update` or `remove`. */
  readonly a: "create" | "update" | "remove"
  /** The digest of the row's canonical JSON after the change; null once removed. */
  readonly d: string | null
  readonly k: "event" | "user" | "proof"
  readonly s: string
}

/** The text of an entry, as hashed and kept. */
export interface EntryText {
  readonly at: string
  readonly changes: ReadonlyArray<LoggedChange>
}

/** The digest a change records of a row: SHA-256 of its canonical JSON, as the store returned it. */
export const rowDigest = (digests: Context.Tag.Service<typeof Digests>, table: string, row: Row): string => {
  const later = LOGGED_TABLES[table]?.addedLater
  if (later === undefined) return digests.sha256(digests.canonicalJson(row))
  let left = false
  for (const column in later) if (Object.hasOwn(row, column) && row[column] === later[column]) left = true
  if (!left) return digests.sha256(digests.canonicalJson(row))
  // A copy without them, built whole: `delete` would turn it into a slow dictionary object.
  const digested: Record<string, unknown> = {}
  for (const column in row) {
    if (!(Object.hasOwn(later, column) && row[column] === later[column])) digested[column] = row[column]
  }
  return digests.sha256(digests.canonicalJson(digested as Row))
}

/** What an entry says of one write of a row of a logged table, and the chain it goes to. */
export const changeOf = (digests: Context.Tag.Service<typeof Digests>, table: string, a: LoggedChange["a"], row: Row) => {
  const spec = LOGGED_TABLES[table]!
  const organizationId = String(row.organization_id)
  return {
    organizationId,
    shard: shardOf(spec.chainOf(row)),
    change: {
      a,
      d: a === "remove" ? null : rowDigest(digests, table, row),
      k: spec.kind,
      s: subjectOf(digests.sha256, table, organizationId, String(row.id))
    } satisfies LoggedChange
  }
}

/** The entry of these changes to a chain: its text, as hashed and kept, and its link. */
export const entryOf = (
  digests: Context.Tag.Service<typeof Digests>,
  organizationId: string,
  shard: number,
  at: string,
  changes: ReadonlyArray<LoggedChange>
): LogAppend => {
  const text = digests.canonicalJson({ at, changes } satisfies EntryText)
  const link = linkHash(digests.sha256)
  return { organizationId, shard, changes: text, at, link: (previous, seq) => link(previous, seq, text) }
}

/** Every row of a table matching `where`, page by page in id order, handed to `f` one at a time. */
export const eachRow = <R>(table: TableDef, where: ReadonlyArray<Condition>, f: (row: Row) => Effect.Effect<void, never, R>) =>
  Effect.gen(function*() {
    const repo = (yield* Storage).repository(table)
    let after: ReadonlyArray<string> | undefined
    for (;;) {
      const page = yield* repo.find({ count: false, where, sort: [], limit: PAGE, skip: 0, keyset: { fields: ["id"], after } })
      for (const row of page.data) yield* f(row)
      if (page.data.length < PAGE) return
      after = [String(page.data[page.data.length - 1]!.id)]
      yield* betweenPages
    }
  })

/**
 * Hands the host's event loop back between two pages of a long read: the rest runs as a timer
 * task of its own, after whatever the host has waiting (other requests). A store whose reads are
 * synchronous (SQLite) would otherwise hold every other request until the last page.
 */
export const betweenPages: Effect.Effect<void> = Effect.withScheduler(Effect.yieldNow(), Scheduler.timer(0))

const PAGE = 500

/** What a write hands over to be logged when its transaction commits. */
type Handed =
  | { readonly organizationId: string; readonly shard: number; readonly change: LoggedChange }
  /** An organization removed: its log goes with it. */
  | { readonly dropped: string }

/**
 * The storage that keeps the log: wraps a store's, so that every write of a logged table, by
 * whichever use-case or cascade, is recorded, and the entries of what a transaction recorded are
 * appended just before it commits (`UnitOfWork.beforeCommit`: once for every transaction of a
 * group commit, one entry per chain they touched). A write outside a transaction gets one of
 * its own.
 */
export const layer: Layer.Layer<Storage, never, Storage | UnitOfWork | ConsentLogStore | Digests | ProofFiles> = Layer
  .effect(Storage, Effect.gen(function*() {
    const inner = yield* Storage
    const uow = yield* UnitOfWork
    const store = yield* ConsentLogStore
    const digests = yield* Digests
    const files = yield* ProofFiles

    /** The entries of what the transactions of a COMMIT handed over: on PostgreSQL, run for every consent write. */
    const append = (handed: ReadonlyArray<Handed>, dropped: ReadonlySet<string>, at: string) => {
      // One entry per chain, appended in a fixed order: two transactions touching the same
      // chains take their locks in the same order.
      const grouped = new Map<string, { organizationId: string; shard: number; changes: Array<LoggedChange> }>()
      for (const h of handed) {
        if ("dropped" in h || dropped.has(h.organizationId)) continue
        const key = `${h.organizationId}\u0000${String(h.shard).padStart(3, "0")}`
        const group = grouped.get(key)
        if (group) group.changes.push(h.change)
        else grouped.set(key, { organizationId: h.organizationId, shard: h.shard, changes: [h.change] })
      }
      if (grouped.size === 0) return Effect.void
      const keys = [...grouped.keys()].sort()
      return store.appendOnCommit(keys.map((key) => {
        const g = grouped.get(key)!
        return entryOf(digests, g.organizationId, g.shard, at, g.changes)
      }))
    }

    const entries: CommitWork<Handed> = {
      run: (handed) => {
        const dropped = new Set<string>()
        for (const h of handed) if ("dropped" in h) dropped.add(h.dropped)
        // A removed organization's log and proof bytes go with it (they are not rows that refer to it).
        const forgotten = dropped.size === 0
          ? Effect.void
          : Effect.forEach(dropped, (org) => Effect.zipRight(store.forget(org), files.forget(org)), { discard: true })
        return Effect.zipRight(forgotten, Effect.flatMap(nowIso, (at) => append(handed, dropped, at)))
      }
    }

    /**
     * Runs a write inside the open transaction, or in one of its own, and hands over what it logs.
     * The unit of work says whether one is open (it knows from the fiber's context): a marker of
     * the log's own, added to the context of every transaction, copied that context each time.
     */
    const inTransaction = <A, E>(write: Effect.Effect<A, E>, handed: (a: A) => Handed | undefined): Effect.Effect<A, E> => {
      const logged = Effect.tap(write, (a) => {
        const h = handed(a)
        return h === undefined ? Effect.void : uow.beforeCommit(entries, h)
      })
      return Effect.flatMap(uow.inTransaction, (open) => open ? logged : uow.transaction(logged))
    }

    const logged = (table: TableDef): Repository => {
      const repo = inner.repository(table)
      const change = (a: LoggedChange["a"]) => (row: Row): Handed => changeOf(digests, table.table, a, row)
      const create = (row: Row) => inTransaction(repo.create(row), change("create"))
      return {
        find: repo.find,
        count: repo.count,
        requireRow: repo.requireRow,
        get: repo.get,
        create,
        // Each row read back, so its digest is of what was stored.
        insert: (rows) => Effect.forEach(rows, create, { discard: true }),
        update: (key, row, expected) => inTransaction(repo.update(key, row, expected), change("update")),
        patch: (key, changes, expected, current) => inTransaction(repo.patch(key, changes, expected, current), change("update")),
        remove: (key, expected) =>
          inTransaction(repo.remove(key, expected), (gone) => Option.isSome(gone) ? change("remove")(gone.value) : undefined)
      }
    }

    const organizations = (table: TableDef): Repository => {
      const repo = inner.repository(table)
      return {
        ...repo,
        remove: (key, expected) =>
          inTransaction(repo.remove(key, expected), (gone) => Option.isSome(gone) ? { dropped: String(gone.value.id) } : undefined)
      }
    }

    const wrapped = new Map<string, Repository>()
    const repository = <A extends Row>(table: TableDef<A>): Repository<A> => {
      let repo = wrapped.get(table.table)
      if (repo === undefined) {
        const any = table as unknown as TableDef
        repo = Object.hasOwn(LOGGED_TABLES, table.table)
          ? logged(any)
          : table.table === "organizations"
          ? organizations(any)
          : inner.repository(any)
        wrapped.set(table.table, repo)
      }
      // Rows are the store's, decoded by the table's declaration: the wrapper only watches them.
      return repo as unknown as Repository<A>
    }

    return Storage.of({ repository })
  }))
