import {
  ApiUsage,
  bootstrap,
  type DeliveryQueue,
  Endpoints,
  LoginThrottle,
  EndpointsLive,
  FeatureCache,
  type ExportSink,
  type CertificateValidator,
  Ids,
  Provisioner,
  type UrlSigner,
  type OutboxSignal,
  type SecretBox,
  SecretHasher,
  Settings,
  type SettingsShape,
  type Storage,
  type TcStringEncoder,
  type TokenIssuer,
  type UnitOfWork,
  type UsageStore
} from "@cmp/core"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { AesSecretBoxLive, JoseTokensLive, ScryptHasherLive } from "./Crypto.js"
import { HmacUrlSignerLive, X509CertificateValidatorLive } from "./Crypto.js"
import { DnsProvisionerLive } from "./Provisioning.js"
import { NodeExportSinkLive } from "./ExportSink.js"
import { TcStringEncoderLive } from "./Tcf.js"

export type StoreLayer = Layer.Layer<Storage | UnitOfWork | UsageStore | DeliveryQueue, unknown>

export interface RuntimeOptions {
  /** The storage ports (SQLite or PostgreSQL store layer). */
  readonly store: StoreLayer
  readonly settings?: Partial<SettingsShape> | undefined
  /** AES-256 key for secrets kept encrypted (base64 or hex); generated and kept in the database when absent. */
  readonly encryptionKey?: string | undefined
  /** Receiver hosts allowed despite plain http or private addresses. */
  readonly webhookAllowHosts?: ReadonlyArray<string> | undefined
  /** HS256 signing key; generated and kept in the database when absent. */
  readonly jwtSecret?: string | undefined
  /** The operator key to create on first start (`ADMIN_API_KEY`/`ADMIN_API_SECRET`). */
  readonly admin?: { readonly key?: string | undefined; readonly secret?: string | undefined } | undefined
  readonly logLevel?: LogLevel.Literal | undefined
  /** Replaces the clock (tests move time with it). */
  readonly clock?: Clock.Clock | undefined
  /** scrypt cost; lower only in tests. */
  readonly hashCost?: number | undefined
  /**
   * Work that runs beside the API on the same services, such as the webhook dispatcher; its
   * `OutboxSignal` lets a committed change wake it at once.
   */
  readonly background?: Layer.Layer<OutboxSignal, unknown, AppServices | Endpoints> | undefined
  /**
   * Domain provisioning (`DOMAIN_PROVISIONER`): `immediate` (default) completes at once; `dns`
   * checks that a custom domain is a CNAME of `cnameTarget`; or any `Provisioner` implementation.
   */
  readonly provisioner?: { readonly kind: "immediate" } | { readonly kind: "dns"; readonly cnameTarget: string } | {
    readonly kind: "custom"
    readonly service: typeof Provisioner.Service
  } | undefined
  /** HMAC key of signed dashboard URLs (`URL_SIGNING_KEY`); generated and kept in the database when absent. */
  readonly urlSigningKey?: string | undefined
  /** Directory export destinations are confined under this directory (`EXPORTS_ROOT`). */
  readonly exportsRoot?: string | undefined
  /** The IAB Global Vendor List server-side TC strings are encoded against. */
  readonly tcfVendorList?: object | undefined
}

export type AppServices =
  | Endpoints
  | Storage
  | UnitOfWork
  | UsageStore
  | DeliveryQueue
  | Ids
  | SecretHasher
  | Settings
  | TokenIssuer
  | ApiUsage
  | SecretBox
  | LoginThrottle
  | Provisioner
  | UrlSigner
  | CertificateValidator
  | ExportSink
  | TcStringEncoder

const provisionerLayer = (p: RuntimeOptions["provisioner"]): Layer.Layer<Provisioner> =>
  p?.kind === "dns"
    ? DnsProvisionerLive({ target: p.cnameTarget })
    : p?.kind === "custom"
    ? Layer.succeed(Provisioner, p.service)
    : Provisioner.ImmediateLayer

/** Every service a request needs, built once; the first start also bootstraps the operator. */
export const appLayer = (options: RuntimeOptions): Layer.Layer<AppServices, unknown> => {
  const base = Layer.mergeAll(
    options.store,
    Ids.Live,
    ScryptHasherLive({ cost: options.hashCost }),
    LoginThrottle.layer(),
    FeatureCache.layer(),
    Settings.layer({
      ...options.settings,
      ...(options.webhookAllowHosts ? { webhookAllowHosts: options.webhookAllowHosts } : {})
    })
  )
  const services = Layer.mergeAll(
    JoseTokensLive(options.jwtSecret),
    ApiUsage.layer(),
    AesSecretBoxLive(options.encryptionKey),
    provisionerLayer(options.provisioner),
    HmacUrlSignerLive(options.urlSigningKey),
    X509CertificateValidatorLive,
    NodeExportSinkLive({ exportsRoot: options.exportsRoot, allowHosts: options.webhookAllowHosts }),
    TcStringEncoderLive({ vendorList: options.tcfVendorList })
  )
    .pipe(Layer.provideMerge(base))
  const booted = Layer.effectDiscard(bootstrap(options.admin ?? {})).pipe(Layer.provideMerge(services))
  const infra = Layer.mergeAll(
    Logger.json,
    Logger.minimumLogLevel(LogLevel.fromLiteral(options.logLevel ?? "Info")),
    options.clock ? Layer.setClock(options.clock) : Layer.empty
  )
  const withEndpoints = Layer.effect(Endpoints, EndpointsLive).pipe(Layer.provideMerge(booted))
  const withBackground = options.background
    ? options.background.pipe(Layer.provideMerge(withEndpoints))
    : withEndpoints
  return withBackground.pipe(Layer.provideMerge(infra))
}

export const makeRuntime = (options: RuntimeOptions) => ManagedRuntime.make(appLayer(options))

export type AppRuntime = ManagedRuntime.ManagedRuntime<AppServices, unknown>

/** A clock tests can move by hand, shared by the server they start. */
export class ManualClock implements Clock.Clock {
  readonly [Clock.ClockTypeId]: Clock.ClockTypeId = Clock.ClockTypeId
  constructor(public millis: number = Date.now()) {}
  advance(ms: number) {
    this.millis += ms
  }
  unsafeCurrentTimeMillis() {
    return this.millis
  }
  unsafeCurrentTimeNanos() {
    return BigInt(this.millis) * 1_000_000n
  }
  currentTimeMillis = Effect.sync(() => this.millis)
  currentTimeNanos = Effect.sync(() => BigInt(this.millis) * 1_000_000n)
  sleep = (duration: import("effect/Duration").Duration) => Effect.sleep(duration).pipe(Effect.withClock(Clock.make()))
}
