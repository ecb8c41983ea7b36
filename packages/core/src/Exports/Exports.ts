import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { answers, defineAction } from "../Engine/Action.js"
import { nowIso, nowMillis } from "../Engine/Clock.js"
import { Conflict, InvalidInput, QuotaExceeded, TooManyRequests } from "../Domain/Errors.js"
import {
  ExportConfig,
  ExportConfigCreate,
  ExportConfigUpdate,
  type ExportDestination,
  ExportRun,
  ExportRunInput
} from "../Domain/Export.js"
import { nextId, type Row, Storage, type TableDef } from "../Engine/Ports.js"
import { type Principal, requireOrganization } from "../Engine/Principal.js"
import { type Condition, eq, type Scalar } from "../Engine/Query.js"
import { declareResource, defineResource } from "../Engine/Resource.js"
import { checkQuota, requireFeature, requireFeatureBeforeBody } from "../Engine/Gates.js"
import { decode } from "../Engine/Bodies.js"
import { loadVisible } from "../Engine/Reads.js"
import { toOutput } from "../Engine/Views.js"
import { Settings } from "../Engine/Settings.js"
import { Tables } from "../Accounts/AccountTables.js"
import { ConsentEventsResource } from "../Consents/Events.js"
import { ConsentUsersResource } from "../Consents/Users.js"
import { regulationsOf, presentUser } from "../Consents/UserStates.js"
import { checkReceiverUrl } from "../Webhooks/Webhooks.js"

/**
 * Export configurations and manual runs: the organization's consent events and users of a
 * time range, written as NDJSON to every destination of a configuration, page by page.
 */

// ---------------------------------------------------------------- the sink port

export class ExportFailed extends Data.TaggedError("ExportFailed")<{ readonly message: string }> {}

/** One open destination; `write` applies back-pressure, `close` completes (and for https, awaits the 2xx). */
export interface ExportWriter {
  readonly write: (chunk: string) => Effect.Effect<void, ExportFailed>
  readonly close: Effect.Effect<void, ExportFailed>
  readonly abort: Effect.Effect<void>
}

/** Where exports are written: a directory under the server's exports root, or an https receiver. */
export class ExportSink extends Context.Tag("@cmp/core/ExportSink")<
  ExportSink,
  { readonly open: (destination: ExportDestination, fileName: string) => Effect.Effect<ExportWriter, ExportFailed> }
>() {}

// ---------------------------------------------------------------- configurations

const destinationsQuota = (organizationId: string, destinations: ReadonlyArray<ExportDestination>) =>
  Effect.gen(function*() {
    const settings = yield* Settings
    for (const [i, d] of destinations.entries()) {
      if (d.type === "https") yield* checkReceiverUrl(d.url, `destinations.${i}.url`, settings.webhookAllowHosts)
    }
    const quotas = yield* (yield* Storage).repository(Tables.quotas).find({
      count: false,
      where: [eq("organization_id", organizationId)],
      sort: [],
      limit: 1,
      skip: 0
    })
    const limit = quotas.data[0]?.exports_destinations
    if (typeof limit === "number" && destinations.length > limit) {
      return yield* Effect.fail(
        new QuotaExceeded({
          message: `Quota 'exports_destinations' reached: a configuration may have at most ${limit} destinations`,
          quota: "exports_destinations",
          limit
        })
      )
    }
  })

/** `exports_configs` counts the enabled configurations. */
const enabledQuota = (organizationId: string) =>
  checkQuota({ ...ExportConfigs, quota: "exports_configs" }, organizationId, [eq("enabled", true)])

const ExportConfigs = declareResource({
  name: "export config",
  path: "exports/configs",
  table: "export_configs",
  indexes: [{ name: "export_configs_organization", columns: ["organization_id", "created_at"] }],
  output: ExportConfig,
  createInput: ExportConfigCreate,
  updateInput: ExportConfigUpdate,
  methods: ["find", "get", "create", "update", "patch", "remove"],
  ownerField: "organization_id",
  defaults: { enabled: true }
})

export const ExportConfigsResource = ExportConfigs.with({
  hooks: {
    create: (_p, row) =>
      Effect.gen(function*() {
        const org = row.organization_id
        if (row.enabled === true) yield* enabledQuota(org)
        yield* destinationsQuota(org, row.destinations)
        return { row }
      }),
    update: (_p, before, after, input) =>
      Effect.gen(function*() {
        const org = after.organization_id
        if (after.enabled === true && before.enabled !== true) yield* enabledQuota(org)
        if ("destinations" in input) yield* destinationsQuota(org, after.destinations)
        return after
      })
  }
})

// ---------------------------------------------------------------- runs

export const ExportRunsResource = defineResource({
  name: "export run",
  path: "exports/runs",
  // A run is work done, not configuration (its config is audited).
  audited: false,
  table: "export_runs",
  indexes: [{ name: "export_runs_organization", columns: ["organization_id", "created_at"] }],
  output: ExportRun,
  methods: ["find", "get"],
  ownerField: "organization_id"
})

/**
 * Rows per page: one page is read synchronously on SQLite, so it must stay short enough that
 * requests of other organizations are answered between two pages.
 */
const PAGE = 500

/**
 * Between two pages: back to the event loop (a timer, not a microtask, so pending I/O such as
 * other requests is served first).
 */
const pause: Effect.Effect<void> = Effect.async<void>((resume) => {
  const timer = setTimeout(() => resume(Effect.void), 0)
  return Effect.sync(() => clearTimeout(timer))
})

/**
 * Pages through a table in `orderField`, then key order, by keyset (each page starts after the
 * last row of the one before, never at an offset, so a late page costs what the first did): at
 * most one page is held in memory.
 */
const forEachPage = <A extends Row, R>(
  table: TableDef<A>,
  where: ReadonlyArray<Condition>,
  orderField: string,
  between: Effect.Effect<void, ExportFailed>,
  each: (rows: ReadonlyArray<A>) => Effect.Effect<void, ExportFailed, R>
) =>
  Effect.gen(function*() {
    const repo = (yield* Storage).repository(table)
    const fields = [orderField, ...table.key]
    let after: ReadonlyArray<Scalar> | undefined
    let count = 0
    for (;;) {
      const page = yield* repo.find({ count: false, where, sort: [], limit: PAGE, skip: 0, keyset: { fields, after } })
      if (page.data.length > 0) yield* each(page.data)
      count += page.data.length
      if (page.data.length < PAGE) return count
      const last = page.data[page.data.length - 1]!
      after = fields.map((f) => last[f] as Scalar)
      yield* pause
      yield* between
    }
  })

// ---------------------------------------------------------------- one run at a time

/**
 * A run holds its organization's lease, a row of the settings table, so a second run of the
 * same organization is refused on every server sharing the store. The row carries an expiry,
 * renewed while the run lasts: a server that dies mid-run frees the organization once it lapses.
 */
const LEASE_SECONDS = 30
/** How often a running export renews its lease: well within it, so a slow store does not lose it. */
const RENEW_EVERY = "10 seconds"

const leaseId = (organizationId: string) => `export_running:${organizationId}`
const leaseValue = (runId: string, expiresAtMs: number) =>
  JSON.stringify({ run: runId, expires_at: new Date(expiresAtMs).toISOString() })
const expiryOf = (value: unknown): number => {
  try {
    const parsed = JSON.parse(String(value)) as { expires_at?: unknown }
    const ms = typeof parsed.expires_at === "string" ? Date.parse(parsed.expires_at) : Number.NaN
    return Number.isNaN(ms) ? 0 : ms
  } catch {
    return 0
  }
}

const alreadyRunning = (retryAfterMs: number) =>
  new TooManyRequests({
    message: "An export of this organization is already running: try again when it has finished",
    retryAfterSeconds: Math.min(LEASE_SECONDS, Math.max(1, Math.ceil(retryAfterMs / 1000)))
  })

interface Lease {
  readonly id: string
  readonly runId: string
  version: number
  /** Taken over by another run after this one failed to renew it in time. */
  lost: boolean
}

/** Takes the organization's lease, or fails with 429 while another run holds a live one. */
const takeLease = (organizationId: string, runId: string) =>
  Effect.gen(function*() {
    const repo = (yield* Storage).repository(Tables.settings)
    const id = leaseId(organizationId)
    const now = yield* nowMillis
    const iso = new Date(now).toISOString()
    const value = leaseValue(runId, now + LEASE_SECONDS * 1000)
    const created = yield* Effect.either(repo.create({ id, value, created_at: iso, updated_at: iso, version: 1 }))
    if (Either.isRight(created)) return { id, runId, version: created.right.version, lost: false } satisfies Lease
    const held = yield* repo.get(id)
    // Released between the insert and the read: the other run has just finished.
    if (Option.isNone(held)) return yield* Effect.fail(alreadyRunning(1000))
    const expires = expiryOf(held.value.value)
    if (expires > now) return yield* Effect.fail(alreadyRunning(expires - now))
    // A lapsed lease (its server stopped mid-run): taken over, unless another run was quicker.
    const taken = yield* Effect.either(repo.patch(id, { value, updated_at: iso }, held.value.version))
    if (Either.isLeft(taken)) return yield* Effect.fail(alreadyRunning(1000))
    return { id, runId, version: taken.right.version, lost: false } satisfies Lease
  })

/**
 * Pushes the lease's expiry forward every RENEW_EVERY for as long as the run lasts, waits on a
 * slow receiver included. A lease found changed was taken over: the run stops at its next page.
 */
const keepLease = (lease: Lease) =>
  Effect.gen(function*() {
    const repo = (yield* Storage).repository(Tables.settings)
    for (;;) {
      yield* Effect.sleep(RENEW_EVERY)
      const now = yield* nowMillis
      const value = leaseValue(lease.runId, now + LEASE_SECONDS * 1000)
      const renewed = yield* Effect.either(repo.patch(lease.id, { value, updated_at: new Date(now).toISOString() }, lease.version))
      if (Either.isLeft(renewed)) {
        lease.lost = true
        return
      }
      lease.version = renewed.right.version
    }
  })

const checkLease = (lease: Lease) =>
  lease.lost
    ? Effect.fail(new ExportFailed({ message: "the run stalled past its lease and another run of the organization started" }))
    : Effect.void

const releaseLease = (lease: Lease) =>
  Effect.flatMap(Storage, (storage) => storage.repository(Tables.settings).remove(lease.id, lease.version)).pipe(Effect.ignore)

const lines = <A>(type: string, rows: ReadonlyArray<A>, out: (r: A) => Row) =>
  rows.map((r) => JSON.stringify({ type, ...out(r) })).join("\n") + "\n"

/** Gate of `exports/execute`: the premium feature `batch_exports_manual_run`, which its declaration names. */
const ExecuteGate = { ...ExportRunsResource, premiumFeature: "batch_exports_manual_run" as const }

/**
 * `POST exports/execute`: writes the events created and the users updated in [from, to) to
 * every destination of the configuration, then records the run with its counts. A destination
 * failing makes the run `failed` (recorded, and answered with its error).
 */
export const executeExport = (principal: Principal, body: unknown) =>
  Effect.gen(function*() {
    yield* requireFeatureBeforeBody(ExecuteGate, principal, body, "organization_id")
    const decoded = decode(ExportRunInput, body)
    if (Either.isLeft(decoded)) return yield* Effect.fail(decoded.left)
    const input = decoded.right
    yield* requireOrganization(principal, input.organization_id)
    yield* requireFeature(ExecuteGate, principal, input.organization_id)
    const config = yield* loadVisible(ExportConfigsResource, principal, input.export_config_id)
    if (config.organization_id !== input.organization_id) {
      return yield* Effect.fail(
        new InvalidInput({
          message: "Invalid export_config_id: not a configuration of this organization",
          errors: { export_config_id: "is not a configuration of this organization" }
        })
      )
    }
    if (config.enabled !== true) {
      return yield* Effect.fail(new Conflict({ message: "The export configuration is disabled", errors: { enabled: "is false" } }))
    }
    const org = input.organization_id
    const from = new Date(input.from).toISOString()
    const to = new Date(input.to).toISOString()
    const id = yield* nextId
    const destinations = config.destinations
    const sink = yield* ExportSink
    const fileName = `export-${org}-${from.replace(/[:.]/g, "-")}-${id}.ndjson`
    const range = (f: string): Array<Condition> => [
      eq("organization_id", org),
      { _tag: "Compare", field: f, op: "gte", value: from },
      { _tag: "Compare", field: f, op: "lt", value: to }
    ]
    return yield* Effect.acquireUseRelease(
      takeLease(org, id),
      (lease) =>
        Effect.gen(function*() {
          // Stopped when the run ends, before the lease is released.
          yield* Effect.forkScoped(keepLease(lease))
          const between = checkLease(lease)
          const writers: Array<ExportWriter> = []
          const abortAll = Effect.forEach(writers, (w) => w.abort, { discard: true })
          const run = Effect.gen(function*() {
            for (const d of destinations) writers.push(yield* sink.open(d, fileName))
            const writeAll = (chunk: string) => Effect.forEach(writers, (w) => w.write(chunk), { discard: true })
            const events = yield* forEachPage(
              ConsentEventsResource.tableDef,
              range("created_at"),
              "created_at",
              between,
              (rows) => writeAll(lines("event", rows, (r) => toOutput(ConsentEventsResource, r)))
            )
            const users = yield* forEachPage(
              ConsentUsersResource.tableDef,
              range("updated_at"),
              "updated_at",
              between,
              // A line per regulation the user has a status for, each as the API shows it.
              (rows) =>
                Effect.flatMap(
                  Effect.forEach(rows.flatMap((r) => regulationsOf(r).map((regulation) => [r, regulation] as const)), ([r, regulation]) =>
                    presentUser(r, regulation)),
                  (users) => writeAll(lines("user", users, (u) => u))
                )
            )
            yield* Effect.forEach(writers, (w) => w.close, { discard: true })
            return { events, users }
          })
          // Interrupted (the server stopping): no partial file stays, no receiver takes half an export.
          const outcome = yield* Effect.either(run).pipe(Effect.onInterrupt(() => abortAll))
          if (Either.isLeft(outcome)) yield* abortAll
          const now = yield* nowIso
          const stored = yield* Effect.orDie((yield* Storage).repository(ExportRunsResource.tableDef).create({
            id,
            organization_id: org,
            export_config_id: config.id,
            from,
            to,
            status: Either.isRight(outcome) ? "succeeded" : "failed",
            events_count: Either.isRight(outcome) ? outcome.right.events : 0,
            users_count: Either.isRight(outcome) ? outcome.right.users : 0,
            destinations_count: destinations.length,
            error: Either.isLeft(outcome) ? outcome.left.message : null,
            created_at: now,
            updated_at: now,
            version: 1
          }))
          return toOutput(ExportRunsResource, stored)
        }).pipe(Effect.scoped),
      releaseLease
    )
  })

export const ExecuteExportAction = defineAction({
  place: "exports/execute",
  name: "create",
  method: "POST",
  path: "exports/execute",
  tag: "exports/configs",
  summary: "Run an export now: consent events and users of [from, to) as NDJSON to every destination (premium feature batch_exports_manual_run)",
  auth: "bearer",
  body: { name: "ExportRunInput", schema: ExportRunInput },
  answers: answers.outputOf(ExportRunsResource),
  status: 201,
  premiumFeature: ExecuteGate.premiumFeature,
  queryNamesOrganization: false,
  run: (principal, request) => executeExport(principal, request.body)
})
