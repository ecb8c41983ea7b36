import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { isStoreUnavailable } from "../Domain/Errors.js"
import { signalOutbox, Storage, UnitOfWork } from "../Engine/Ports.js"
import { enqueue } from "../Webhooks/Outbox.js"
import { users } from "./ConsentTables.js"
import { type Duration, thresholdOf } from "./Durations.js"
import { type DueUser, ExpiryAnnouncements } from "./ExpiryAnnouncements.js"
import { ConsentPoliciesResource, type PolicyRow } from "./Policies.js"
import { durationFor, expiryOf } from "./PolicyState.js"
import { presentUser } from "./UserStates.js"

/**
 * The sweep that announces lapsed consents (`user.consent_expired`). It runs wherever webhooks
 * are delivered (the server's own dispatcher, `worker` processes), every `intervalMs`, so a
 * message is written within that time after a user's `expires_at`.
 *
 * For each policy (organization and regulation) and each duration it applies (the consent
 * duration, and the denied one when it differs), the users whose last merged event is at or
 * before `thresholdOf(now, d)` (their period has ended) and after `thresholdOf(form, d)`, where
 * `form` is the policy's `updated_at` (their period ended after the policy took its current
 * form: a new or changed policy announces nothing for users already expired under it), are read
 * through the due index a page at a time, and classified exactly by `expiryOf`, the one
 * definition the users' `expires_at` shows.
 *
 * Each expiry is announced in one transaction: the store's guarded mark (`announce`, which
 * changes the row only while its last merged event is the one read and not announced yet) and,
 * only if that changed the row, the message through the normal outbox. So a newer event racing
 * in wins (its own period is announced when it ends), two sweeping processes send one message,
 * and a process killed mid-sweep leaves either both or neither.
 *
 * Each process remembers, per policy form and duration, how far its last complete pass went,
 * and reads only what became due since; a restart, a change of the policy, and every
 * `rescanMs` read the whole range again (an event may be recorded with a `created_at` in the
 * past, behind that point), which the marks make cheap to repeat.
 */

export interface ExpirySweepConfig {
  /** Time between two sweeps. Default 5000 ms. */
  readonly intervalMs?: number | undefined
  /** How often a sweep reads each policy's whole range again. Default 600000 ms (ten minutes). */
  readonly rescanMs?: number | undefined
  /** Rows read per query. Default 500. */
  readonly batch?: number | undefined
}

export const DEFAULT_EXPIRY_SWEEP_INTERVAL_MS = 5_000

/** Policies read per query. */
const POLICY_PAGE = 500

const iso = (ms: number) => new Date(ms).toISOString()

/** How far a complete pass over a policy's range went, for one duration. */
interface Mark {
  readonly form: string
  readonly upTo: number
  readonly fullAt: number
}

/** What one process's sweeps keep between them. */
interface SweepState {
  readonly config: Required<ExpirySweepConfig>
  readonly marks: Map<string, Mark>
  /** Whether the process is stopping: a sweep then ends after the user it is announcing. */
  readonly stopping: Effect.Effect<boolean>
}

const durationKey = (policyId: string, d: Duration) => `${policyId}\n${d.amount} ${d.unit}`

/** The durations a policy applies, each once. */
const durationsOf = (policy: PolicyRow): ReadonlyArray<Duration> => {
  const given = durationFor(policy, true)
  const refused = durationFor(policy, false)
  return given.amount === refused.amount && given.unit === refused.unit ? [given] : [given, refused]
}

/** Every policy, a page at a time in the order of their ids. */
const allPolicies = Effect.gen(function*() {
  const repo = (yield* Storage).repository(ConsentPoliciesResource.tableDef)
  const all: Array<PolicyRow> = []
  let after: string | undefined
  for (;;) {
    const page = yield* repo.find({
      count: false,
      where: [],
      sort: [],
      keyset: { fields: ["id"], after: after === undefined ? undefined : [after] },
      limit: POLICY_PAGE,
      skip: 0
    })
    all.push(...page.data)
    if (page.data.length < POLICY_PAGE) return all
    after = page.data[page.data.length - 1]!.id
  }
})

/** Whether a failure is the store's "not now" (a defect where a port died of it). */
const storeCannotServe = (cause: Cause.Cause<unknown>): boolean =>
  Chunk.some(Cause.defects(cause), isStoreUnavailable) || Chunk.some(Cause.failures(cause), isStoreUnavailable)

/**
 * Announces one user's expiry: the guarded mark, then the message, in one transaction. Answers
 * whether a message was written.
 */
const announce = (policy: PolicyRow, row: DueUser, expiredAt: number) =>
  Effect.flatMap(UnitOfWork, (uow) =>
    uow.transaction(Effect.gen(function*() {
      const store = yield* ExpiryAnnouncements
      const changed = yield* store.announce({
        organizationId: policy.organization_id,
        userId: row.user_id,
        regulation: policy.regulation,
        lastEventId: row.last_event_id
      })
      if (!changed) return false
      const user = yield* (yield* users()).get({ organization_id: policy.organization_id, id: row.user_id })
      // The row goes with its user: a user erased since the read has no row left to mark.
      if (Option.isNone(user)) return false
      const entity = yield* presentUser(user.value, policy.regulation)
      yield* enqueue(policy.organization_id, [{
        type: "user.consent_expired",
        regulation: policy.regulation,
        parameters: { entity, expired_at: iso(expiredAt) }
      }])
      return true
    }))).pipe(
    // One user's failure does not hold back the others: it is tried again at the next whole
    // pass. A store that cannot serve fails the sweep, which the next one retries.
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause) || storeCannotServe(cause)
        ? Effect.failCause(cause)
        : Effect.logError("expiry announcement failed", cause).pipe(
          Effect.annotateLogs({ organization_id: policy.organization_id, regulation: policy.regulation }),
          Effect.as(false)
        )
    )
  )

/** One policy's range for one duration; answers the messages written. */
const sweepRange = (policy: PolicyRow, d: Duration, now: number, { config, marks, stopping }: SweepState) =>
  Effect.gen(function*() {
    const store = yield* ExpiryAnnouncements
    const form = Date.parse(policy.updated_at)
    const floor = thresholdOf(form, d)
    const upTo = thresholdOf(now, d)
    if (upTo <= floor) return 0
    const key = durationKey(policy.id, d)
    const mark = marks.get(key)
    const resume = mark !== undefined && mark.form === policy.updated_at && now - mark.fullAt < config.rescanMs
    const from = resume ? Math.max(floor, mark.upTo) : floor
    let after: { at: string; userId?: string } = { at: iso(from) }
    let written = 0
    for (;;) {
      const page = yield* store.due({
        organizationId: policy.organization_id,
        regulation: policy.regulation,
        after,
        upTo: iso(upTo),
        limit: config.batch
      })
      for (const row of page) {
        // The row's own duration decides (a refusal may last less than a consent): the other
        // duration's range announces it when it lies there.
        const expires = expiryOf(policy, row.state)
        if (expires === undefined || expires > now || expires <= form) continue
        // Stopping: the pass is incomplete, so its mark stays where it was.
        if (yield* stopping) return written
        if (yield* announce(policy, row, expires)) {
          written++
          // Committed: the dispatcher may send it now, while the sweep goes on.
          yield* signalOutbox
        }
      }
      if (page.length < config.batch) break
      const last = page[page.length - 1]!
      after = { at: last.last_event_at, userId: last.user_id }
    }
    marks.set(key, { form: policy.updated_at, upTo, fullAt: resume ? mark.fullAt : now })
    return written
  })

/** One sweep over every policy; answers the messages written. */
const sweepOnce = (state: SweepState) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const policies = yield* allPolicies
    let written = 0
    for (const policy of policies) {
      for (const d of durationsOf(policy)) written += yield* sweepRange(policy, d, now, state)
    }
    // What is kept of removed policies goes with them.
    const kept = new Set(policies.flatMap((p) => durationsOf(p).map((d) => durationKey(p.id, d))))
    for (const key of state.marks.keys()) if (!kept.has(key)) state.marks.delete(key)
    return written
  })

/**
 * The sweep running every `intervalMs` until the layer's scope closes. Closing lets the sweep
 * in progress finish the user it is announcing (each is one transaction) and stops.
 */
export const layer = (config: ExpirySweepConfig = {}) =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const settings: Required<ExpirySweepConfig> = {
      intervalMs: config.intervalMs ?? DEFAULT_EXPIRY_SWEEP_INTERVAL_MS,
      rescanMs: config.rescanMs ?? 600_000,
      batch: config.batch ?? 500
    }
    const stopping = yield* Deferred.make<void>()
    const round = sweepOnce({ config: settings, marks: new Map(), stopping: Deferred.isDone(stopping) }).pipe(
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : Effect.logError("expiry sweep failed", cause)
      )
    )
    const loop = Effect.gen(function*() {
      while (!(yield* Deferred.isDone(stopping))) {
        yield* round
        yield* Effect.raceFirst(Effect.sleep(settings.intervalMs), Deferred.await(stopping))
      }
    })
    const fiber = yield* Effect.forkScoped(loop)
    // Added after the fork, so it runs before the fork's own finalizer interrupts the loop.
    yield* Effect.addFinalizer(() => Effect.zipRight(Deferred.succeed(stopping, undefined), Fiber.await(fiber)))
  }))
