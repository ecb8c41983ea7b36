import type { Conflict } from "@cmp/core"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Stream from "effect/Stream"
import { literal } from "./CommitTail.js"

/**
 * A PostgreSQL transaction's connection that holds back what needs no answer yet and sends it in
 * the message of the next statement that does, as one multi-statement query. On these machines a
 * round trip costs the server process far more CPU than the statements in it (a socket write, a
 * read and the driver's handling of each message): a consent event was seven of them.
 *
 * - `BEGIN` waits for the transaction's first statement (a transaction that runs none sends
 *   nothing).
 * - A write whose outcome the caller can know without an answer (an insert of a whole row) is
 *   deferred (`defer`): sent before the next statement, or with the COMMIT.
 * - A statement sent while something is held back has its parameters written as literals (the
 *   only way a multi-statement message can carry them) where its text allows it; otherwise what
 *   is held back goes first, in a message of its own.
 *
 * A deferred write that fails (a unique key taken meanwhile) aborts the transaction in
 * PostgreSQL, as it did when sent alone, and is reported by the statement whose message carried
 * it: the transaction then fails with that write's `Conflict` (`failure`), whatever the
 * statement that carried it would have answered. Nothing after a failed statement of a
 * transaction could commit anyway, so only when the failure is reported moves.
 *
 * A check (`check`: a row the transaction needs must exist) is deferred the same way: a count
 * that divides by itself, so that a missing row is an error that aborts the transaction where it
 * stands, before anything after it (the COMMIT included) runs. The transaction then fails with
 * the check's own failure.
 */
export class PipelinedConnection implements Connection {
  /** Statements held back, in order: the transaction begins with its first statement. */
  private pending: Array<string> = ["BEGIN"]
  /** How many of `pending` are deferred writes and checks (the rest: the BEGIN). */
  private deferred = 0
  /** The failures of the checks held back, in order. */
  private checks: Array<() => unknown> = []
  /** Whether the BEGIN has been sent (with whatever followed it). */
  private begun = false
  /**
   * The failure of a deferred write or check, once a message that carried one failed with it:
   * a write's Conflict, or a check's own failure.
   */
  failure: unknown = undefined
  /** A statement failed: PostgreSQL has aborted the transaction, and nothing more of it runs. */
  aborted = false
  /** Messages sent so far. */
  private sends = 0
  /** Writes held back or sent so far, and how many of `pending` are writes. */
  private writes = 0
  private pendingWrites = 0

  constructor(
    readonly inner: Connection,
    /** The Conflict a write's failure is, if it is one. */
    private readonly conflictOf: (error: SqlError) => Conflict | undefined,
    /**
     * Whether a message may carry several checks. A failed one then cannot be named, so only a
     * caller for whom any failed statement means the same (a group commit, which runs its
     * transactions again alone) allows it.
     */
    private readonly checksTogether = false
  ) {}

  /** Holds back a write whose outcome the caller already knows; a failure is reported later. */
  defer(text: string): void {
    this.pending.push(text)
    this.deferred++
    this.writes++
    this.pendingWrites++
  }

  /**
   * Where the work of one of several transactions run in this one begins (a group commit): what
   * is held back then, and how much has been written and sent.
   */
  mark(): Mark {
    return { pending: this.pending.length, deferred: this.deferred, checks: this.checks.length, sends: this.sends, writes: this.writes, pendingWrites: this.pendingWrites }
  }

  /** How many writes made since `mark` have reached the database (and so cannot just be dropped). */
  writesSentSince(mark: Mark): number {
    const held = this.sends === mark.sends ? this.pendingWrites - mark.pendingWrites : this.pendingWrites
    return this.writes - mark.writes - held
  }

  /**
   * Drops what was held back since `mark`, none of which was sent: what is held back now came
   * after the mark, or after the last message if one went since.
   */
  dropSince(mark: Mark): void {
    if (this.sends === mark.sends) {
      this.pending.length = mark.pending
      this.deferred = mark.deferred
      this.checks.length = mark.checks
      this.pendingWrites = mark.pendingWrites
    } else {
      this.pending = []
      this.deferred = 0
      this.checks = []
      this.pendingWrites = 0
    }
  }

  /** Counts a message about to be sent, carrying `text` last (a write unless it only reads). */
  private sending(text: string | undefined): void {
    this.sends++
    if (text !== undefined && !reads(text)) this.writes++
  }

  /** A failed statement aborts the transaction. */
  private readonly abort = Effect.sync(() => {
    this.aborted = true
  })

  /** A statement sent as it comes, counted, its failure noted. */
  private direct<A>(text: string, effect: Effect.Effect<A, SqlError>): Effect.Effect<A, SqlError> {
    this.sending(text)
    return Effect.tapError(effect, () => this.abort)
  }

  /**
   * Holds back a check that fails the transaction with `missing()` unless a row matches: `count`
   * is a statement answering one count (`SELECT COUNT(*) FROM … WHERE …`).
   */
  check(count: string, missing: () => unknown): Effect.Effect<void, SqlError> {
    return this.checkStatement(`SELECT 1 / (${count}) AS present`, missing)
  }

  /**
   * Holds back a whole statement that fails with a division by zero where its check fails (a
   * data-modifying `WITH` must stand at the top of its statement). A division by zero does not
   * say which statement of a message raised it: a check already held back is sent first, so
   * that each message carries one, unless checks may go together (`checksTogether`).
   */
  checkStatement(text: string, failed: () => unknown): Effect.Effect<void, SqlError> {
    return Effect.suspend(() =>
      Effect.zipRight(
        this.checks.length > 0 && !this.checksTogether ? this.flush() : Effect.void,
        Effect.sync(() => {
          this.pending.push(text)
          this.deferred++
          this.checks.push(failed)
          // A data-modifying check (an update under its version) writes.
          if (!reads(text)) {
            this.writes++
            this.pendingWrites++
          }
        })
      )
    )
  }

  /** What is held back, then `text`, in one message; answers the rows of each statement of `text`. */
  private sendWith(text: string | undefined): Effect.Effect<ReadonlyArray<ReadonlyArray<any>>, SqlError> {
    return Effect.suspend(() => {
      const held = this.pending
      const deferred = this.deferred
      const checks = this.checks
      this.pending = []
      this.deferred = 0
      this.checks = []
      this.pendingWrites = 0
      if (held[0] === "BEGIN") this.begun = true
      const statements = text === undefined ? held : [...held, text]
      if (statements.length === 0) return Effect.succeed([])
      this.sending(text)
      return this.inner.executeUnprepared(statements.join(";\n"), [], undefined).pipe(
        Effect.map((rows) => {
          // One statement answers its rows; several, an array of each one's rows.
          const each = statements.length === 1 ? [rows] : (rows as ReadonlyArray<ReadonlyArray<any>>)
          return each.slice(held.length)
        }),
        Effect.tapError((error) =>
          Effect.sync(() => {
            this.aborted = true
            if (deferred === 0 || this.failure !== undefined) return
            // Only a check divides: a division by zero is a check that found no row, the one
            // the message carried (several only when `checksTogether`: which failed is unknown).
            if (checks.length > 0 && sqlState(error) === "22012") this.failure = checks.length === 1 ? checks[0]!() : undefined
            else this.failure = this.conflictOf(error)
          })
        )
      )
    })
  }

  /** Sends what is held back, if anything. */
  flush(): Effect.Effect<void, SqlError> {
    return Effect.suspend(() => (this.pending.length === 0 ? Effect.void : Effect.asVoid(this.sendWith(undefined))))
  }

  /**
   * The COMMIT, after what is held back and the statements that go with it (`CommitTail`). A
   * transaction that sent nothing and has nothing to send ends without a message. One in which
   * a statement failed (its failure caught by the caller, which went on) cannot commit:
   * PostgreSQL would answer its COMMIT with a ROLLBACK and no error. If it wrote anything, the
   * COMMIT fails, so that its caller is not told its writes committed; if it only read, it
   * ends with a ROLLBACK, which loses nothing.
   */
  commit(tail: ReadonlyArray<string>): Effect.Effect<void, SqlError> {
    return Effect.suspend(() => {
      if (this.aborted) {
        if (this.writes === 0 && tail.length === 0) return this.rollback()
        return Effect.fail(
          new SqlError({ cause: undefined, message: "a statement of the transaction failed and PostgreSQL aborted it: nothing of it was committed" })
        )
      }
      if (!this.begun && this.deferred === 0 && tail.length === 0) {
        this.pending = []
        return Effect.void
      }
      return Effect.asVoid(this.sendWith([...tail, "COMMIT"].join(";\n")))
    })
  }

  /** The ROLLBACK; what is held back is dropped (nothing of it was sent). */
  rollback(): Effect.Effect<void, SqlError> {
    return Effect.suspend(() => {
      this.pending = []
      this.deferred = 0
      this.checks = []
      return this.begun ? Effect.asVoid(this.inner.executeUnprepared("ROLLBACK", [], undefined)) : Effect.void
    })
  }

  execute(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ): Effect.Effect<ReadonlyArray<any>, SqlError> {
    if (this.pending.length === 0) return this.direct(sql, this.inner.execute(sql, params, transformRows))
    const inlined = inline(sql, params)
    if (inlined === undefined) return Effect.zipRight(this.flush(), Effect.suspend(() => this.direct(sql, this.inner.execute(sql, params, transformRows))))
    return Effect.map(this.sendWith(inlined), (results) => {
      const rows = results[results.length - 1] ?? []
      return transformRows ? transformRows(rows) : rows
    })
  }

  executeUnprepared(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ): Effect.Effect<ReadonlyArray<any>, SqlError> {
    if (this.pending.length === 0 || params.length > 0) {
      return Effect.zipRight(this.flush(), Effect.suspend(() => this.direct(sql, this.inner.executeUnprepared(sql, params, transformRows))))
    }
    // Text without parameters joins the message as it is; its own answer is as it would be alone.
    return Effect.map(this.sendWith(sql), (results) => {
      const own = results.length === 1 ? results[0]! : results
      return transformRows ? transformRows(own as ReadonlyArray<any>) : own
    })
  }

  executeRaw(sql: string, params: ReadonlyArray<unknown>): Effect.Effect<unknown, SqlError> {
    return Effect.zipRight(this.flush(), Effect.suspend(() => this.direct(sql, this.inner.executeRaw(sql, params))))
  }

  executeValues(sql: string, params: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError> {
    return Effect.zipRight(this.flush(), Effect.suspend(() => this.direct(sql, this.inner.executeValues(sql, params))))
  }

  executeStream(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ): Stream.Stream<any, SqlError> {
    return Stream.unwrap(Effect.map(this.flush(), () => {
      this.sending(sql)
      return this.inner.executeStream(sql, params, transformRows).pipe(Stream.tapError(() => this.abort))
    }))
  }
}

/** Where one transaction of a group begins on a shared connection (`PipelinedConnection.mark`). */
export interface Mark {
  readonly pending: number
  readonly deferred: number
  readonly checks: number
  readonly sends: number
  readonly writes: number
  readonly pendingWrites: number
}

/** A statement that only reads (a plain SELECT): one that may write is anything else. */
const reads = (text: string): boolean => /^\s*select\b/i.test(text) && !/\bfor\s+(update|no\s+key\s+update|share|key\s+share)\b/i.test(text)

/** The SQLSTATE of a PostgreSQL error. */
export const sqlState = (error: SqlError): unknown => (error.cause as { code?: unknown } | undefined)?.code

const hex = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex")

/**
 * A value as a PostgreSQL literal of unknown type, which the statement types from where it
 * stands, as it types a parameter sent without a type (the driver sends every one so). Undefined
 * for a value the driver would encode in a way of its own (arrays, objects).
 */
export const literalOf = (value: unknown): string | undefined => {
  if (value === null || value === undefined) return "NULL"
  switch (typeof value) {
    case "string":
      return literal(value)
    case "number":
      return Number.isFinite(value) ? `'${value}'` : undefined
    case "bigint":
      return `'${value}'`
    case "boolean":
      return value ? "'true'" : "'false'"
    default:
      if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : `'${value.toISOString()}'`
      if (value instanceof Uint8Array) return `'\\x${hex(value)}'`
      return undefined
  }
}

/**
 * A statement's text with its `$n` placeholders replaced by its parameters as literals, or
 * undefined where that cannot be done with certainty: a parameter `literalOf` cannot write, or
 * text other than plain quoted strings and identifiers around the placeholders (a comment, an
 * escape string, a dollar-quoted body).
 */
export const inline = (text: string, params: ReadonlyArray<unknown>): string | undefined => {
  let out = ""
  let from = 0
  let i = 0
  while (i < text.length) {
    const c = text.charCodeAt(i)
    if (c === 39 /* ' */ || c === 34 /* " */) {
      // An escape string (E'…') reads backslashes: not attempted.
      if (c === 39 && i > 0 && /[eE]/.test(text[i - 1]!) && !/[\w$]/.test(text[i - 2] ?? " ")) return undefined
      // The quote closes at the next one not doubled.
      let j = i + 1
      for (;;) {
        const close = text.indexOf(text[i]!, j)
        if (close === -1) return undefined
        if (text.charCodeAt(close + 1) === c) j = close + 2
        else {
          i = close + 1
          break
        }
      }
    } else if (c === 36 /* $ */) {
      let j = i + 1
      while (j < text.length && text.charCodeAt(j) >= 48 && text.charCodeAt(j) <= 57) j++
      // `$` not followed by digits starts a dollar quote: not attempted.
      if (j === i + 1) return undefined
      const index = Number(text.slice(i + 1, j)) - 1
      if (index < 0 || index >= params.length) return undefined
      const value = literalOf(params[index])
      if (value === undefined) return undefined
      out += text.slice(from, i) + value
      i = j
      from = j
    } else if ((c === 45 /* - */ && text.charCodeAt(i + 1) === 45) || (c === 47 /* / */ && text.charCodeAt(i + 1) === 42)) {
      return undefined
    } else i++
  }
  return out + text.slice(from)
}

/**
 * The pipelined connection a write may defer to: the outermost level of a transaction on one
 * (a savepoint's writes are sent as they come, so that the savepoint hears its own failures),
 * with tracing off (with it on, every statement keeps its span).
 */
export const deferringConnection = (fiber: Fiber.RuntimeFiber<unknown, unknown>): PipelinedConnection | undefined => {
  if (fiber.getFiberRef(FiberRef.currentTracerEnabled)) return undefined
  const open = Context.getOption(fiber.currentContext, SqlClient.TransactionConnection)
  return open._tag === "Some" && open.value[1] === 0 && open.value[0] instanceof PipelinedConnection ? open.value[0] : undefined
}
