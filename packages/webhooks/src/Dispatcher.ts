import {
  annotateSpan,
  canonicalJson,
  DeliveryHandOff,
  type DeliveryRecord,
  DeliveryQueue,
  type Endpoint,
  Endpoints,
  Metrics,
  OutboxSignal,
  subscriberOf,
  tracingEnabled,
  uuidV7
} from "@cmp/core"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as crypto from "node:crypto"
import { attemptSpan } from "./AttemptSpan.js"
import { makeTokenCache, type TokenCache } from "./OAuth.js"
import { decide, DEFAULT_RETRY_SCHEDULE, isSuccess, unavailable } from "./RetryPolicy.js"
import type { SendResult } from "./Answer.js"
import { send } from "./Send.js"
import { SignError, signNow } from "./Signer.js"
import { makeSubscribers, type SubscriberHandler, Subscribers, type SubscribersService } from "./Subscribers.js"

/**
 * The worker that empties the webhook outbox: it claims due messages with a lease, sends each
 * one signed (and with a bearer token when the endpoint has client credentials), and records
 * the attempt with the message's next state. Delivery is at least once: a worker that dies
 * mid-send leaves its messages leased, and they are claimed again when the lease runs out.
 *
 * All times written to the queue come from Effect's Clock, so tests drive the five-minute
 * retry schedule with `TestClock.adjust`.
 *
 * Messages of in-process subscribers (`webhook_id` `subscriber:<name>`) go the same way, but
 * the call is the handler this process registered in `Subscribers`: only those whose handler
 * this process has are claimed; a settled call is recorded as a 204, a throw as an attempt
 * without a status and with the error's message, retried on the same schedule.
 */

export interface DispatcherConfig {
  /** Identifies this worker's leases. Default: random. */
  readonly workerId?: string
  /** `WEBHOOK_RETRY_SCHEDULE`: seconds before each retry. Default five times 300. */
  readonly retrySchedule?: ReadonlyArray<number>
  /** `WEBHOOK_TIMEOUT_MS`: budget of one HTTP call. Default 15000. */
  readonly timeoutMs?: number
  /** How long a claim holds a message. Default `timeoutMs + 30000`. */
  readonly leaseMs?: number
  /** Messages claimed per round. Default 50. */
  readonly batchSize?: number
  /** Messages sent at once. Default 32. */
  readonly concurrency?: number
  /** `WEBHOOK_ALLOW_HOSTS`. */
  readonly allowHosts?: ReadonlyArray<string>
  /** `WEBHOOK_LOCAL_ADDRESS`. */
  readonly localAddress?: string | undefined
  /** Longest idle sleep between two polls of the queue. Default 250 ms. */
  readonly pollIntervalMs?: number
  /**
   * Whether the running loop takes the messages this process writes from memory after their
   * commit (`DeliveryHandOff`) rather than claiming them back. Default true.
   */
  readonly handOff?: boolean
  /** Most messages waiting in memory; past it, new ones are written for a claim. Default 10 batches. */
  readonly handOffLimit?: number
  readonly userAgent?: string
}

export interface DispatcherService {
  readonly workerId: string
  /** Claims up to `batchSize` due messages, processes them, and answers how many it claimed. */
  readonly runOnce: Effect.Effect<number>
  /** Wakes an idle loop at once; call it after committing new messages. */
  readonly notify: Effect.Effect<void>
  /** Whether the delivery loop runs and is not stopping (a dispatcher without its loop never runs). */
  readonly running: Effect.Effect<boolean>
}

export const DEFAULT_USER_AGENT = "cmp-webhooks/0.1"

/** Shortest idle sleep, so an adapter whose `nextDueAt` disagrees with `claim` can't spin. */
const MIN_IDLE_MS = 10

const iso = (ms: number) => new Date(ms).toISOString()

/** The attempt's result when no call was made. */
const notSent = (error: string): SendResult => ({ status: null, durationMs: 0, error, responseExcerpt: null })

const validate = (config: DispatcherConfig) => {
  const problems: Array<string> = []
  const schedule = config.retrySchedule ?? DEFAULT_RETRY_SCHEDULE
  if (schedule.some((n) => !Number.isFinite(n) || n < 0)) problems.push("retrySchedule must hold non-negative seconds")
  for (const key of ["timeoutMs", "leaseMs", "batchSize", "concurrency", "pollIntervalMs", "handOffLimit"] as const) {
    const v = config[key]
    if (v !== undefined && (!Number.isFinite(v) || v <= 0)) problems.push(`${key} must be a positive number`)
  }
  return problems
}

/** The longest error message of a subscriber's handler kept in the attempt log. */
const MAX_HANDLER_ERROR = 1000

const build = (config: DispatcherConfig, subscribers: SubscribersService | undefined) =>
  Effect.gen(function*() {
    const problems = validate(config)
    if (problems.length > 0) return yield* Effect.dieMessage(`invalid dispatcher config: ${problems.join("; ")}`)
    const queue = yield* DeliveryQueue
    const endpoints = yield* Endpoints
    const metrics = yield* Metrics
    const workerId = config.workerId ?? `worker-${crypto.randomUUID()}`
    const retrySchedule = config.retrySchedule ?? DEFAULT_RETRY_SCHEDULE
    const timeoutMs = config.timeoutMs ?? 15000
    const leaseMs = config.leaseMs ?? timeoutMs + 30000
    const batchSize = config.batchSize ?? 50
    const concurrency = config.concurrency ?? 32
    const allowHosts = config.allowHosts ?? []
    const localAddress = config.localAddress
    const pollIntervalMs = config.pollIntervalMs ?? 250
    const userAgent = config.userAgent ?? DEFAULT_USER_AGENT
    const handOffLimit = config.handOffLimit ?? batchSize * 10
    const tokens: TokenCache = yield* makeTokenCache({ timeoutMs, allowHosts, localAddress, userAgent })
    // One pending wake-up is enough: it makes the loop poll again, which sees every new message.
    const wake = yield* Queue.sliding<void>(1)
    // Set when the layer closes: the loop claims nothing more and ends once its round is done.
    // Read as a variable (every message of a round reads it); the Deferred wakes a pause.
    let stopped = false
    const stopping = yield* Deferred.make<void>()
    /** Waits `ms`, or less when the dispatcher is stopping. */
    const pause = (ms: number) => Effect.raceFirst(Effect.sleep(ms), Deferred.await(stopping))

    /**
     * One HTTP call's budget: the configured timeout, shortened so the call ends before the
     * lease does (a call outliving its lease could be repeated by another worker).
     */
    const callTimeout = (clock: Clock.Clock, leaseUntilMs: number) =>
      Math.max(1, Math.min(timeoutMs, leaseUntilMs - clock.unsafeCurrentTimeMillis()))

    /**
     * Signs and sends the exact body; the signature gets this attempt's timestamp, and the
     * secret a rotation replaced signs too while its overlap runs at this attempt's time.
     */
    const sendSigned = (
      clock: Clock.Clock,
      message: DeliveryRecord,
      endpoint: Endpoint,
      body: string,
      token: string | null,
      leaseUntilMs: number
    ): Effect.Effect<SendResult> =>
      Effect.suspend(() => {
        const nowMs = clock.unsafeCurrentTimeMillis()
        const previous = endpoint.previousSigningSecret
        const signature = signNow({
          secret: endpoint.signingSecret,
          previousSecret: previous != null && nowMs < previous.expiresAtMs ? previous.secret : undefined,
          msgId: message.id,
          timestampSeconds: Math.floor(nowMs / 1000),
          body
        })
        if (signature instanceof SignError) return Effect.succeed(notSent(signature.message))
        return send({
          url: endpoint.url,
          method: "POST",
          headers: {
            "content-type": "application/json",
            "user-agent": userAgent,
            ...signature,
            ...(token !== null ? { authorization: `Bearer ${token}` } : {})
          },
          body,
          timeoutMs: callTimeout(clock, leaseUntilMs),
          allowHosts,
          localAddress
        })
      })

    /** The call of one attempt, including the token and the one retry after a 401. */
    const deliver = (clock: Clock.Clock, message: DeliveryRecord, endpoint: Endpoint, leaseUntilMs: number): Effect.Effect<SendResult> => {
      // Real elapsed time of the whole attempt (token, call, 401 retry), like the Sender's own.
      const started = performance.now()
      const elapsed = (r: SendResult): SendResult => ({ ...r, durationMs: Math.round(performance.now() - started) })
      let body: string
      try {
        // Serialised once: the signature and the request use these exact bytes. Canonical (keys
        // sorted), so every attempt sends the same bytes whether its payload came from memory
        // (handed over after the commit) or back from the store, which may keep keys in an order
        // of its own (PostgreSQL's jsonb does).
        body = canonicalJson(message.payload)
      } catch (e) {
        return Effect.succeed(notSent(`payload is not serialisable: ${e instanceof Error ? e.message : String(e)}`))
      }
      const auth = endpoint.auth
      if (auth === null) return Effect.map(sendSigned(clock, message, endpoint, body, null, leaseUntilMs), elapsed)

      return Effect.gen(function*() {
        const first = yield* Effect.either(tokens.get(auth))
        if (first._tag === "Left") return elapsed(notSent(first.left.message))
        const result = yield* sendSigned(clock, message, endpoint, body, first.right, leaseUntilMs)
        if (result.status !== 401) return elapsed(result)

        // The token may have been revoked or expired early: get a new one and try once more
        // within this attempt, so a rotated credential doesn't cost a five-minute retry.
        yield* tokens.invalidate(auth, first.right)
        const second = yield* Effect.either(tokens.get(auth))
        if (second._tag === "Left") {
          return elapsed({ ...result, error: `receiver answered 401; ${second.left.message}` })
        }
        return elapsed(yield* sendSigned(clock, message, endpoint, body, second.right, leaseUntilMs))
      })
    }

    /** One call of a subscriber's handler, within the same budget as an HTTP call. */
    const handle = (clock: Clock.Clock, message: DeliveryRecord, subscriber: string, handler: SubscriberHandler, leaseUntilMs: number) =>
      Effect.suspend(() => {
        const started = performance.now()
        const budget = callTimeout(clock, leaseUntilMs)
        return Effect.tryPromise({
          try: async () => {
            await handler({
              id: message.id,
              subscriber,
              organization_id: message.organization_id,
              event_type: message.event_type,
              regulation: message.regulation,
              payload: message.payload,
              attempt: message.attempts_count + 1,
              created_at: message.created_at
            })
          },
          catch: (e) => e instanceof Error ? e.message : String(e)
        }).pipe(
          Effect.timeoutFail({ duration: Duration.millis(budget), onTimeout: () => `handler did not settle within ${budget} ms` }),
          Effect.either,
          Effect.map((settled): SendResult => {
            const durationMs = Math.round(performance.now() - started)
            return Either.isRight(settled)
              ? { status: 204, durationMs, error: null, responseExcerpt: null }
              : { status: null, durationMs, error: (settled.left || "handler failed").slice(0, MAX_HANDLER_ERROR), responseExcerpt: null }
          })
        )
      })

    /**
     * One message's attempt, from the checks before the call to its recorded outcome. Every
     * delivered message takes this path, so it is a few Effect steps rather than a generator's
     * one per line: the round's clock is read directly, and the span and its annotations are
     * only made when a tracer is installed (`tracing`, read once per round).
     */
    const processOne = (clock: Clock.Clock, tracing: boolean, message: DeliveryRecord, leaseUntilMs: number) => {
      // The message's ids annotate the lines logged about it, at the lines themselves: wrapping
      // every attempt in `Effect.annotateLogs` cost each message a copy of its fiber's references
      // though most attempts log nothing.
      const logged = <A, E, R>(line: Effect.Effect<A, E, R>, more?: Record<string, unknown>) =>
        Effect.annotateLogs(line, { delivery_id: message.id, webhook_id: message.webhook_id, ...more })

      /** Records the attempt and the message's next state. */
      const record = (attemptedAtMs: number, subscriber: string | undefined, result: SendResult, gone: boolean) => {
        const nowMs = clock.unsafeCurrentTimeMillis()
        const decision = gone
          ? { outcome: unavailable(message.attempts_count), disable: false }
          : decide({ result, previousAttempts: message.attempts_count, retrySchedule, nowMs })
        const completed = queue.complete({
          id: message.id,
          workerId,
          now: iso(nowMs),
          outcome: decision.outcome,
          attempt: {
            // Time-ordered, like every other id: an attempt lands at the end of its table's
            // primary-key index instead of on a random page of it.
            id: uuidV7(attemptedAtMs),
            delivery_id: message.id,
            organization_id: message.organization_id,
            webhook_id: message.webhook_id,
            attempted_at: iso(attemptedAtMs),
            status_code: result.status,
            succeeded: isSuccess(result.status),
            duration_ms: result.durationMs,
            error: result.error,
            response_excerpt: result.responseExcerpt
          }
        })
        const settled = decision.outcome.status
        const after = (applied: boolean): Effect.Effect<void> => {
          const counted = metrics.deliveryAttempt(settled === "pending" ? "retry" : settled, result.durationMs / 1000)
          const annotated = tracing ? Effect.zipRight(annotateSpan("webhook.outcome", settled), counted) : counted
          if (!applied) return Effect.zipRight(annotated, logged(Effect.logWarning("lease lost during the attempt; only the attempt was logged")))
          if (settled === "delivered") return annotated
          // What a host's handler threw is its own text, which may name a person: the delivery log
          // keeps it for the organization, the server log only that the handler failed.
          const error = subscriber !== undefined && result.error !== null ? "handler failed" : result.error ?? ""
          return Effect.zipRight(
            annotated,
            logged(Effect.logInfo("webhook attempt failed"), { status: result.status ?? "none", error, next: settled })
          )
        }
        const applied = Effect.flatMap(completed, after)
        return decision.disable ? Effect.zipRight(endpoints.disable(message.webhook_id, "receiver answered 410 Gone"), applied) : applied
      }

      const attempt: Effect.Effect<void> = Effect.suspend(() => {
        if (stopped) {
          // Claimed but not started when the dispatcher began stopping: given back once the loop
          // has ended (`giveBack`), or, if that fails, brought back by its lease.
          left.push(message.id)
          return Effect.void
        }
        const attemptedAtMs = clock.unsafeCurrentTimeMillis()
        if (attemptedAtMs >= leaseUntilMs) {
          // Waited too long behind other messages of the batch; another worker may own it now.
          return logged(Effect.logWarning("lease expired before sending; left to be claimed again"))
        }
        const subscriber = subscriberOf(message.webhook_id)
        if (subscriber !== undefined) {
          const handler = subscribers?.get(subscriber)
          if (handler === undefined) {
            // Unsubscribed here since the claim: its lease brings it back for a process that has it.
            return logged(Effect.logWarning("no handler for the subscriber in this process any more; left to be claimed again"))
          }
          return Effect.flatMap(handle(clock, message, subscriber, handler, leaseUntilMs), (result) =>
            record(attemptedAtMs, subscriber, result, false))
        }
        return Effect.flatMap(endpoints.get(message.webhook_id), (found) => {
          if (Option.isNone(found)) return record(attemptedAtMs, undefined, notSent("webhook removed"), true)
          if (!found.value.enabled) return record(attemptedAtMs, undefined, notSent("webhook disabled"), true)
          return Effect.flatMap(deliver(clock, message, found.value, leaseUntilMs), (result) =>
            record(attemptedAtMs, undefined, result, false))
        })
      })
      return (tracing ? attemptSpan(message)(attempt) : attempt).pipe(
        // One broken message must not stop the batch; it stays leased and comes back later.
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : logged(Effect.logError("webhook delivery crashed", cause))
        )
      )
    }

    /** Messages this dispatcher holds and did not start because it was stopping. */
    const left: Array<string> = []

    /** When this dispatcher last claimed, so a flow of handed-over messages does not starve its claims. */
    let lastClaimMs = Number.NEGATIVE_INFINITY

    const runOnce: Effect.Effect<number> = Effect.gen(function*() {
      const clock = yield* Effect.clock
      const tracing = yield* tracingEnabled
      const nowMs = clock.unsafeCurrentTimeMillis()
      lastClaimMs = nowMs
      const leaseUntilMs = nowMs + leaseMs
      const claimed = yield* queue.claim({
        now: iso(nowMs),
        leaseUntil: iso(leaseUntilMs),
        workerId,
        limit: batchSize,
        subscribers: subscribers?.names()
      })
      yield* Effect.forEach(claimed, (m) => processOne(clock, tracing, m, leaseUntilMs), { concurrency, discard: true })
      return claimed.length
    })

    /** Sleeps until the next message is due, the poll interval passes, or `notify` is called. */
    const idle = Effect.gen(function*() {
      const nowMs = yield* Clock.currentTimeMillis
      const next = yield* queue.nextDueAt({ subscribers: subscribers?.names() })
      const dueIn = Option.isSome(next) ? Date.parse(next.value) - nowMs : Number.NaN
      const waitMs = Number.isNaN(dueIn) ? pollIntervalMs : Math.max(MIN_IDLE_MS, Math.min(pollIntervalMs, dueIn))
      yield* Effect.raceFirst(pause(waitMs), Queue.take(wake))
    })

    /**
     * Messages handed over after their commit, leased to this dispatcher when they were written,
     * each with its lease's end, in the order they committed.
     */
    const handed: Array<{ readonly message: DeliveryRecord; readonly leaseUntilMs: number }> = []
    let looping = false
    const handOff = DeliveryHandOff.of({
      lease: (nowMs) =>
        config.handOff === false || !looping || stopped || handed.length >= handOffLimit
          ? undefined
          : { workerId, leaseUntil: iso(nowMs + leaseMs) },
      take: {
        run: (values) =>
          Effect.suspend(() => {
            // A write leased before the stop whose transaction committed after the loop ended:
            // nothing here will send it, so it goes back now rather than wait for its lease.
            if (stopped && !looping) return release(values.flatMap((v) => v.messages.map((m) => m.id)))
            for (const { lease, messages } of values) {
              const leaseUntilMs = Date.parse(lease.leaseUntil)
              for (const message of messages) handed.push({ message, leaseUntilMs })
            }
            return Effect.asVoid(Queue.offer(wake, undefined))
          })
      }
    })

    /**
     * Sends up to a batch of the messages handed over, then claims as well when the last claim
     * is a poll interval old: retries and other processes' messages keep their turn under a
     * steady flow of new ones.
     */
    const sendHanded = Effect.flatMap(Effect.clock, (clock) =>
      Effect.flatMap(tracingEnabled, (tracing) => {
        const batch = handed.splice(0, batchSize)
        const sent = Effect.forEach(batch, (h) => processOne(clock, tracing, h.message, h.leaseUntilMs), { concurrency, discard: true })
        return Effect.zipRight(sent, Effect.suspend(() =>
          !stopped && clock.unsafeCurrentTimeMillis() - lastClaimMs >= pollIntervalMs ? Effect.asVoid(runOnce) : Effect.void))
      }))

    const round = Effect.suspend(() => handed.length > 0 ? sendHanded : Effect.flatMap(runOnce, (n) => (n > 0 ? Effect.void : idle))).pipe(
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.failCause(cause)
          : Effect.logError("webhook dispatcher round failed", cause).pipe(Effect.zipRight(pause(pollIntervalMs)))
      )
    )

    /** Rounds until `stop`: a round in progress finishes its calls in flight and records their attempts. */
    const loop: Effect.Effect<void> = Effect.gen(function*() {
      looping = true
      while (!stopped) yield* round
    }).pipe(Effect.ensuring(Effect.sync(() => (looping = false))), Effect.annotateLogs({ worker_id: workerId }))
    const running = Effect.sync(() => looping && !stopped)

    /**
     * After the loop ended: the messages it holds and will not send (handed over, or claimed and
     * not started) go back to `pending`, for another dispatcher to claim at once. If that fails
     * (the store is gone), their leases bring them back, as after a crash.
     */
    const giveBack: Effect.Effect<void> = Effect.suspend(() =>
      release([...handed.splice(0).map((h) => h.message.id), ...left.splice(0)])
    )
    const release = (ids: ReadonlyArray<string>): Effect.Effect<void> =>
      ids.length === 0 ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (nowMs) => queue.release({ ids, workerId, now: iso(nowMs) })).pipe(
        Effect.flatMap((n) => Effect.logInfo(`gave back ${n} webhook messages not sent before stopping`)),
        Effect.catchAllCause((cause) =>
          Effect.logWarning("could not give back the webhook messages not sent before stopping; their leases will", cause)),
        Effect.annotateLogs({ worker_id: workerId })
      )

    const stop = Effect.suspend(() => {
      stopped = true
      return Effect.asVoid(Deferred.succeed(stopping, undefined))
    })
    const service: DispatcherService = { workerId, runOnce, notify: Effect.asVoid(Queue.offer(wake, undefined)), running }
    return { service, loop, stop, giveBack, handOff }
  })

/**
 * A dispatcher without its loop: `runOnce` is called by hand (tests, or an external scheduler).
 * It delivers to the in-process subscribers of a `Subscribers` registry when one is provided.
 */
export const make = (config: DispatcherConfig = {}) =>
  Effect.flatMap(Effect.serviceOption(Subscribers), (registry) =>
    Effect.map(build(config, Option.getOrUndefined(registry)), (b) => b.service))

export class Dispatcher extends Context.Tag("@cmp/webhooks/Dispatcher")<Dispatcher, DispatcherService>() {
  static readonly make = make

  /**
   * The dispatcher with its loop running until the layer's scope closes. It also provides core's
   * `OutboxSignal`, so `signalOutbox` after a committed change wakes this loop, and the
   * `Subscribers` registry of this process's in-process subscribers it delivers to.
   *
   * Closing drains: no new claims, and the calls in flight finish (each within `timeoutMs`, and
   * before its lease ends) and record their attempts before the layers below, such as the store,
   * are released. The messages it holds and did not send (claimed in that round and not
   * started, or handed over in memory) are then given back as `pending`, for another dispatcher
   * to claim at once; where that fails, and after a crash, they come back when their lease runs
   * out. It also provides `DeliveryHandOff`: this process's messages to webhooks are written
   * leased to this dispatcher and handed to it after their commit.
   */
  static readonly layer = (
    config: DispatcherConfig = {}
  ): Layer.Layer<Dispatcher | OutboxSignal | DeliveryHandOff | Subscribers, never, DeliveryQueue | Endpoints | Metrics> =>
    Layer.scopedContext(
      Effect.gen(function*() {
        const subscribers = makeSubscribers()
        const { giveBack, handOff, loop, service, stop } = yield* build(config, subscribers)
        const fiber = yield* Effect.forkScoped(loop)
        // Added after the fork, so it runs before the fork's own finalizer interrupts the loop.
        yield* Effect.addFinalizer(() => Effect.zipRight(Effect.zipRight(stop, Fiber.await(fiber)), giveBack))
        return Context.make(Dispatcher, service).pipe(
          Context.add(OutboxSignal, OutboxSignal.of({ notify: service.notify })),
          Context.add(DeliveryHandOff, handOff),
          Context.add(Subscribers, subscribers)
        )
      })
    )

  /** A dispatcher whose loop is not started. */
  static readonly layerManual = (config: DispatcherConfig = {}): Layer.Layer<Dispatcher, never, DeliveryQueue | Endpoints | Metrics> =>
    Layer.effect(Dispatcher, make(config))

  static readonly runOnce: Effect.Effect<number, never, Dispatcher> = Effect.flatMap(Dispatcher, (d) => d.runOnce)

  /** Call after committing new messages: an idle loop polls at once instead of at its next tick. */
  static readonly notify: Effect.Effect<void, never, Dispatcher> = Effect.flatMap(Dispatcher, (d) => d.notify)
}
