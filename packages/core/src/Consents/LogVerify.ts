import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { answers, defineAction } from "../Engine/Action.js"
import { nowMillis } from "../Engine/Clock.js"
import { Forbidden, InvalidInput, TooManyRequests } from "../Domain/Errors.js"
import { Metrics } from "../Engine/Metrics.js"
import { type LogVerification, LogVerification as LogVerificationSchema } from "../Domain/Proofs.js"
import { type Storage, type TableDef } from "../Engine/Ports.js"
import { isEndUser, isOperator, organizationsOf, type Principal, requireOrganization } from "../Engine/Principal.js"
import { eq } from "../Engine/Query.js"
import { ConsentEventsResource } from "./Events.js"
import { ConsentUsersResource } from "./Users.js"
import { ProofsResource } from "./Proofs.js"
import { requireExistingOrganization, requireFlag } from "../Engine/Gates.js"
import {
  betweenPages,
  ConsentLogStore,
  eachRow,
  rowDigest,
  type EntryText,
  headOf,
  LOGGED_TABLES,
  type LoggedChange,
  linkHash,
  type LogPosition,
  type NotedChange,
  type NotedRow,
  SHARDS,
  shardOf,
  subjectOf
} from "./ConsentLog.js"
import { Digests } from "./ProofPorts.js"

/**
 * Verifies an organization's consent log: every chain's links, from its first entry to its head,
 * and that every current row of the logged tables is what its latest entry says (and that no
 * row the log says exists is gone). Reads the log page by page and hands each subject's changes
 * to the store's scratch, then the rows page by page, and lets the scratch compare the two a
 * page of subjects at a time: what the verify holds at once is a page, however long the log.
 */

/** Entries or rows read at once, changes or rows handed to the scratch at once, and subjects it compares at once. */
export const VERIFY_PAGE = 1000

type Fault = NonNullable<LogVerification["first_invalid"]>

/**
 * Faults are ranked by (shard, seq), then by when a verify reading everything in turn would have
 * met them: a chain's links and heads first, then the rows (table by table, in id order), then
 * the rows the log says exist and that are gone (in the order the log first named them).
 */
const LINKS = 0
const ROWS = 1
const GONE = 2
type Rank = readonly [shard: number, seq: number, stage: number, order: number]

const before = (a: Rank, b: Rank) => {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! < b[i]!
  return false
}

/** The tables whose rows the log covers, as the store declares them. */
export const loggedTables: ReadonlyArray<TableDef> = [ConsentEventsResource.tableDef, ConsentUsersResource.tableDef, ProofsResource.tableDef]

/** The table an entry's kind names. */
const tableOfKind = (kind: string) => Object.keys(LOGGED_TABLES).find((table) => LOGGED_TABLES[table]!.kind === kind) ?? kind

/** An entry's changes as the scratch notes them, or undefined when its text is not a list of changes. */
const changesOf = (text: string): ReadonlyArray<LoggedChange> | undefined => {
  let parsed: EntryText | undefined
  try {
    parsed = JSON.parse(text) as EntryText
  } catch {
    return undefined
  }
  if (typeof parsed !== "object" || parsed === null || !Array.isArray(parsed.changes)) return undefined
  return parsed.changes.every((c) => typeof c === "object" && c !== null) ? parsed.changes : undefined
}

export const verifyLog = (organizationId: string): Effect.Effect<LogVerification, never, Storage | ConsentLogStore | Digests> =>
  Effect.scoped(Effect.gen(function*() {
    const store = yield* ConsentLogStore
    const digests = yield* Digests
    const sha256 = (s: string) => digests.sha256(s)
    const link = linkHash(sha256)
    const scratch = yield* store.scratch
    let first: { fault: Fault; rank: Rank } | undefined
    let met = 0
    const fault = (f: Fault, stage = LINKS, order = met++) => {
      const rank: Rank = [f.shard, f.seq, stage, order]
      if (first === undefined || before(rank, first.rank)) first = { fault: f, rank }
    }

    const last: Array<{ seq: number; hash: string }> = Array.from({ length: SHARDS }, () => ({ seq: 0, hash: "" }))
    let entries = 0
    let mentions = 0
    let noted: Array<NotedChange> = []
    const noteChanges = Effect.suspend(() => {
      const batch = noted
      noted = []
      return batch.length === 0 ? Effect.void : scratch.noteChanges(batch)
    })
    let after: LogPosition | undefined
    for (;;) {
      const page = yield* store.entries(organizationId, { after, limit: VERIFY_PAGE })
      for (const e of page) {
        entries++
        const chain = last[e.shard]
        if (chain === undefined) {
          fault({ shard: e.shard, seq: e.seq, reason: "link" })
          continue
        }
        // The hash must follow from the previous entry's stored hash: an entry rewritten with its
        // hash recomputed still breaks the link of the next one.
        if (e.seq !== chain.seq + 1 || link(chain.hash, e.seq, e.changes) !== e.hash) {
          fault({ shard: e.shard, seq: e.seq, reason: "link" })
        }
        chain.seq = e.seq
        chain.hash = e.hash
        const changes = changesOf(e.changes)
        if (changes === undefined) {
          fault({ shard: e.shard, seq: e.seq, reason: "link" })
          continue
        }
        for (const c of changes) {
          // A digest that is not one (an entry written by hand) matches no row, and says the row exists.
          const digest = c.d === null ? null : typeof c.d === "string" ? c.d : ""
          noted.push({ subject: String(c.s), shard: e.shard, seq: e.seq, digest, kind: String(c.k), order: mentions++ })
          if (noted.length >= VERIFY_PAGE) yield* noteChanges
        }
      }
      if (page.length < VERIFY_PAGE) break
      const end = page[page.length - 1]!
      after = { shard: end.shard, seq: end.seq }
      yield* betweenPages
    }
    yield* noteChanges

    // Each chain's head must be its last entry: a removed last entry shows here.
    const heads = yield* store.heads(organizationId)
    for (const h of heads) {
      const chain = last[h.shard]
      if (chain === undefined || chain.seq !== h.seq || chain.hash !== h.hash) fault({ shard: h.shard, seq: h.seq, reason: "head" })
    }

    // Every current row, handed to the scratch as read.
    let rows: Array<NotedRow> = []
    let visited = 0
    const noteRows = Effect.suspend(() => {
      const batch = rows
      rows = []
      return batch.length === 0 ? Effect.void : scratch.noteRows(batch)
    })
    yield* Effect.forEach(loggedTables, (table) =>
      eachRow(table, [eq("organization_id", organizationId)], (row) =>
        Effect.suspend(() => {
          const id = String(row.id)
          rows.push({
            subject: subjectOf(sha256, table.table, organizationId, id),
            digest: rowDigest(digests, table.table, row),
            table: table.table,
            id,
            shard: shardOf(LOGGED_TABLES[table.table]!.chainOf(row)),
            order: visited++
          })
          return rows.length >= VERIFY_PAGE ? noteRows : Effect.void
        })), { discard: true })
    yield* noteRows

    // Then each subject's rows against its latest change, as the scratch compares them: a row
    // the log never named, a row unlike the latest change, a row the log says exists and that is gone.
    let at: string | undefined
    for (;;) {
      const page = yield* scratch.mismatches(at, VERIFY_PAGE)
      for (const { latest: l, row: r } of page.found) {
        if (r === null) {
          if (l !== null && l.digest !== null) fault({ shard: l.shard, seq: l.seq, reason: "row", table: tableOfKind(l.kind) }, GONE, l.first)
        } else if (l === null) {
          fault({ shard: r.shard, seq: 0, reason: "missing", table: r.table, id: r.id }, ROWS, r.order)
        } else if (l.digest !== r.digest) {
          fault({ shard: l.shard, seq: l.seq, reason: "row", table: r.table, id: r.id }, ROWS, r.order)
        }
      }
      if (page.next === undefined) break
      at = page.next
      yield* betweenPages
    }
    return {
      entries,
      valid: first === undefined,
      head: headOf(sha256, heads),
      first_invalid: first?.fault ?? null
    }
  }))

/**
 * The organizations whose log this process is verifying, and since when: a verify reads the
 * whole log, so one runs at a time per organization, and a second meanwhile is refused rather
 * than queued. Per process, like the other in-memory limits: servers sharing a store each run
 * one.
 */
export class RunningVerifications extends Context.Tag("@cmp/core/RunningVerifications")<RunningVerifications, Map<string, number>>() {
  static readonly layer: Layer.Layer<RunningVerifications> = Layer.sync(RunningVerifications, () => new Map<string, number>())
}

/**
 * Runs a verify of the organization's log unless one is already running in this process: then
 * 429, with as long to wait as the running one has taken so far (at least 1 s, at most a minute).
 */
const oneAtATime = <A, E, R>(organizationId: string, verify: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const running = yield* RunningVerifications
    const now = yield* nowMillis
    const since = running.get(organizationId)
    if (since !== undefined) {
      return yield* Effect.fail(new TooManyRequests({
        message: "A verify of this organization's consent log is already running: try again when it has finished",
        retryAfterSeconds: Math.min(60, Math.max(1, Math.ceil((now - since) / 1000)))
      }))
    }
    running.set(organizationId, now)
    return yield* Effect.ensuring(verify, Effect.sync(() => running.delete(organizationId)))
  })

/** The organization a request about one organization acts in: named, or the principal's only one. */
export const organizationOf = (principal: Principal, named: string | undefined) =>
  Effect.gen(function*() {
    if (named !== undefined) {
      yield* requireOrganization(principal, named)
      return named
    }
    const orgs = organizationsOf(principal)
    if (orgs !== "all" && orgs.length === 1) return orgs[0]!
    return yield* Effect.fail(new InvalidInput({
      message: "Invalid query: name the organization with ?organization_id=",
      errors: { organization_id: "is required" }
    }))
  })

export const VerifyLogAction = defineAction({
  place: "consents/log",
  name: "verify",
  method: "GET",
  path: "consents/log/verify",
  tag: "consents/log",
  summary: "Verify the organization's consent log: every chain's links, and every current row against its latest entry",
  auth: "bearer",
  answers: answers.schema("LogVerification", LogVerificationSchema),
  status: 200,
  premiumFeature: "consents_api",
  query: "lookUp",
  parameters: [{
    name: "organization_id",
    in: "query",
    required: false,
    description: "The organization whose log is verified: implied for a caller of one organization (a client key, " +
      "a member of one), required (400 without it) from the operator and a member of several; another organization is 403"
  }],
  // The consents API (`/v1/consents/…`) is outside `api_requests`.
  countsApiRequests: false,
  run: (principal, request) =>
    Effect.gen(function*() {
      if (isEndUser(principal)) return yield* Effect.fail(new Forbidden({ message: "The consent log is verified by the organization's backend" }))
      const organizationId = yield* organizationOf(principal, request.at.organizationId)
      yield* requireExistingOrganization(organizationId)
      if (!isOperator(principal)) yield* requireFlag("consents_api", organizationId)
      const verification = yield* oneAtATime(organizationId, verifyLog(organizationId))
      yield* Effect.flatMap(Metrics, (metrics) => metrics.logVerified(verification.valid))
      return verification
    })
})
