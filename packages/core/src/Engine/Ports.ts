import { uuidV7 } from "./Random.js"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Option from "effect/Option"
import type { Conflict, NotAuthenticated, NotFound } from "../Domain/Errors.js"
import type { FieldInfo } from "./Fields.js"
import type { Condition, FindQuery, SortKey } from "./Query.js"
import { ChangeFeed } from "./ChangeFeed.js"
import { withService } from "./Services.js"

/** A stored record: column name → core value (string, number, boolean, null, or JSON). */
export type Row = Record<string, unknown>

/** A secondary index, by the name the migrations gave it. */
export interface IndexDef {
  readonly name: string
  readonly columns: ReadonlyArray<string>
  /** A partial index: only the rows that match this condition (as the migration wrote it) have an entry. */
  readonly where?: string
  /** The one database that has it, for an index only that database's planner needs. */
  readonly only?: "pg" | "sqlite"
}

/**
 * A column naming a row of another table (by its id), and what removing that row does here.
 * Where the referenced table is keyed by organization, the reference stays inside the
 * organization of the row that holds it.
 */
export interface Relation {
  readonly field: string
  readonly table: string
  readonly onDelete: "cascade" | "set-null"
}

/** What a store needs to know about a table: its name, columns, keys, indexes and relations. */
export interface TableDef<A extends Row = Row> {
  readonly table: string
  readonly fields: Readonly<Record<string, FieldInfo>>
  /**
   * The primary key: `["id"]`, or `["organization_id", "id"]` where an id is chosen by the
   * client and only unique within its organization (consent events and users).
   */
  readonly key: ReadonlyArray<string>
  /** Column sets that are unique, used to name the field in a Conflict. */
  readonly unique: ReadonlyArray<ReadonlyArray<string>>
  /** Secondary indexes the store keeps (checked against the database by the schema contract). */
  readonly indexes: ReadonlyArray<IndexDef>
  /** The rows this table's rows refer to; the engine runs their on-delete behaviour. */
  readonly references: ReadonlyArray<Relation>
  /** The type of a row, for the compiler only: a store decodes rows of exactly these columns. */
  readonly "~row"?: A
  /** Applied after the query's own sort; the store always ends with `id` for stable paging. */
  readonly defaultSort: ReadonlyArray<SortKey>
}

export interface Page<A> {
  readonly total: number
  readonly limit: number
  readonly skip: number
  readonly data: ReadonlyArray<A>
}

/**
 * A row's primary key: its id, or, in a table keyed by organization (`TableDef.key`), its
 * organization and id. A bare id on such a table is a defect: it could name two rows.
 */
export type RowKey = string | { readonly organization_id: string; readonly id: string }

/**
 * The generic repository of one resource kind. Every record has `id` and `version`;
 * writes are conditional on the expected version, so of two concurrent writers exactly one
 * wins and the other gets `Conflict`. Infrastructure failures are defects.
 */
export interface Repository<A extends Row = Row> {
  readonly find: (query: FindQuery) => Effect.Effect<Page<A>>
  readonly count: (where: ReadonlyArray<Condition>) => Effect.Effect<number>
  /**
   * Fails with `missing()` unless a row matches. Inside a transaction, a store may check it with
   * the transaction's next statement or its COMMIT rather than wait for the answer (PostgreSQL:
   * a round trip saved); the transaction then fails with `missing()`, and nothing of it commits.
   */
  readonly requireRow: <E>(where: ReadonlyArray<Condition>, missing: () => E) => Effect.Effect<void, E>
  readonly get: (key: RowKey) => Effect.Effect<Option.Option<A>>
  readonly create: (row: A) => Effect.Effect<A, Conflict>
  /** Writes many rows at once and reads nothing back (an outbox of messages). */
  readonly insert: (rows: ReadonlyArray<A>) => Effect.Effect<void, Conflict>
  /** Replaces every column but the key and `created_at` with the given row; bumps `version`. */
  readonly update: (key: RowKey, row: A, expectedVersion: number) => Effect.Effect<A, NotFound | Conflict>
  /**
   * Writes only the given columns (never the key); bumps `version`. With `current`, the row at
   * `expectedVersion` as the caller read it in the same transaction, a store may hold the write
   * back until its next message and answer the row it will store: a row that changed or went
   * meanwhile then fails the transaction with a Conflict at that message (not a NotFound).
   */
  readonly patch: (key: RowKey, changes: Partial<A>, expectedVersion: number, current?: A) => Effect.Effect<A, NotFound | Conflict>
  readonly remove: (key: RowKey, expectedVersion?: number) => Effect.Effect<Option.Option<A>, Conflict>
}

/** The key of a stored row in its table. */
export const keyOf = <A extends Row>(table: TableDef<A>, row: A): RowKey =>
  table.key.length === 1
    ? row.id as string
    : { organization_id: row.organization_id as string, id: row.id as string }

export class Storage extends Context.Tag("@cmp/core/Storage")<
  Storage,
  { readonly repository: <A extends Row>(table: TableDef<A>) => Repository<A> }
>() {}

/**
 * Work that transactions hand values to, run once per COMMIT with every value handed over by the
 * transactions that commit together (see `UnitOfWork.beforeCommit`). Known by identity: make one
 * and keep it.
 */
export interface CommitWork<T> {
  readonly run: (values: ReadonlyArray<T>) => Effect.Effect<void>
}

/** Runs an effect atomically: every write inside commits together or not at all. */
export class UnitOfWork extends Context.Tag("@cmp/core/UnitOfWork")<
  UnitOfWork,
  {
    readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
    /**
     * Inside a transaction: keeps `value` for `work`, whose `run` gets it, with the values of
     * the other transactions committed with this one, inside the transaction just before its
     * COMMIT. A value handed over in a savepoint that rolls back is dropped with it; a `run` that
     * fails fails the COMMIT. A store that commits many transactions at once (a group
     * commit) calls each `run` once for all of them, which is what makes the work cheaper there
     * than doing it in each. Outside a transaction, `run` gets the value at once.
     */
    readonly beforeCommit: <T>(work: CommitWork<T>, value: T) => Effect.Effect<void>
    /**
     * Inside a transaction of this unit of work: keeps `value` for `work`, whose `run` gets it,
     * with the values of the other transactions committed with this one, once their COMMIT
     * succeeded, outside the transaction and before their callers hear of it. A value handed
     * over in a savepoint that rolls back is dropped with it, and so is every value of a
     * transaction that does not commit (one run again alone after its group rolled back hands
     * over again in that run). A `run` must not fail: the COMMIT is done. Answers whether it
     * kept the value: false outside a transaction this unit of work began, where nothing is kept
     * and the caller does without.
     */
    readonly afterCommit: <T>(work: CommitWork<T>, value: T) => Effect.Effect<boolean>
    /**
     * Inside a transaction: waits until no other transaction holds the same key, and holds it
     * until this one ends, so a read-then-write on that key (a count against a quota) is not
     * interleaved with another. A store whose transactions are already serial may do nothing.
     */
    readonly lock: (key: string) => Effect.Effect<void>
    /**
     * Whether the fiber runs inside a transaction: one of this unit of work, or one begun on its
     * client directly. A write there commits with that transaction, and work handed to
     * `beforeCommit` joins it; outside, a write that must commit with its bookkeeping opens one.
     * Read off the fiber's context, so asking costs nothing a write would notice.
     */
    readonly inTransaction: Effect.Effect<boolean>
  }
>() {}

/** Request counters per organization and period (the `api_requests` quota). */
export class UsageStore extends Context.Tag("@cmp/core/UsageStore")<
  UsageStore,
  {
    /** Adds `count` and returns the new total of that period. */
    readonly add: (organizationId: string, period: string, count: number) => Effect.Effect<number>
    readonly get: (organizationId: string, period: string) => Effect.Effect<number>
  }
>() {}

/**
 * A host's own migration, for the tables of the resources it declares: SQL statements run in
 * order, the same on every store, or one list per store where their SQL differs.
 */
export type HostMigration =
  | ReadonlyArray<string>
  | { readonly sqlite: ReadonlyArray<string>; readonly postgres: ReadonlyArray<string> }

/**
 * Runs a host's migrations after the store's own: each once, in the order of their names
 * (`0001_loyalty_preferences`), recorded apart from the store's so that both lists can grow.
 */
export class HostMigrator extends Context.Tag("@cmp/core/HostMigrator")<
  HostMigrator,
  { readonly migrate: (migrations: Readonly<Record<string, HostMigration>>) => Effect.Effect<void> }
>() {}

/** Identifier source; tests replace it to get predictable ids. */
export class Ids extends Context.Tag("@cmp/core/Ids")<Ids, { readonly next: Effect.Effect<string> }>() {
  /** Time-ordered UUIDs (version 7): unique like v4, and kind to the primary-key index. */
  static readonly Live = Layer.succeed(Ids, { next: Effect.sync(() => uuidV7(Date.now())) })
}

/** A new id from the `Ids` port. */
export const nextId: Effect.Effect<string, never, Ids> = withService(Ids, (ids) => ids.next)

/** One-way hashing of secrets and passwords, compared in constant time. */
export class SecretHasher extends Context.Tag("@cmp/core/SecretHasher")<
  SecretHasher,
  {
    readonly hash: (secret: string) => Effect.Effect<string>
    readonly verify: (secret: string, hash: string) => Effect.Effect<boolean>
  }
>() {}

/**
 * Compares a secret a caller sent with the one expected in constant time: how long it takes
 * tells neither how much of a guess matched nor how long the expected one is.
 */
export class SecretComparer extends Context.Tag("@cmp/core/SecretComparer")<
  SecretComparer,
  { readonly equals: (given: string, expected: string) => Effect.Effect<boolean> }
>() {}

export type TokenKind = "operator" | "client" | "member" | "integration"

export interface TokenClaims {
  /** The API key id, or the person id of a member. */
  readonly sub: string
  readonly kind: TokenKind
  /** The organization of an API key. */
  readonly org?: string | undefined
  readonly iat: number
  readonly exp: number
}

/**
 * Who minted a consent token: a client's API key, an operator's, a platform integration, a
 * member (its person), or the host's own in-process calls. The token dies with it.
 */
export type ConsentTokenIssuerKind = "client" | "operator" | "integration" | "member" | "host"
export interface ConsentTokenIssuer {
  readonly kind: ConsentTokenIssuerKind
  readonly id: string
}

/**
 * What a consent token says: one end user (`sub`, the organization's own user id) of one
 * organization, what its events carry, its id (`jti`, named as the source of its events) and
 * who minted it (`issuer`; absent from tokens minted before tokens named it, which are refused).
 */
export interface ConsentTokenClaims {
  readonly jti: string
  readonly org: string
  readonly sub: string
  readonly iat: number
  readonly exp: number
  readonly issuer?: ConsentTokenIssuer | undefined
  readonly metadata?: Readonly<Record<string, unknown>> | undefined
  readonly delegate?: Readonly<Record<string, unknown>> | undefined
}

/**
 * Signs and verifies access tokens and consent tokens; `now` comes from the caller so tests
 * drive time. A consent token has an audience of its own: `verify` never accepts one as an
 * access token, nor `verifyConsent` an access token as a consent token.
 */
export class TokenIssuer extends Context.Tag("@cmp/core/TokenIssuer")<
  TokenIssuer,
  {
    readonly issue: (claims: TokenClaims) => Effect.Effect<string>
    readonly verify: (token: string, nowSeconds: number) => Effect.Effect<TokenClaims, NotAuthenticated>
    readonly issueConsent: (claims: ConsentTokenClaims) => Effect.Effect<string>
    readonly verifyConsent: (token: string, nowSeconds: number) => Effect.Effect<ConsentTokenClaims, NotAuthenticated>
  }
>() {}

/** HMAC-SHA256 over text, the digest compared in constant time (signed user ids). */
export class Hmac extends Context.Tag("@cmp/core/Hmac")<
  Hmac,
  {
    /** Whether `digest` (hex) is the HMAC-SHA256 of `message` keyed with `key`, both UTF-8. */
    readonly verifySha256Hex: (key: string, message: string, digest: string) => Effect.Effect<boolean>
  }
>() {}

/** The change feed's topic on which a process that delivers nothing rings the others' dispatchers. */
export const OUTBOX_TOPIC = "outbox"

/**
 * A write's hooks may have committed outbox messages (webhook events, mail): every committed
 * write rings this, and whatever delivers them in this process looks at once; a process that
 * delivers nothing rings the others (`ringing`).
 */
export class OutboxSignal extends Context.Tag("@cmp/core/OutboxSignal")<OutboxSignal, { readonly notify: Effect.Effect<void> }>() {
  /** No dispatcher in this process, nor any to tell: another process polls the outbox. */
  static readonly None = Layer.succeed(OutboxSignal, { notify: Effect.void })
  /**
   * No dispatcher in this process: the other processes' are rung through the store's change
   * feed (coalesced, after the commit), where it carries news, instead of waiting for their poll.
   */
  static readonly ringing: Layer.Layer<OutboxSignal, never, ChangeFeed> = Layer.effect(
    OutboxSignal,
    Effect.map(ChangeFeed, (feed) => ({ notify: feed.ring(OUTBOX_TOPIC) }))
  )
}

/** Tells this process's dispatcher that messages were committed. */
export const signalOutbox: Effect.Effect<void, never, OutboxSignal> = withService(OutboxSignal, (s) => s.notify)

/**
 * While its scope is open, what another process rings on the outbox's topic wakes this
 * process's dispatcher (the `OutboxSignal` given), which otherwise would see the messages only
 * at its next poll.
 */
export const wakeOnOtherOutboxes: Layer.Layer<never, never, ChangeFeed | OutboxSignal> = Layer.scopedDiscard(
  Effect.flatMap(Effect.context<OutboxSignal>(), (context) =>
    Effect.flatMap(ChangeFeed, (feed) => feed.listen(OUTBOX_TOPIC, () => Effect.provide(signalOutbox, context))))
)
