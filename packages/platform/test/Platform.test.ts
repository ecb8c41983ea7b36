import { createSession, SecretBox, Settings, TokenIssuer } from "@cmp/core"
import { sqlite } from "@cmp/store-sqlite"
import { Dispatcher } from "@cmp/webhooks"
import { assert, describe, it } from "@effect/vitest"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Cause from "effect/Cause"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Platform } from "../src/index.js"

/** The platform from settings (`layer`) and from Effect Config (`layerConfig`), through its ports. */

const fromEnv = (env: Record<string, string>) =>
  Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

const memory = sqlite({ filename: ":memory:" })

describe("Platform.layer", () => {
  it.scopedLive("assembles the store, core's services and the Node adapters, and creates the operator key", () =>
    Effect.gen(function*() {
      const session = yield* createSession({ type: "api-key", key: "admin", secret: "admin-secret-0123456789" })
      const tokens = yield* TokenIssuer
      const claims = yield* tokens.verify(session.access_token as string, Math.floor(Date.now() / 1000))
      assert.strictEqual(claims.kind, "operator")
      const box = yield* SecretBox
      assert.strictEqual(yield* box.open(yield* box.seal("whsec_x")), "whsec_x")
      // No dispatcher was asked for: this process delivers nothing.
      assert.isTrue(Option.isNone(yield* Effect.serviceOption(Dispatcher)))
    }).pipe(Effect.provide(Platform.layer({
      store: memory,
      hashCost: 1024,
      logLevel: "None",
      admin: { key: "admin", secret: "admin-secret-0123456789" }
    }))))
})

describe("Platform.layerConfig", () => {
  it.scopedLive("reads the documented variables through Effect Config", () =>
    Effect.gen(function*() {
      const settings = yield* Settings
      assert.deepStrictEqual(settings.defaultPremiumFeatures, ["webhooks"])
      assert.strictEqual(settings.defaultQuotas.secrets, 7)
      assert.deepStrictEqual(settings.webhookAllowHosts, ["receiver.local"])
      const session = yield* createSession({ type: "api-key", key: "ops", secret: "ops-secret-0123456789" })
      assert.strictEqual(session.key, "ops")
    }).pipe(Effect.provide(Platform.layerConfig({ store: memory, dispatcher: "config", overrides: { hashCost: 1024 } }).pipe(
      Layer.provide(fromEnv({
        LOG_LEVEL: "None",
        ADMIN_API_KEY: "ops",
        ADMIN_API_SECRET: "ops-secret-0123456789",
        DEFAULT_PREMIUM_FEATURES: "webhooks",
        DEFAULT_QUOTAS: "{\"secrets\": 7}",
        WEBHOOK_ALLOW_HOSTS: "Receiver.local",
        WEBHOOK_DISPATCHER: "false"
      }))
    ))))

  it.scopedLive("WEBHOOK_DISPATCHER (default true) runs the dispatcher in this process", () =>
    Effect.gen(function*() {
      assert.isTrue(Option.isSome(yield* Effect.serviceOption(Dispatcher)))
    }).pipe(Effect.provide(Platform.layerConfig({ store: memory }).pipe(Layer.provide(fromEnv({ LOG_LEVEL: "None" }))))))

  it.effect("a mistake fails the layer with a ConfigError naming every variable at fault, the store's too", () =>
    Effect.gen(function*() {
      // A store read from the configuration, as a server picking one from the environment does.
      const store = Config.map(Config.string("STORE_FILE"), (filename) => sqlite({ filename }))
      const exit = yield* Effect.exit(Layer.build(Platform.layerConfig({ store })).pipe(
        Effect.scoped,
        Effect.provide(fromEnv({ DEFAULT_QUOTAS: "{\"nope\": 1}" }))
      ))
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
      assert.isTrue(ConfigError.isConfigError(error))
      const message = String(error)
      assert.match(message, /STORE_FILE/)
      assert.match(message, /nope/)
    }))
})
