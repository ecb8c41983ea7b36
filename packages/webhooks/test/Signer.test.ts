import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { Webhook } from "standardwebhooks"
import { sign } from "../src/Signer.js"
import { newSecret } from "./Receiver.js"

describe("Signer", () => {
  const body = JSON.stringify({ type: "user.created", parameters: { entity: { name: "Zoë ✓" } }, regulation: "gdpr" })

  it.effect("produces Standard Webhooks headers that standardwebhooks verifies", () =>
    Effect.gen(function*() {
      const secret = newSecret()
      const now = Math.floor(Date.now() / 1000)
      const headers = yield* sign({ secret, msgId: "msg_1", timestampSeconds: now, body })
      assert.strictEqual(headers["webhook-id"], "msg_1")
      assert.strictEqual(headers["webhook-timestamp"], String(now))
      assert.match(headers["webhook-signature"], /^v1,[A-Za-z0-9+/]+=*$/)
      assert.deepStrictEqual(new Webhook(secret).verify(body, { ...headers }), JSON.parse(body))
    }))

  it.effect("a tampered body, another id or another secret fails verification", () =>
    Effect.gen(function*() {
      const secret = newSecret()
      const now = Math.floor(Date.now() / 1000)
      const headers = yield* sign({ secret, msgId: "msg_1", timestampSeconds: now, body })
      assert.throws(() => new Webhook(secret).verify(body.replace("gdpr", "ccpa"), { ...headers }))
      // Re-serialised with other spacing: same JSON value, different bytes, so it fails.
      assert.throws(() => new Webhook(secret).verify(JSON.stringify(JSON.parse(body), null, 1), { ...headers }))
      assert.throws(() => new Webhook(secret).verify(body, { ...headers, "webhook-id": "msg_2" }))
      assert.throws(() => new Webhook(newSecret()).verify(body, { ...headers }))
    }))

  it.effect("with a previous secret: two signatures, the current one's first, each verifying with its own secret", () =>
    Effect.gen(function*() {
      const current = newSecret()
      const previous = newSecret()
      const now = Math.floor(Date.now() / 1000)
      const headers = yield* sign({ secret: current, previousSecret: previous, msgId: "msg_1", timestampSeconds: now, body })
      assert.match(headers["webhook-signature"], /^v1,[A-Za-z0-9+/]+=* v1,[A-Za-z0-9+/]+=*$/)
      const alone = yield* sign({ secret: current, msgId: "msg_1", timestampSeconds: now, body })
      assert.strictEqual(headers["webhook-signature"].split(" ")[0], alone["webhook-signature"])
      assert.deepStrictEqual(new Webhook(current).verify(body, { ...headers }), JSON.parse(body))
      assert.deepStrictEqual(new Webhook(previous).verify(body, { ...headers }), JSON.parse(body))
      assert.throws(() => new Webhook(newSecret()).verify(body, { ...headers }))
    }))

  it.effect("the same message signed at another time gets another signature", () =>
    Effect.gen(function*() {
      const secret = newSecret()
      const a = yield* sign({ secret, msgId: "msg_1", timestampSeconds: 1_900_000_000, body })
      const b = yield* sign({ secret, msgId: "msg_1", timestampSeconds: 1_900_000_300, body })
      assert.strictEqual(a["webhook-id"], b["webhook-id"])
      assert.notStrictEqual(a["webhook-signature"], b["webhook-signature"])
    }))

  it.effect("an unusable secret is a SignError", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(sign({ secret: "", msgId: "m", timestampSeconds: 1, body }))
      assert.isTrue(Exit.isFailure(exit))
    }))
})
