import { canonicalJson, DeliveryHandOff, DeliveryQueue, type Endpoint, signalOutbox } from "@cmp/core"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import { Dispatcher, type DispatcherConfig } from "../src/Dispatcher.js"
import { oauthServer } from "./OAuthServer.js"
import { closedPort, newSecret, realSleep, receiver, verify, waitFor } from "./Receiver.js"
import { eventually, makeOutbox, type TestOutbox } from "./TestOutbox.js"

const T0 = Date.parse("2030-01-01T00:00:00.000Z")
const iso = (ms: number) => new Date(ms).toISOString()
const payload = {
  type: "user.created",
  parameters: { entity: { id: "u1", name: "Zoë ✓", consents: { purposes: [{ id: "p1", enabled: true }] } } },
  regulation: "gdpr"
}

/** An outbox holding one message for webhook `wh_1` at `url`, the test clock at T0. */
const setup = (url: string, endpoint: Partial<Endpoint> = {}) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(T0)
    const out = yield* makeOutbox
    const secret = newSecret()
    out.endpoints.put({
      id: "wh_1",
      organization_id: "org_1",
      url,
      enabled: true,
      signingSecret: secret,
      auth: null,
      ...endpoint
    })
    const msg = yield* out.enqueue({ webhookId: "wh_1", payload, now: iso(T0) })
    return { out, secret, msg }
  })

const dispatcher = (out: TestOutbox, config: DispatcherConfig = {}) =>
  Dispatcher.make({ allowHosts: ["127.0.0.1"], workerId: "w1", ...config }).pipe(Effect.provide(out.layer))

const minutes = (n: number) => n * 60_000

describe("Dispatcher", () => {
  it.scoped("2xx: delivered, signed over the exact bytes, one attempt logged", () =>
    Effect.gen(function*() {
      const r = yield* receiver((_req, res) => res.writeHead(200).end("ok"))
      const { msg, out, secret } = yield* setup(r.url)
      const d = yield* dispatcher(out)
      assert.strictEqual(yield* d.runOnce, 1)

      const req = r.requests[0]!
      // Canonical JSON (keys sorted): the same bytes on every attempt, whatever order the store keeps.
      assert.strictEqual(req.body, canonicalJson(payload))
      assert.notStrictEqual(req.body, JSON.stringify(payload))
      assert.strictEqual(req.headers["content-type"], "application/json")
      assert.match(String(req.headers["user-agent"]), /^cmp-webhooks\//)
      assert.strictEqual(req.headers["webhook-id"], msg.id)
      assert.strictEqual(req.headers["webhook-timestamp"], String(T0 / 1000))
      assert.isUndefined(req.headers.authorization)
      assert.deepStrictEqual(verify(secret, req), payload)

      const stored = yield* out.message(msg.id)
      assert.deepStrictEqual(
        [stored.status, stored.attempts_count, stored.next_attempt_at, stored.last_status_code],
        ["delivered", 1, null, 200]
      )
      assert.deepStrictEqual([stored.lease_until, stored.leased_by], [null, null])
      const [attempt] = yield* out.attempts(msg.id)
      assert.deepStrictEqual(
        [attempt!.status_code, attempt!.error, attempt!.response_excerpt, attempt!.attempted_at, attempt!.organization_id],
        [200, null, "ok", iso(T0), "org_1"]
      )
      // The log names the webhook and the success, which the delivery stats read by index.
      assert.deepStrictEqual([attempt!.webhook_id, attempt!.succeeded], [msg.webhook_id, true])
      assert.strictEqual(yield* d.runOnce, 0)
      assert.strictEqual(r.requests.length, 1)
    }))

  it.scoped("500 then 200: retried after 5 minutes with the same webhook-id and a fresh timestamp", () =>
    Effect.gen(function*() {
      const r = yield* receiver((_req, res, i) => res.writeHead(i < 2 ? 500 : 200).end())
      const { msg, out, secret } = yield* setup(r.url)
      const d = yield* dispatcher(out)

      assert.strictEqual(yield* d.runOnce, 1)
      const first = yield* out.message(msg.id)
      assert.deepStrictEqual(
        [first.status, first.attempts_count, first.next_attempt_at],
        ["pending", 1, iso(T0 + minutes(5))]
      )
      // Not due yet: nothing is claimed a second before.
      yield* TestClock.adjust("299 seconds")
      assert.strictEqual(yield* d.runOnce, 0)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* d.runOnce, 1)
      assert.strictEqual((yield* out.message(msg.id)).next_attempt_at, iso(T0 + minutes(10)))
      yield* TestClock.adjust("5 minutes")
      assert.strictEqual(yield* d.runOnce, 1)

      const last = yield* out.message(msg.id)
      assert.strictEqual(last.status, "delivered")
      assert.strictEqual(last.attempts_count, 3)
      assert.deepStrictEqual(r.requests.map((q) => q.headers["webhook-id"]), [msg.id, msg.id, msg.id])
      assert.deepStrictEqual(
        r.requests.map((q) => Number(q.headers["webhook-timestamp"])),
        [T0 / 1000, T0 / 1000 + 300, T0 / 1000 + 600]
      )
      for (const q of r.requests) assert.deepStrictEqual(verify(secret, q), payload)
      const attempts = yield* out.attempts(msg.id)
      assert.deepStrictEqual(attempts.map((a) => a.status_code), [500, 500, 200])
      assert.deepStrictEqual(attempts.map((a) => a.succeeded), [false, false, true])
      assert.deepStrictEqual(
        attempts.map((a) => a.attempted_at),
        [iso(T0), iso(T0 + minutes(5)), iso(T0 + minutes(10))]
      )
    }))

  it.scoped("always 500: 6 attempts (1 + 5 retries, 5 minutes apart), then failed for good", () =>
    Effect.gen(function*() {
      const r = yield* receiver((_req, res) => res.writeHead(500).end("down"))
      const { msg, out } = yield* setup(r.url)
      const d = yield* dispatcher(out)
      const next: Array<string | null> = []
      for (let i = 0; i < 6; i++) {
        assert.strictEqual(yield* d.runOnce, 1)
        next.push((yield* out.message(msg.id)).next_attempt_at)
        yield* TestClock.adjust("5 minutes")
      }
      assert.deepStrictEqual(next, [
        iso(T0 + minutes(5)),
        iso(T0 + minutes(10)),
        iso(T0 + minutes(15)),
        iso(T0 + minutes(20)),
        iso(T0 + minutes(25)),
        null
      ])
      const stored = yield* out.message(msg.id)
      assert.deepStrictEqual([stored.status, stored.attempts_count, stored.last_status_code], ["failed", 6, 500])
      const attempts = yield* out.attempts(msg.id)
      assert.strictEqual(attempts.length, 6)
      assert.strictEqual(attempts[5]!.response_excerpt, "down")
      yield* TestClock.adjust("1 day")
      assert.strictEqual(yield* d.runOnce, 0)
      assert.strictEqual(r.requests.length, 6)
    }))

  it.scoped("a configured schedule is followed: [10, 20] gives 3 attempts", () =>
    Effect.gen(function*() {
      const r = yield* receiver((_req, res) => res.writeHead(503).end())
      const { msg, out } = yield* setup(r.url)
      const d = yield* dispatcher(out, { retrySchedule: [10, 20] })
      yield* d.runOnce
      assert.strictEqual((yield* out.message(msg.id)).next_attempt_at, iso(T0 + 10_000))
      yield* TestClock.adjust("10 seconds")
      yield* d.runOnce
      assert.strictEqual((yield* out.message(msg.id)).next_attempt_at, iso(T0 + 30_000))
      yield* TestClock.adjust("20 seconds")
      yield* d.runOnce
      const stored = yield* out.message(msg.id)
      assert.deepStrictEqual([stored.status, stored.attempts_count], ["failed", 3])
    }))

  it.scoped("timeouts and refused connections are retried on the schedule", () =>
    Effect.gen(function*() {
      const hang = yield* receiver(() => {})
      const { msg, out } = yield* setup(hang.url)
      const port = yield* closedPort()
      out.endpoints.put({ ...out.endpoints.get("wh_1")!, id: "wh_2", url: `http://127.0.0.1:${port}/hook` })
      const refused = yield* out.enqueue({ webhookId: "wh_2", payload, now: iso(T0) })
      const d = yield* dispatcher(out, { timeoutMs: 200 })

      assert.strictEqual(yield* d.runOnce, 2)
      const [t] = yield* out.attempts(msg.id)
      assert.deepStrictEqual([t!.status_code, t!.error], [null, "timeout after 200 ms"])
      const timedOut = yield* out.message(msg.id)
      assert.deepStrictEqual([timedOut.status, timedOut.next_attempt_at], ["pending", iso(T0 + minutes(5))])
      const [c] = yield* out.attempts(refused.id)
      assert.strictEqual(c!.status_code, null)
      assert.match(c!.error!, /ECONNREFUSED/)
      const refusedRow = yield* out.message(refused.id)
      assert.deepStrictEqual([refusedRow.status, refusedRow.next_attempt_at], ["pending", iso(T0 + minutes(5))])
      yield* TestClock.adjust("5 minutes")
      assert.strictEqual(yield* d.runOnce, 2)
      assert.strictEqual((yield* out.message(msg.id)).attempts_count, 2)
      assert.strictEqual((yield* out.message(refused.id)).attempts_count, 2)
      assert.strictEqual(hang.requests.length, 2)
    }))

  it.scoped("a 3xx is a failure and its target is not called", () =>
    Effect.gen(function*() {
      const target = yield* receiver()
      const r = yield* receiver((_req, res) => res.writeHead(301, { location: target.url }).end())
      const { msg, out } = yield* setup(r.url)
      const d = yield* dispatcher(out)
      yield* d.runOnce
      const stored = yield* out.message(msg.id)
      assert.deepStrictEqual([stored.status, stored.last_status_code], ["pending", 301])
      assert.strictEqual(target.requests.length, 0)
    }))

  it.scoped("410 Gone: failed at once and the endpoint disabled; its next messages fail without a call", () =>
    Effect.gen(function*() {
      const r = yield* receiver((_req, res) => res.writeHead(410).end())
      const { msg, out } = yield* setup(r.url)
      const d = yield* dispatcher(out)
      yield* d.runOnce
      const stored = yield* out.message(msg.id)
      assert.deepStrictEqual([stored.status, stored.attempts_count], ["failed", 1])
      assert.deepStrictEqual(out.endpoints.disabled, [{ id: "wh_1", reason: "receiver answered 410 Gone" }])

      const later = yield* out.enqueue({ webhookId: "wh_1", payload, now: iso(T0) })
      yield* d.runOnce
      assert.strictEqual((yield* out.message(later.id)).status, "failed")
      assert.deepStrictEqual(
        (yield* out.attempts(later.id)).map((a) => [a.status_code, a.error]),
        [[null, "webhook disabled"]]
      )
      assert.strictEqual(r.requests.length, 1)
    }))

  it.scoped("a removed webhook fails its messages without a call", () =>
    Effect.gen(function*() {
      const r = yield* receiver()
      const { msg, out } = yield* setup(r.url)
      out.endpoints.remove("wh_1")
      const d = yield* dispatcher(out)
      yield* d.runOnce
      const stored = yield* out.message(msg.id)
      assert.deepStrictEqual([stored.status, stored.attempts_count, stored.last_status_code], ["failed", 1, null])
      assert.deepStrictEqual((yield* out.attempts(msg.id)).map((a) => [a.status_code, a.error]), [[null, "webhook removed"]])
      assert.strictEqual(r.requests.length, 0)
    }))

  it.scoped("Retry-After on 429/503 stretches the wait (capped at 24 h); ignored on 500", () =>
    Effect.gen(function*() {
      const answers: Array<[number, string]> = [[429, "3600"], [503, "5"], [429, "9999999"], [500, "3600"]]
      const r = yield* receiver((_req, res, i) => res.writeHead(answers[i]![0], { "retry-after": answers[i]![1] }).end())
      const { msg, out } = yield* setup(r.url)
      const d = yield* dispatcher(out, { retrySchedule: [300, 300, 300, 300, 300] })
      const nextAttemptAt = Effect.map(out.message(msg.id), (m) => m.next_attempt_at)

      yield* d.runOnce
      assert.strictEqual(yield* nextAttemptAt, iso(T0 + 3600_000))
      yield* TestClock.adjust("1 hour")
      const t1 = T0 + 3600_000
      yield* d.runOnce
      assert.strictEqual(yield* nextAttemptAt, iso(t1 + 300_000))
      yield* TestClock.adjust("5 minutes")
      const t2 = t1 + 300_000
      yield* d.runOnce
      assert.strictEqual(yield* nextAttemptAt, iso(t2 + 86_400_000))
      yield* TestClock.adjust("1 day")
      const t3 = t2 + 86_400_000
      yield* d.runOnce
      assert.strictEqual(yield* nextAttemptAt, iso(t3 + 300_000))
      assert.strictEqual(r.requests.length, 4)
    }))

  it.scoped("OAuth: the bearer token is attached and reused across messages", () =>
    Effect.gen(function*() {
      const auth = yield* oauthServer
      const r = yield* receiver()
      const { msg, out } = yield* setup(r.url, {
        auth: { token_url: auth.tokenUrl, client_id: "c", client_secret: "s", scope: "hooks" }
      })
      const second = yield* out.enqueue({ webhookId: "wh_1", payload, now: iso(T0) })
      const d = yield* dispatcher(out)
      assert.strictEqual(yield* d.runOnce, 2)
      assert.strictEqual(auth.requests.length, 1)
      const token = auth.requests[0]!.accessToken!
      assert.deepStrictEqual(r.requests.map((q) => q.headers.authorization), [`Bearer ${token}`, `Bearer ${token}`])
      assert.strictEqual((yield* out.message(msg.id)).status, "delivered")
      assert.strictEqual((yield* out.message(second.id)).status, "delivered")
    }))

  it.scoped("OAuth: a 401 invalidates the token, a new one is fetched and the request retried once", () =>
    Effect.gen(function*() {
      const auth = yield* oauthServer
      let rejected: string | undefined
      const r = yield* receiver((req, res, i) => {
        if (i === 0) rejected = req.headers.authorization
        res.writeHead(req.headers.authorization === rejected ? 401 : 200).end()
      })
      const { msg, out, secret } = yield* setup(r.url, {
        auth: { token_url: auth.tokenUrl, client_id: "c", client_secret: "s" }
      })
      const d = yield* dispatcher(out)
      yield* d.runOnce
      assert.strictEqual(auth.requests.length, 2)
      assert.deepStrictEqual(
        r.requests.map((q) => q.headers.authorization),
        [`Bearer ${auth.requests[0]!.accessToken}`, `Bearer ${auth.requests[1]!.accessToken}`]
      )
      assert.deepStrictEqual(r.requests.map((q) => q.headers["webhook-id"]), [msg.id, msg.id])
      verify(secret, r.requests[1]!)
      // One attempt, which succeeded.
      const stored = yield* out.message(msg.id)
      assert.deepStrictEqual([stored.status, stored.attempts_count], ["delivered", 1])
      assert.deepStrictEqual((yield* out.attempts(msg.id)).map((a) => a.status_code), [200])
    }))

  it.scoped("OAuth: a receiver that keeps answering 401 gets exactly one retry per attempt", () =>
    Effect.gen(function*() {
      const auth = yield* oauthServer
      const r = yield* receiver((_req, res) => res.writeHead(401).end())
      const { msg, out } = yield* setup(r.url, {
        auth: { token_url: auth.tokenUrl, client_id: "c", client_secret: "s" }
      })
      const d = yield* dispatcher(out)
      yield* d.runOnce
      assert.strictEqual(r.requests.length, 2)
      assert.strictEqual(auth.requests.length, 2)
      const stored = yield* out.message(msg.id)
      assert.deepStrictEqual(
        [stored.status, stored.attempts_count, stored.last_status_code],
        ["pending", 1, 401]
      )
    }))

  it.scoped("OAuth: a failing token endpoint is a failed attempt without a call to the receiver", () =>
    Effect.gen(function*() {
      const auth = yield* oauthServer
      const r = yield* receiver()
      const { msg, out } = yield* setup(r.url, {
        auth: { token_url: auth.tokenUrl, client_id: "c", client_secret: "s" }
      })
      auth.failNext = { status: 400, body: { error: "invalid_client" } }
      const d = yield* dispatcher(out)
      yield* d.runOnce
      assert.strictEqual(r.requests.length, 0)
      assert.strictEqual((yield* out.message(msg.id)).status, "pending")
      assert.match((yield* out.attempts(msg.id))[0]!.error!, /^token endpoint answered 400/)
      yield* TestClock.adjust("5 minutes")
      yield* d.runOnce
      assert.strictEqual((yield* out.message(msg.id)).status, "delivered")
    }))

  it.scoped("a message whose worker died is claimed again after its lease (at least once)", () =>
    Effect.gen(function*() {
      const r = yield* receiver()
      const { msg, out } = yield* setup(r.url)
      // A worker claims it and dies without completing.
      const claimed = yield* out.queue.claim({
        now: iso(T0),
        leaseUntil: iso(T0 + 45_000),
        workerId: "dead",
        limit: 10
      })
      assert.strictEqual(claimed.length, 1)
      const d = yield* dispatcher(out, { workerId: "alive" })
      assert.strictEqual(yield* d.runOnce, 0)
      yield* TestClock.adjust("44 seconds")
      assert.strictEqual(yield* d.runOnce, 0)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* d.runOnce, 1)
      assert.strictEqual((yield* out.message(msg.id)).status, "delivered")
      assert.strictEqual(r.requests.length, 1)
      // The dead worker coming back can only add to the log.
      const applied = yield* out.queue.complete({
        id: msg.id,
        workerId: "dead",
        now: iso(T0 + 50_000),
        outcome: { status: "pending", attempts_count: 1, next_attempt_at: iso(T0), last_status_code: 500 },
        attempt: {
          id: "a",
          delivery_id: msg.id,
          organization_id: "org_1",
          webhook_id: msg.webhook_id,
          attempted_at: iso(T0),
          status_code: 500,
          succeeded: false,
          duration_ms: 1,
          error: null,
          response_excerpt: null
        }
      })
      assert.isFalse(applied)
      assert.strictEqual((yield* out.message(msg.id)).status, "delivered")
      assert.deepStrictEqual(
        (yield* out.attempts(msg.id)).map((a) => [a.id === "a", a.status_code]),
        [[true, 500], [false, 200]]
      )
    }))

  it.scoped("the lease covers the call: default leaseMs = timeoutMs + 30 s", () =>
    Effect.gen(function*() {
      const r = yield* receiver()
      const { msg, out } = yield* setup(r.url)
      // Claim through a dispatcher that never completes: the send is interrupted mid-flight.
      const hang = yield* receiver(() => {})
      out.endpoints.put({ ...out.endpoints.get("wh_1")!, url: hang.url })
      const d = yield* dispatcher(out, { timeoutMs: 10_000, workerId: "w1" })
      const fiber = yield* Effect.fork(d.runOnce)
      yield* waitFor(() => hang.requests.length === 1)
      const leased = yield* out.message(msg.id)
      assert.deepStrictEqual(
        [leased.status, leased.lease_until, leased.leased_by],
        ["delivering", iso(T0 + 40_000), "w1"]
      )
      yield* Fiber.interrupt(fiber)
      out.endpoints.put({ ...out.endpoints.get("wh_1")!, url: r.url })
      const other = yield* dispatcher(out, { workerId: "w2" })
      yield* TestClock.adjust("39 seconds")
      assert.strictEqual(yield* other.runOnce, 0)
      yield* TestClock.adjust("1 second")
      assert.strictEqual(yield* other.runOnce, 1)
      assert.strictEqual((yield* out.message(msg.id)).status, "delivered")
    }))

  it.scoped("two dispatchers on one queue never send a message twice", () =>
    Effect.gen(function*() {
      const r = yield* receiver((_req, res) => setTimeout(() => res.writeHead(200).end(), 5))
      const { out } = yield* setup(r.url)
      for (let i = 0; i < 59; i++) yield* out.enqueue({ webhookId: "wh_1", payload: { ...payload, i }, now: iso(T0) })
      const a = yield* dispatcher(out, { workerId: "a", batchSize: 7, concurrency: 4 })
      const b = yield* dispatcher(out, { workerId: "b", batchSize: 7, concurrency: 4 })
      const drain = (d: typeof a) =>
        Effect.gen(function*() {
          let total = 0
          for (;;) {
            const n = yield* d.runOnce
            if (n === 0) return total
            total += n
          }
        })
      const [na, nb] = yield* Effect.all([drain(a), drain(b)], { concurrency: 2 })
      assert.strictEqual(na + nb, 60)
      assert.isAbove(na, 0)
      assert.isAbove(nb, 0)
      const ids = r.requests.map((q) => String(q.headers["webhook-id"]))
      assert.strictEqual(ids.length, 60)
      assert.strictEqual(new Set(ids).size, 60)
    }))

  it.scoped("the loop: notify wakes it at once; otherwise it sleeps until the next due message", () =>
    Effect.gen(function*() {
      const r = yield* receiver()
      yield* TestClock.setTime(T0)
      const out = yield* makeOutbox
      out.endpoints.put({ id: "wh_1", organization_id: "org_1", url: r.url, enabled: true, signingSecret: newSecret(), auth: null })
      const ctx = yield* Layer.build(
        Dispatcher.layer({ allowHosts: ["127.0.0.1"], pollIntervalMs: 3_600_000 }).pipe(Layer.provide(out.layer))
      )
      const notify = Effect.provide(Dispatcher.notify, ctx)
      // Core's signalOutbox (called after committing messages) reaches the same loop.
      const coreSignal = Effect.provide(signalOutbox, ctx)
      const status = (id: string) => Effect.map(out.message(id), (m) => m.status)
      yield* realSleep(50) // the loop found nothing and sleeps (for an hour of test time)

      const first = yield* out.enqueue({ webhookId: "wh_1", payload, now: iso(T0) })
      yield* realSleep(100)
      assert.strictEqual(r.requests.length, 0)
      yield* notify
      assert.isTrue(yield* eventually(Effect.map(status(first.id), (s) => s === "delivered")))

      // Due in 2 s of test time: the loop sleeps until then, not for its hour-long poll interval.
      const second = yield* out.enqueue({ webhookId: "wh_1", payload, now: iso(T0 + 2000) })
      yield* coreSignal // it wakes, finds nothing due, and goes to sleep until the due time
      yield* realSleep(50)
      assert.strictEqual(yield* status(second.id), "pending")
      yield* TestClock.adjust("2 seconds")
      assert.isTrue(yield* eventually(Effect.map(status(second.id), (s) => s === "delivered")))
      assert.strictEqual(r.requests.length, 2)
    }))

  it.scoped("the loop survives a failing round and goes on after its poll interval", () =>
    Effect.gen(function*() {
      const r = yield* receiver()
      const { msg, out } = yield* setup(r.url)
      let failures = 1
      const flaky = Layer.succeed(DeliveryQueue, {
        ...out.queue,
        claim: (options) => failures-- > 0 ? Effect.dieMessage("database went away") : out.queue.claim(options)
      })
      yield* Layer.build(
        Dispatcher.layer({ allowHosts: ["127.0.0.1"], pollIntervalMs: 1000 }).pipe(
          Layer.provide(Layer.merge(out.layer, flaky))
        )
      )
      const status = Effect.map(out.message(msg.id), (m) => m.status)
      yield* realSleep(50)
      assert.strictEqual(yield* status, "pending")
      yield* TestClock.adjust("1 second")
      assert.isTrue(yield* eventually(Effect.map(status, (s) => s === "delivered")))
    }))

  it.scoped("closing the layer drains: the call in flight is answered and recorded, nothing more is sent", () =>
    Effect.gen(function*() {
      let answer: (() => void) | undefined
      const r = yield* receiver((_req, res) => {
        answer = () => res.writeHead(200).end("ok")
      })
      const { msg, out } = yield* setup(r.url)
      const second = yield* out.enqueue({ webhookId: "wh_1", payload, now: iso(T0) })
      const scope = yield* Scope.make()
      yield* Layer.buildWithScope(
        Dispatcher.layer({ allowHosts: ["127.0.0.1"], concurrency: 1 }).pipe(Layer.provide(out.layer)),
        scope
      )
      assert.isTrue(yield* waitFor(() => r.requests.length === 1))
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* realSleep(50)
      // The call is still unanswered, so closing waits for it.
      assert.isTrue(Option.isNone(yield* Fiber.poll(closing)))
      answer!()
      yield* Fiber.join(closing)

      const delivered = yield* out.message(msg.id)
      assert.deepStrictEqual([delivered.status, delivered.attempts_count], ["delivered", 1])
      // Claimed in the same round but not started: never sent, and given back for another to claim at once.
      const left = yield* out.message(second.id)
      assert.deepStrictEqual([left.status, left.attempts_count, left.leased_by, left.lease_until, left.next_attempt_at], ["pending", 0, null, null, iso(T0)])
      assert.strictEqual(r.requests.length, 1)
    }))

  /** A running dispatcher on `out` whose claims find nothing: what it sends came from memory. */
  const handingOff = (out: TestOutbox, config: DispatcherConfig = {}, queue: DeliveryQueue["Type"] = out.queue) =>
    Effect.map(
      Layer.build(
        Dispatcher.layer({ allowHosts: ["127.0.0.1"], workerId: "w1", pollIntervalMs: 3_600_000, ...config }).pipe(
          Layer.provide(Layer.merge(out.layer, Layer.succeed(DeliveryQueue, { ...queue, claim: () => Effect.succeed([]) })))
        )
      ),
      (ctx) => Context.get(ctx, DeliveryHandOff)
    )

  it.scoped("hand-off: a committed message is sent from memory without a claim; one whose transaction rolled back is never sent", () =>
    Effect.gen(function*() {
      const r = yield* receiver()
      const { out, secret } = yield* setup(r.url)
      const handOff = yield* handingOff(out)
      yield* realSleep(50) // the loop runs
      const lost = yield* Effect.either(out.enqueueHanded(handOff, { webhookId: "wh_1", payload: { ...payload, n: 1 }, now: iso(T0) }, Effect.fail("rolled back")))
      assert.isTrue(lost._tag === "Left")
      const kept = yield* out.enqueueHanded(handOff, { webhookId: "wh_1", payload: { ...payload, n: 2 }, now: iso(T0) })
      assert.isTrue(kept.leased)
      assert.isTrue(yield* eventually(Effect.map(out.message(kept.record.id), (m) => m.status === "delivered")))
      yield* realSleep(50)
      assert.deepStrictEqual(r.requests.map((q) => q.headers["webhook-id"]), [kept.record.id])
      // Signed as any message: the signature verifies over the body written.
      assert.deepStrictEqual(verify(secret, r.requests[0]!), { ...payload, n: 2 })
      assert.deepStrictEqual((yield* out.attempts(kept.record.id)).map((a) => a.status_code), [200])
      // The rolled-back message's row went with its transaction (the setup's own message waits for a claim).
      assert.strictEqual((yield* out.message("msg_1")).status, "pending")
      assert.isFalse(yield* out.exists(`msg_${Number(kept.record.id.slice(4)) - 1}`))
    }))

  /**
   * A dispatcher holding a message in flight (unanswered) and two handed over behind it, at its
   * limit: the fourth is written for a claim. Then it stops: the call in flight is answered and
   * recorded, and new messages get no lease.
   */
  const stoppedHolding = (out: TestOutbox, queue?: DeliveryQueue["Type"]) =>
    Effect.gen(function*() {
      const answers: Array<() => void> = []
      const r = yield* receiver((_req, res) => void answers.push(() => res.writeHead(200).end("ok")))
      out.endpoints.put({ ...out.endpoints.get("wh_1")!, url: r.url })
      const scope = yield* Scope.make()
      const handOff = yield* Scope.extend(handingOff(out, { batchSize: 1, concurrency: 1, handOffLimit: 2 }, queue), scope)
      yield* realSleep(50)
      const enqueue = (n: number) => out.enqueueHanded(handOff, { webhookId: "wh_1", payload: { ...payload, n }, now: iso(T0) })
      const first = yield* enqueue(1)
      assert.isTrue(yield* waitFor(() => r.requests.length === 1)) // in flight, unanswered
      const waiting = [yield* enqueue(2), yield* enqueue(3)]
      const over = yield* enqueue(4)
      assert.deepStrictEqual([...waiting.map((w) => w.leased), over.leased], [true, true, false])
      assert.deepStrictEqual([(yield* out.message(over.record.id)).status, (yield* out.message(over.record.id)).leased_by], ["pending", null])
      // Stopping: the call in flight is answered and recorded; nothing more is sent, and nothing new is leased.
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      yield* realSleep(50)
      assert.isFalse((yield* enqueue(5)).leased)
      answers[0]!()
      yield* Fiber.join(closing)
      assert.strictEqual((yield* out.message(first.record.id)).status, "delivered")
      assert.strictEqual(r.requests.length, 1)
      return waiting.map((w) => w.record.id)
    })

  /** Another dispatcher's round at the test clock's time, sending to a fresh receiver: the ids it sent. */
  const otherRound = (out: TestOutbox) =>
    Effect.gen(function*() {
      const r = yield* receiver()
      out.endpoints.put({ ...out.endpoints.get("wh_1")!, url: r.url })
      const other = yield* dispatcher(out, { workerId: "w2" })
      yield* other.runOnce
      return r.requests.map((q) => String(q.headers["webhook-id"]))
    })

  it.scoped("hand-off: past its limit, or once stopping, new messages are written pending; what was handed over and not sent is given back for another to claim at once", () =>
    Effect.gen(function*() {
      const { out } = yield* setup("http://127.0.0.1:1/unused")
      const waiting = yield* stoppedHolding(out)
      for (const id of waiting) {
        const left = yield* out.message(id)
        assert.deepStrictEqual([left.status, left.leased_by, left.lease_until, left.next_attempt_at, left.attempts_count], ["pending", null, null, iso(T0), 0])
      }
      // The setup's message, the one over the limit, the one written while stopping, and the two given back.
      const sent = yield* otherRound(out)
      assert.strictEqual(sent.length, 5)
      for (const id of waiting) assert.include(sent, id)
    }))

  it.scoped("hand-off: where the give-back fails (as after a crash), what was handed over and not sent stays leased and is claimed after its lease", () =>
    Effect.gen(function*() {
      const { out } = yield* setup("http://127.0.0.1:1/unused")
      const waiting = yield* stoppedHolding(out, { ...out.queue, release: () => Effect.dieMessage("database went away") })
      for (const id of waiting) {
        const left = yield* out.message(id)
        assert.deepStrictEqual([left.status, left.leased_by, left.lease_until, left.attempts_count], ["delivering", "w1", iso(T0 + 45_000), 0])
      }
      assert.deepStrictEqual((yield* otherRound(out)).length, 3)
      yield* TestClock.adjust("45 seconds")
      assert.sameMembers(yield* otherRound(out), waiting)
    }))

  it.scoped("hand-off: a message leased before the stop whose transaction commits after the give-back is given back at once", () =>
    Effect.gen(function*() {
      const { out } = yield* setup("http://127.0.0.1:1/unused")
      const scope = yield* Scope.make()
      // Its rounds never read the store, so its stop does not wait for the open transaction.
      const quiet = { ...out.queue, nextDueAt: () => Effect.succeed(Option.none<string>()) }
      const handOff = yield* Scope.extend(handingOff(out, {}, quiet), scope)
      yield* realSleep(50) // the loop runs
      const gate = yield* Deferred.make<void>()
      const late = yield* Effect.fork(out.enqueueHanded(handOff, { webhookId: "wh_1", payload: { ...payload, n: 1 }, now: iso(T0) }, Deferred.await(gate)))
      yield* realSleep(50) // leased and written, its transaction open
      yield* Scope.close(scope, Exit.void)
      yield* Deferred.succeed(gate, undefined)
      const written = yield* Fiber.join(late)
      assert.isTrue(written.leased)
      const left = yield* out.message(written.record.id)
      assert.deepStrictEqual([left.status, left.leased_by, left.lease_until, left.next_attempt_at], ["pending", null, null, iso(T0)])
      // Another dispatcher claims it now, not 45 seconds later.
      assert.include(yield* otherRound(out), written.record.id)
    }))

  it.scoped("an invalid configuration is refused", () =>
    Effect.gen(function*() {
      const out = yield* makeOutbox
      const exit = yield* Effect.exit(Dispatcher.make({ retrySchedule: [300, -1], timeoutMs: 0 }).pipe(Effect.provide(out.layer)))
      assert.isTrue(Exit.isFailure(exit))
      assert.match(String(Cause.squash((exit as Exit.Failure<never, never>).cause)), /retrySchedule.*timeoutMs/)
    }))
})
