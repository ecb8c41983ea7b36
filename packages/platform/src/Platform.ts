import {
  ApiUsage,
  backfillConsentLog,
  bootstrap,
  Declarations,
  DomainRelease,
  Endpoints,
  EndpointsLive,
  engineServices,
  ExpirySweep,
  forgetOtherWebhookChanges,
  Ids,
  DeliveryHandOff,
  OutboxSignal,
  MailDispatcher,
  Retention,
  MailSignal,
  type PlatformRuntime,
  type PlatformServices,
  wakeOnOtherOutboxes
} from "@cmp/core"
import { NodeAdapters, PromMetrics } from "@cmp/platform-node"
import { Dispatcher } from "@cmp/webhooks"
import { PrivacyCenterPagesLive } from "@cmp/privacy-center"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLines from "./LogLines.js"
import * as LogLevel from "effect/LogLevel"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Served from "./Served.js"
import type { HostDeclarations, PlatformOptions, StoreLayer } from "./Options.js"
import * as PlatformConfig from "./PlatformConfig.js"
import * as Tracing from "./Tracing.js"
import * as ReadinessLive from "./ReadinessLive.js"

export type { PlatformOptions, StoreLayer } from "./Options.js"
export type { PlatformRuntime, PlatformServices } from "@cmp/core"

/**
 * The platform: a store, core's services, the Node adapters and, with `dispatcher`, webhook
 * delivery. The first start also creates the operator organization and key.
 */
export const layer = (options: PlatformOptions): Layer.Layer<PlatformServices, unknown> => {
  const keptInDatabase = [
    ...(options.jwtSecret === undefined ? ["JWT_SECRET"] : []),
    ...(options.encryptionKey === undefined ? ["ENCRYPTION_KEY"] : [])
  ]
  // Refused before the store is opened, so not even a key is generated into it.
  if (options.requireExternalKeys === true && keptInDatabase.length > 0) {
    return Layer.fail(ConfigError.MissingData(["REQUIRE_EXTERNAL_KEYS"], PlatformConfig.externalKeysMissing(keptInDatabase)))
  }
  // A host's resources and actions clash with none of the platform's, or nothing starts.
  const declarations = Served.declarationsOf(options)
  if (declarations instanceof Served.HostDeclarationError) return Layer.fail(declarations)
  const allowHosts = options.webhookAllowHosts ?? []
  // Core's services with the Node adapters, every write of consent data logged; the tables and
  // declarations served are the registry's and the host's.
  const logged = engineServices({
    store: Served.migrated(options.store, options.migrations),
    ids: Ids.Live,
    relations: Served.relations(declarations),
    settings: {
      ...options.settings,
      ...(options.webhookAllowHosts ? { webhookAllowHosts: allowHosts } : {}),
      ...(options.publicRateLimit ? { publicRateLimit: options.publicRateLimit } : {})
    },
    adapters: Layer.mergeAll(
      ApiUsage.layer(),
      PromMetrics.layer,
      NodeAdapters.layer({ ...options, allowHosts, localAddress: options.webhookLocalAddress }),
      Layer.succeed(Declarations, declarations)
    )
  })
  // Every transaction in a span when traces are recorded, the consent log's writes within it.
  const services = Tracing.isTracing(options.tracing)
    ? Layer.merge(logged, Tracing.tracedTransactions.pipe(Layer.provide(logged)))
    : logged
  // A database made before the consent log gets its existing rows entered once, before anything is served.
  const booted = Layer.effectDiscard(Effect.zipRight(bootstrap(options.admin ?? {}), backfillConsentLog)).pipe(Layer.provideMerge(services))
  // Another server's change to a webhook drops this one's copies as its news arrives (PostgreSQL).
  const withEndpoints = forgetOtherWebhookChanges.pipe(
    // The hosted pages read what they show from the store, like any request.
    Layer.provideMerge(Layer.merge(Layer.effect(Endpoints, EndpointsLive), PrivacyCenterPagesLive)),
    Layer.provideMerge(booted)
  )
  const dispatcher = options.dispatcher === true ? {} : options.dispatcher || undefined
  // Invitation mail goes wherever webhooks are delivered, with the same lifecycle (see `MailDispatcher`),
  // and so does the sweep that announces lapsed consents (`ExpirySweep`).
  // A process that delivers is woken by its own commits and by the rings of those that deliver nothing.
  const delivering: Layer.Layer<PlatformServices, unknown> = dispatcher
    ? Layer.mergeAll(
      ReadinessLive.delivering,
      wakeOnOtherOutboxes,
      ExpirySweep.layer({ intervalMs: options.expirySweepIntervalMs }),
      // What is kept only for a while is purged where it is delivered (`Retention`).
      options.retention === false ? Layer.empty : Retention.layer(options.retention ?? {})
    ).pipe(
      Layer.provideMerge(Dispatcher.layer({ allowHosts, localAddress: options.webhookLocalAddress, ...dispatcher })),
      Layer.provideMerge(Layer.merge(withEndpoints, MailDispatcher.layer({ workerId: dispatcher.workerId }).pipe(Layer.provide(withEndpoints))))
    )
    : Layer.mergeAll(withEndpoints, OutboxSignal.ringing.pipe(Layer.provide(withEndpoints)), DeliveryHandOff.None, MailSignal.None, ReadinessLive.layer.pipe(Layer.provide(withEndpoints)))
  // Page hosts nobody proved are released wherever the platform runs (servers and workers alike).
  const releasing = options.domainRelease === false
    ? delivering
    : DomainRelease.layer(options.domainRelease ?? {}).pipe(Layer.provideMerge(delivering))
  const infra = Layer.mergeAll(
    LogLines.layer,
    Logger.minimumLogLevel(LogLevel.fromLiteral(options.logLevel ?? "Info")),
    options.clock ? Layer.setClock(options.clock) : Layer.empty,
    Tracing.layer(options.tracing)
  )
  return Layer.merge(releasing, startWarnings(options, keptInDatabase)).pipe(Layer.provideMerge(infra))
}

/** What a production start should not run with, said once in the log (never the values). */
const startWarnings = (options: PlatformOptions, keptInDatabase: ReadonlyArray<string>) =>
  Layer.effectDiscard(Effect.all([
    keptInDatabase.length === 0 ? Effect.void : Effect.logWarning(
      `${keptInDatabase.join(" and ")} not set: generated keys are kept in the database beside what they protect, ` +
        "so whoever reads a copy of the database (a backup) can sign operator tokens and open every sealed secret. " +
        "Give them from a secret store, with REQUIRE_EXTERNAL_KEYS=true."
    ),
    options.smtp ? Effect.void : Effect.logWarning(
      "SMTP_URL and MAIL_FROM not set: invitation tokens are returned to the inviter instead of being mailed to the " +
        "person invited, so an inviter can choose the password of a person who has none yet. Configure a mailer in production."
    )
  ], { discard: true }))


/** The platform as a runtime a host keeps and disposes of (`runtime.dispose()`). */
export const makeRuntime = (options: PlatformOptions): PlatformRuntime => ManagedRuntime.make(layer(options))

/** `Platform.layerConfig`'s options: the store, delivery, and the host's own declarations (`HostDeclarations`). */
export interface LayerConfigOptions extends HostDeclarations {
  /**
   * The store: a layer (`sqlite({ filename })`, `postgres({ url })`), or a `Config` that reads
   * one, whose mistakes are then reported with the other variables'.
   */
  readonly store: StoreLayer | Config.Config<StoreLayer>
  /** Deliver webhooks in this process: `"config"` (the default) follows `WEBHOOK_DISPATCHER`. */
  readonly dispatcher?: boolean | "config" | undefined
  /** Names this process's leases in the delivery log (default: random). */
  readonly workerId?: string | undefined
  /** Options the configuration cannot carry (a custom provisioner, a clock). */
  readonly overrides?: Partial<PlatformOptions> | undefined
}

const isStoreLayer = (store: StoreLayer | Config.Config<StoreLayer>): store is StoreLayer => Layer.isLayer(store)

/**
 * The platform from Effect `Config` (the environment unless another `ConfigProvider` is set),
 * with the variables and defaults of docs/configuration.md, on the store its caller hands in, with
 * the host's own declarations when it has some. A configuration mistake fails the layer with a
 * `ConfigError` naming every variable at fault.
 */
export const layerConfig = (options: LayerConfigOptions): Layer.Layer<PlatformServices, unknown> =>
  Layer.unwrapEffect(
    Effect.map(
      Config.all([
        PlatformConfig.platform,
        PlatformConfig.inServerDispatcher,
        isStoreLayer(options.store) ? Config.succeed(options.store) : options.store
      ]),
      ([{ dispatcherSettings, ...settings }, inServer, store]) => {
        const deliver = options.dispatcher === "config" || options.dispatcher === undefined ? inServer : options.dispatcher
        const dispatcher = deliver ? { ...dispatcherSettings, ...(options.workerId ? { workerId: options.workerId } : {}) } : undefined
        const { resources, actions, migrations } = options
        return layer({ ...settings, store, dispatcher, resources, actions, migrations, ...options.overrides })
      }
    )
  )
