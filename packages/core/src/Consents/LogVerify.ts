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
  linkHash,
  type LogPosition,
  SHARDS,
  shardOf,
  subjectOf
} from "./ConsentLog.js"
import { Digests } from "./ProofPorts.js"

/**
 * Verifies an organization's consent log: every chain's links, from its first entry to its head,
 * and that every current row of the logged tables is what its latest entry says (and that no
 * row the log says exists is gone). Reads the log and the rows page by page, keeping only the
 * latest digest of each row named.
 */

const PAGE = 1000

type Fault = NonNullable<LogVerification["first_invalid"]>

interface Latest {
  readonly shard: number
  readonly seq: number
  readonly digest: string | null
  readonly kind: string
  seen: boolean
}

const before = (a: Fault, b: Fault) => a.shard < b.shard || (a.shard === b.shard && a.seq < b.seq)

/** The tables whose rows the log covers, as the store declares them. */
export const loggedTables: ReadonlyArray<TableDef> = [ConsentEventsResource.tableDef, ConsentUsersResource.tableDef, ProofsResource.tableDef]

/** The table an entry's kind names. */
const tableOfKind = (kind: string) => Object.keys(LOGGED_TABLES).find((table) => LOGGED_TABLES[table]!.kind === kind) ?? kind

export const verifyLog = (organizationId: string): Effect.Effect<LogVerification, never, Storage | ConsentLogStore | Digests> =>
  Effect.gen(function*() {
    const store = yield* ConsentLogStore
    const digests = yield* Digests
    const sha256 = (s: string) => digests.sha256(s)
    const link = linkHash(sha256)
    let first: Fault | undefined
    const fault = (f: Fault) => {
      if (first === undefined || before(f, first)) first = f
    }
    const latest = new Map<string, Latest>()
    const last: Array<{ seq: number; hash: string }> = Array.from({ length: SHARDS }, () => ({ seq: 0, hash: "" }))
    let entries = 0
    let after: LogPosition | undefined
    for (;;) {
      const page = yield* store.entries(organizationId, { after, limit: PAGE })
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
        let text: EntryText | undefined
        try {
          text = JSON.parse(e.changes) as EntryText
        } catch {
          text = undefined
        }
        if (text === undefined || !Array.isArray(text.changes)) {
          fault({ shard: e.shard, seq: e.seq, reason: "link" })
          continue
        }
        for (const c of text.changes) {
          latest.set(c.s, { shard: e.shard, seq: e.seq, digest: c.d, kind: c.k, seen: false })
        }
      }
      if (page.length < PAGE) break
      const end = page[page.length - 1]!
      after = { shard: end.shard, seq: end.seq }
      yield* betweenPages
    }

    // Each chain's head must be its last entry: a removed last entry shows here.
    const heads = yield* store.heads(organizationId)
    for (const h of heads) {
      const chain = last[h.shard]
      if (chain === undefined || chain.seq !== h.seq || chain.hash !== h.hash) fault({ shard: h.shard, seq: h.seq, reason: "head" })
    }

    for (const table of loggedTables) {
      yield* eachRow(table, [eq("organization_id", organizationId)], (row) =>
        Effect.sync(() => {
          const id = String(row.id)
          const entry = latest.get(subjectOf(sha256, table.table, organizationId, id))
          if (entry === undefined) {
            fault({ shard: shardOf(LOGGED_TABLES[table.table]!.chainOf(row)), seq: 0, reason: "missing", table: table.table, id })
            return
          }
          entry.seen = true
          if (entry.digest !== rowDigest(digests, row)) fault({ shard: entry.shard, seq: entry.seq, reason: "row", table: table.table, id })
        }))
    }
    // A row the log says exists but the table no longer holds was removed behind the log's back.
    for (const entry of latest.values()) {
      if (!entry.seen && entry.digest !== null) {
        fault({ shard: entry.shard, seq: entry.seq, reason: "row", table: tableOfKind(entry.kind) })
      }
    }
    return {
      entries,
      valid: first === undefined,
      head: headOf(sha256, heads),
      first_invalid: first ?? null
    }
  })

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
