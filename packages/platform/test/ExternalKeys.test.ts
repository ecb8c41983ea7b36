import { Mailer, SecretBox } from "@cmp/core"
import { sqlite } from "@cmp/store-sqlite"
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Platform } from "../src/index.js"

/** Keys from outside the database (`REQUIRE_EXTERNAL_KEYS`) and the mailer of invitations (`SMTP_URL`, `MAIL_FROM`). */

const fromEnv = (env: Record<string, string>) =>
  Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

const memory = sqlite({ filename: ":memory:" })
const JWT_SECRET = "j".repeat(40)
const ENCRYPTION_KEY = Buffer.alloc(32, 7).toString("base64")

/** The configuration error a layer failed with, as text ("" when it did not fail with one). */
const configFailure = <A, E>(layer: Layer.Layer<A, E>) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(Effect.scoped(Layer.build(layer)))
    const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
    return ConfigError.isConfigError(error) ? String(error) : ""
  })

describe("REQUIRE_EXTERNAL_KEYS", () => {
  it.effect("refuses an embedded platform without both keys, naming the one missing", () =>
    Effect.gen(function*() {
      const noBox = yield* configFailure(Platform.layer({ store: memory, logLevel: "None", requireExternalKeys: true, jwtSecret: JWT_SECRET }))
      assert.match(noBox, /REQUIRE_EXTERNAL_KEYS is true but ENCRYPTION_KEY is not set/)
      const neither = yield* configFailure(Platform.layer({ store: memory, logLevel: "None", requireExternalKeys: true }))
      assert.match(neither, /JWT_SECRET and ENCRYPTION_KEY are not set/)
    }))

  it.effect("refuses from the environment too", () =>
    Effect.gen(function*() {
      const message = yield* configFailure(
        Platform.layerConfig({ store: memory, dispatcher: false }).pipe(
          Layer.provide(fromEnv({ LOG_LEVEL: "None", REQUIRE_EXTERNAL_KEYS: "true", ENCRYPTION_KEY }))
        )
      )
      assert.match(message, /REQUIRE_EXTERNAL_KEYS is true but JWT_SECRET is not set/)
    }))

  it.scopedLive("starts with both keys given, sealing with the one given", () =>
    Effect.gen(function*() {
      const box = yield* SecretBox
      assert.strictEqual(yield* box.open(yield* box.seal("whsec_x")), "whsec_x")
    }).pipe(Effect.provide(Platform.layerConfig({ store: memory, dispatcher: false, overrides: { hashCost: 1024 } }).pipe(
      Layer.provide(fromEnv({ LOG_LEVEL: "None", REQUIRE_EXTERNAL_KEYS: "true", JWT_SECRET, ENCRYPTION_KEY }))
    ))))
})

describe("JWT_SECRET_PREVIOUS", () => {
  it.effect("is at least 32 characters, as JWT_SECRET is", () =>
    Effect.gen(function*() {
      const message = yield* configFailure(
        Platform.layerConfig({ store: memory, dispatcher: false }).pipe(
          Layer.provide(fromEnv({ LOG_LEVEL: "None", JWT_SECRET, JWT_SECRET_PREVIOUS: "short" }))
        )
      )
      assert.match(message, /JWT_SECRET_PREVIOUS must be at least 32 characters long/)
    }))
})

describe("SMTP_URL and MAIL_FROM", () => {
  it.effect("must be set together, and SMTP_URL must be an smtp URL", () =>
    Effect.gen(function*() {
      const layer = (env: Record<string, string>) =>
        Platform.layerConfig({ store: memory, dispatcher: false }).pipe(Layer.provide(fromEnv({ LOG_LEVEL: "None", ...env })))
      assert.match(yield* configFailure(layer({ SMTP_URL: "smtp://mail.example.com" })), /SMTP_URL and MAIL_FROM must be set together/)
      assert.match(yield* configFailure(layer({ MAIL_FROM: "no-reply@example.com" })), /SMTP_URL and MAIL_FROM must be set together/)
      assert.match(
        yield* configFailure(layer({ SMTP_URL: "https://mail.example.com", MAIL_FROM: "no-reply@example.com" })),
        /SMTP_URL must be an smtp:\/\/ or smtps:\/\/ URL/
      )
      assert.match(yield* configFailure(layer({ INVITATION_URL: "https://app.example.com/accept" })), /INVITATION_URL needs SMTP_URL and MAIL_FROM/)
    }))

  it.scopedLive("set, invitations are mailed; unset, they are not", () =>
    Effect.gen(function*() {
      const delivers = (env: Record<string, string>) =>
        Effect.map(Mailer, (m) => m.delivers).pipe(
          Effect.provide(Platform.layerConfig({ store: memory, dispatcher: false, overrides: { hashCost: 1024 } }).pipe(
            Layer.provide(fromEnv({ LOG_LEVEL: "None", ...env }))
          ))
        )
      assert.isTrue(yield* delivers({ SMTP_URL: "smtp://127.0.0.1:2525", MAIL_FROM: "no-reply@example.com" }))
      assert.isFalse(yield* delivers({}))
    }))
})
