import { type Condition, keyOf, MailOutboxTable, type Row, Storage, type TableDef, Tables, UnitOfWork, WebhooksResource } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { resealReceiptKeys } from "./ReceiptKeys.js"
import { secretBoxKeys, secretBoxOf } from "./SecretBox.js"

/**
 * The re-seal: every stored sealed value opened and sealed again with the current key, so that
 * the keys before it can be dropped. Runs beside the servers, on a store they use.
 */

/** Rows re-sealed per transaction: short transactions, which the servers' writes wait little for. */
export const RESEAL_BATCH = 100

/** What a re-seal found, in sealed values. */
export interface ResealCounts {
  /** Sealed again with the current key. */
  readonly resealed: number
  /** Already under the current key: left as they were. */
  readonly already_current: number
  /** Opened by no key given: left as they were, and still not opening. */
  readonly unopened: number
}

export interface ResealReport extends ResealCounts {
  /** The same, by table (the receipt signing keys are the settings' `receipt_signing_keys`). */
  readonly tables: Readonly<Record<string, ResealCounts>>
}

/** The tables holding sealed values, and their columns. */
const sealedColumns: ReadonlyArray<{ readonly table: TableDef<Row>; readonly columns: ReadonlyArray<string> }> = [
  {
    table: WebhooksResource.tableDef as unknown as TableDef<Row>,
    columns: ["signing_secret_sealed", "previous_secret_sealed", "auth_client_secret_sealed"]
  },
  { table: Tables.secrets as unknown as TableDef<Row>, columns: ["secret_sealed"] },
  { table: MailOutboxTable as unknown as TableDef<Row>, columns: ["mail_sealed"] }
]

type Box = ReturnType<typeof secretBoxOf>

interface Counter {
  resealed: number
  already_current: number
  unopened: number
}

/** What becomes of one sealed value: the value to write instead, or why it stays. */
const step = (box: Box, sealed: string): { readonly next?: string; readonly count: keyof Counter } => {
  if (box.isCurrent(sealed)) return { count: "already_current" }
  const opened = box.open(sealed)
  return typeof opened === "string" ? { next: box.seal(opened), count: "resealed" } : { count: "unopened" }
}

/** A row's columns to write, and what each of its sealed values counts as. */
const planRow = (box: Box, columns: ReadonlyArray<string>, row: Row) => {
  const changes: Record<string, string> = {}
  const counts: Array<keyof Counter> = []
  for (const column of columns) {
    const sealed = row[column]
    if (typeof sealed !== "string") continue
    const { count, next } = step(box, sealed)
    counts.push(count)
    if (next !== undefined) changes[column] = next
  }
  return { changes, counts }
}

/** One table, by pages of `RESEAL_BATCH` rows in the order of their ids, each page's writes in one transaction. */
const resealTable = (box: Box, table: TableDef<Row>, columns: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const repo = (yield* Storage).repository(table)
    const uow = yield* UnitOfWork
    const counter: Counter = { resealed: 0, already_current: 0, unopened: 0 }
    const add = (counts: ReadonlyArray<keyof Counter>) => counts.forEach((c) => counter[c]++)
    const holdsOne: Condition = columns.length === 1
      ? { _tag: "Compare", field: columns[0]!, op: "ne", value: null }
      : { _tag: "Or", branches: columns.map((c): ReadonlyArray<Condition> => [{ _tag: "Compare", field: c, op: "ne", value: null }]) }
    /**
     * The write is conditional on the version read: any write of the row since (a rotation of
     * its secret, a mail sent) moves it, and the row is read again rather than written over.
     */
    const write = (row: Row, changes: Record<string, string>) =>
      repo.patch(keyOf(table, row), changes, row.version as number).pipe(
        Effect.as("written" as const),
        Effect.catchTags({ Conflict: () => Effect.succeed("changed" as const), NotFound: () => Effect.succeed("gone" as const) })
      )
    /** A row another write changed meanwhile: read again and done alone, until it holds still. */
    const again = (key: ReturnType<typeof keyOf>): Effect.Effect<void> =>
      Effect.gen(function*() {
        const row = yield* repo.get(key)
        if (Option.isNone(row)) return
        const { changes, counts } = planRow(box, columns, row.value)
        if (Object.keys(changes).length === 0) return add(counts)
        const outcome = yield* write(row.value, changes)
        if (outcome === "written") add(counts)
        if (outcome === "changed") yield* again(key)
      })
    let after: string | undefined
    for (;;) {
      const page = yield* repo.find({
        where: [holdsOne],
        sort: [],
        limit: RESEAL_BATCH,
        skip: 0,
        keyset: { fields: ["id"], after: after === undefined ? undefined : [after] },
        count: false
      })
      if (page.data.length === 0) break
      after = page.data.at(-1)!.id as string
      const planned = page.data.map((row) => ({ row, ...planRow(box, columns, row) }))
      const work = planned.filter((p) => Object.keys(p.changes).length > 0)
      for (const p of planned) if (Object.keys(p.changes).length === 0) add(p.counts)
      const outcomes = work.length === 0 ? [] : yield* uow.transaction(Effect.forEach(work, (p) => write(p.row, p.changes)))
      for (const [i, outcome] of outcomes.entries()) {
        if (outcome === "written") add(work[i]!.counts)
        if (outcome === "changed") yield* again(keyOf(table, work[i]!.row))
      }
      // Progress, for a long table: what a run stopped midway had done.
      if (work.length > 0) yield* Effect.logInfo("re-sealed a batch").pipe(Effect.annotateLogs({ table: table.table, rows: work.length }))
      if (page.data.length < RESEAL_BATCH) break
    }
    return { ...counter } satisfies ResealCounts
  })

/**
 * Re-seals every stored sealed value (webhooks' secrets, secrets, the mail outbox, the receipt
 * signing keys) with the current key (`encryptionKey`, else the key kept in the database),
 * opening them with any key given (`encryptionKeyPrevious`, a kept key). Values already under
 * the current key are left, so a second run writes nothing; a run killed at any moment leaves
 * each value under one key or the other, and the next run finishes.
 */
export const resealSecrets = (
  options: { readonly encryptionKey?: string | undefined; readonly encryptionKeyPrevious?: string | undefined } = {}
): Effect.Effect<ResealReport, never, Storage | UnitOfWork> =>
  Effect.gen(function*() {
    const box = secretBoxOf(yield* secretBoxKeys(options.encryptionKey, options.encryptionKeyPrevious))
    const tables: Record<string, ResealCounts> = {}
    for (const { columns, table } of sealedColumns) tables[table.table] = yield* resealTable(box, table, columns)
    const ring = yield* resealReceiptKeys((sealed) => step(box, sealed).next)
    const ringCounts: Counter = { resealed: 0, already_current: 0, unopened: 0 }
    for (const sealed of ring) ringCounts[step(box, sealed).count]++
    tables.receipt_signing_keys = ringCounts
    const total = (k: keyof Counter) => Object.values(tables).reduce((n, c) => n + c[k], 0)
    return { resealed: total("resealed"), already_current: total("already_current"), unopened: total("unopened"), tables }
  })
