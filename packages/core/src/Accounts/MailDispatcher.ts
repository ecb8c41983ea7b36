import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import { type InvitationMail, Mailer, MailNotSent } from "./Mailer.js"
import { MailQueue, type MailOutcome, type MailRecord, MailSignal } from "./MailOutbox.js"
import { Metrics } from "../Engine/Metrics.js"
import { randomToken } from "../Engine/Random.js"
import { SecretBox } from "../Engine/Secrets.js"

/**
 * The loop that empties the mail outbox, over core's ports only: the store's `MailQueue`, the
 * host's `Mailer` and `SecretBox`, and `Metrics`. It runs wherever webhooks are delivered (the
 * server, or `worker` processes), beside the webhook dispatcher and with the same lifecycle:
 * a lease per claimed mail (two workers never send one mail, a dead worker's mails come back when
 * the lease ends), and a stop that claims nothing more and lets the sends in flight finish.
 *
 * Times come from Effect's `Clock`, so tests move the retry schedule with their clock.
 */

export interface MailDispatcherConfig {
  /** Identifies this worker's leases. Default: random. */
  readonly workerId?: string | undefined
  /** Seconds before each retry; a mail failing once more is given up (`failed`). */
  readonly retrySchedule?: ReadonlyArray<number> | undefined
  /** Budget of one send, from connecting to the server's last answer. Default 60000. */
  readonly sendTimeoutMs?: number | undefined
  /** Longest idle sleep between two polls of the outbox. Default 1000 ms. */
  readonly pollIntervalMs?: number | undefined
}

/**
 * One minute, five, fifteen and thirty: five attempts over about 51 minutes, enough for a mail
 * server's restart or a short outage, well within the invitation's seven days.
 */
export const DEFAULT_MAIL_RETRY_SCHEDULE: ReadonlyArray<number> = [60, 300, 900, 1800]

/** Mails claimed (and sent at once) per round: invitations are few, and each send may take long. */
const BATCH = 5

const iso = (ms: number) => new Date(ms).toISOString()

/** What is kept of a failure: its kind and code, which hold no address. */
const describeFailure = (e: MailNotSent) => e.code === undefined ? e.kind : `${e.kind} ${e.code}`

const build = (config: MailDispatcherConfig) =>
  Effect.gen(function*() {
    const queue = yield* MailQueue
    const mailer = yield* Mailer
    const box = yield* SecretBox
    const metrics = yield* Metrics
    const workerId = config.workerId ?? `mail-${randomToken(12)}`
    const schedule = config.retrySchedule ?? DEFAULT_MAIL_RETRY_SCHEDULE
    const sendTimeoutMs = config.sendTimeoutMs ?? 60_000
    // The send ends (its timeout) before the lease does, so no other worker sends it meanwhile.
    const leaseMs = sendTimeoutMs + 30_000
    const pollIntervalMs = config.pollIntervalMs ?? 1_000
    const wake = yield* Queue.sliding<void>(1)
    const stopping = yield* Deferred.make<void>()
    const pause = (ms: number) => Effect.raceFirst(Effect.sleep(ms), Deferred.await(stopping))

    const open = (mail: MailRecord): Effect.Effect<InvitationMail, MailNotSent> =>
      mail.mail_sealed === null
        ? Effect.fail(new MailNotSent({ kind: "error" }))
        : Effect.map(box.open(mail.mail_sealed), (json) => JSON.parse(json) as InvitationMail).pipe(
          // A key that no longer opens it, or a body that is not a mail: no retry will send it.
          Effect.catchAllDefect(() => Effect.fail(new MailNotSent({ kind: "error" })))
        )

    const outcomeOf = (mail: MailRecord, result: Either.Either<void, MailNotSent>, nowMs: number): MailOutcome => {
      const attempts = mail.attempts_count + 1
      if (Either.isRight(result)) return { status: "sent", attempts_count: attempts, next_attempt_at: null, last_error: null }
      const wait = schedule[attempts - 1]
      return wait === undefined
        ? { status: "failed", attempts_count: attempts, next_attempt_at: null, last_error: describeFailure(result.left) }
        : { status: "pending", attempts_count: attempts, next_attempt_at: iso(nowMs + wait * 1000), last_error: describeFailure(result.left) }
    }

    const processOne = (mail: MailRecord) =>
      Effect.gen(function*() {
        // Claimed but not started when the dispatcher began stopping: its lease brings it back.
        if (yield* Deferred.isDone(stopping)) return
        const result = yield* open(mail).pipe(
          Effect.flatMap(mailer.sendInvitation),
          Effect.timeoutFail({ duration: sendTimeoutMs, onTimeout: () => new MailNotSent({ kind: "timeout" }) }),
          Effect.either
        )
        const nowMs = yield* Clock.currentTimeMillis
        const outcome = outcomeOf(mail, result, nowMs)
        const applied = yield* queue.complete({ id: mail.id, workerId, outcome, now: iso(nowMs) })
        yield* metrics.mailAttempt(outcome.status === "pending" ? "retry" : outcome.status)
        if (!applied) yield* Effect.logWarning("mail lease lost during the attempt")
        else if (outcome.status !== "sent") {
          yield* Effect.logWarning("invitation mail not sent").pipe(
            Effect.annotateLogs({ error: outcome.last_error ?? "", attempts: outcome.attempts_count, next: outcome.status })
          )
        }
      }).pipe(
        // Ids only: the mail's address and name never reach a log line.
        Effect.annotateLogs({ mail_id: mail.id, invitation_id: mail.invitation_id }),
        Effect.catchAllCause((cause) =>
          // Not the cause: its message may quote the mail. The mail stays leased and comes back.
          Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : Effect.logError("invitation mail crashed")
        )
      )

    const runOnce = Effect.gen(function*() {
      const nowMs = yield* Clock.currentTimeMillis
      const claimed = yield* queue.claim({ now: iso(nowMs), leaseUntil: iso(nowMs + leaseMs), workerId, limit: BATCH })
      yield* Effect.forEach(claimed, processOne, { concurrency: BATCH, discard: true })
      return claimed.length
    })

    const idle = Effect.gen(function*() {
      const nowMs = yield* Clock.currentTimeMillis
      const next = yield* queue.nextDueAt
      const dueIn = Option.isSome(next) ? Date.parse(next.value) - nowMs : pollIntervalMs
      yield* Effect.raceFirst(pause(Math.max(10, Math.min(pollIntervalMs, dueIn))), Queue.take(wake))
    })

    const round = runOnce.pipe(
      Effect.flatMap((n) => (n > 0 ? Effect.void : idle)),
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.failCause(cause)
          : Effect.logError("mail dispatcher round failed", cause).pipe(Effect.zipRight(pause(pollIntervalMs)))
      )
    )
    const loop = Effect.gen(function*() {
      while (!(yield* Deferred.isDone(stopping))) yield* round
    }).pipe(Effect.annotateLogs({ worker_id: workerId }))
    const stop = Effect.asVoid(Deferred.succeed(stopping, undefined))
    return { loop, stop, notify: Effect.asVoid(Queue.offer(wake, undefined)) }
  })

/**
 * The mail dispatcher with its loop running until the layer's scope closes, and the
 * `MailSignal` that wakes it after an invite commits. Closing drains: no new claims, and the
 * sends in flight finish (each within `sendTimeoutMs`) and record their outcome before the store
 * is released. Without a mailer that delivers, nothing is ever queued and no loop runs.
 */
export const layer = (config: MailDispatcherConfig = {}): Layer.Layer<MailSignal, never, MailQueue | Mailer | SecretBox | Metrics> =>
  Layer.scoped(
    MailSignal,
    Effect.gen(function*() {
      if (!(yield* Mailer).delivers) return MailSignal.of({ notify: Effect.void })
      const { loop, notify, stop } = yield* build(config)
      const fiber = yield* Effect.forkScoped(loop)
      // Added after the fork, so it runs before the fork's own finalizer interrupts the loop.
      yield* Effect.addFinalizer(() => Effect.zipRight(stop, Fiber.await(fiber)))
      return MailSignal.of({ notify })
    })
  )
