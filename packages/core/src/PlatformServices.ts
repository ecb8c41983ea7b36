import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import type * as ManagedRuntime from "effect/ManagedRuntime"
import type { ActionDef } from "./Engine/Action.js"
import type { ApiUsage } from "./Accounts/ApiUsage.js"
import { CredentialCache } from "./Accounts/CredentialCache.js"
import { OriginCache } from "./Properties/OriginCache.js"
import { PublicRateLimit } from "./Consents/PublicRateLimit.js"
import { RunningVerifications } from "./Consents/LogVerify.js"
import { SigningKeys } from "./Accounts/SigningKeys.js"
import { ConsentTokenStates } from "./Accounts/TokenStates.js"
import { FeatureCache } from "./Accounts/FeatureCache.js"
import { LoginThrottle } from "./Accounts/LoginThrottle.js"
import type { Metrics } from "./Engine/Metrics.js"
import type { Readiness } from "./Operations/Readiness.js"
import type { StoreProbe } from "./Operations/StoreProbe.js"
import type { Mailer } from "./Accounts/Mailer.js"
import type { MailQueue, MailSignal } from "./Accounts/MailOutbox.js"
import type { OrganizationLimits } from "./Engine/OrganizationLimits.js"
import type { CertificateValidator } from "./Accounts/CertificateValidator.js"
import type { Provisioner } from "./Properties/Provisioner.js"
import type { DnsRecords } from "./Properties/DnsRecords.js"
import type { PrivacyCenterPages } from "./Properties/PrivacyCenterPages.js"
import type { UrlSigner } from "./Engine/Secrets.js"
import type { Hmac, HostMigrator, Ids, SecretComparer, SecretHasher, Storage, TokenIssuer, UnitOfWork, UsageStore } from "./Engine/Ports.js"
import type { Relations } from "./Engine/Relations.js"
import type { ResourceDef } from "./Engine/Resource.js"
import type { AnySchema, AnyShape } from "./Engine/Shape.js"
import { type ConsentLogStore, layer as consentLogLayer } from "./Consents/ConsentLog.js"
import type { Digests, MediaTypes, ProofFiles, ReportPdf } from "./Consents/ProofPorts.js"
import type { ReceiptSigner } from "./Consents/ReceiptSchema.js"
import type { ExpiryAnnouncements } from "./Consents/ExpiryAnnouncements.js"
import type { ExportSink } from "./Exports/Exports.js"
import type { TcStringEncoder } from "./Notices/Notices.js"
import type { ConsentStringDecoder } from "./Consents/ConsentStrings.js"
import { RelationsLive } from "./Registry.js"
import { OrganizationLimitsLive } from "./Accounts/AccountLimits.js"
import { Settings, type SettingsShape } from "./Engine/Settings.js"
import type { DeliveryStats } from "./Webhooks/DeliveryStats.js"
import type { DeliveryHandOff, DeliveryQueue, Endpoints, SubscriberRegistrations } from "./Webhooks/Ports.js"
import { WebhookTargets } from "./Webhooks/Targets.js"
import { ConsentPolicies } from "./Consents/PolicyCache.js"
import { NoticeVersions } from "./Notices/NoticeVersions.js"
import type { OutboxSignal } from "./Engine/Ports.js"
import type { ChangeFeed } from "./Engine/ChangeFeed.js"
import type { SecretBox } from "./Engine/Secrets.js"

/**
 * The ports core leaves to the host's runtime (hashing, tokens, encryption, signing, certificates,
 * DNS, export destinations, TC strings and their decoding, GPP strings, mail): what an adapter package such as `platform-node`
 * implements, all of them, or the platform does not compile.
 */
export type HostPorts =
  | SecretHasher
  | SecretComparer
  | Hmac
  | TokenIssuer
  | SecretBox
  | Provisioner
  | DnsRecords
  | UrlSigner
  | CertificateValidator
  | ExportSink
  | TcStringEncoder
  | ConsentStringDecoder
  | Mailer
  | Digests
  | MediaTypes
  | ReportPdf
  | ReceiptSigner

/** The storage ports: what a store package's layer gives. */
export type StorePorts =
  | Storage
  | UnitOfWork
  | UsageStore
  | DeliveryQueue
  | MailQueue
  | DeliveryStats
  | SubscriberRegistrations
  | ConsentLogStore
  | ProofFiles
  | ExpiryAnnouncements
  | StoreProbe
  | HostMigrator
  | ChangeFeed

/**
 * Every service a use-case of core may need, built once: the store's ports, the host's ports
 * and core's own services. Declared in core, so the REST layer can name what it runs on without
 * depending on how (or on which store) a host builds it.
 */
export type PlatformServices =
  | EngineServices
  | HostPorts
  | Endpoints
  | OutboxSignal
  | DeliveryHandOff
  | MailSignal
  | ApiUsage
  | Metrics
  | Readiness
  | Declarations
  | PrivacyCenterPages

/** Those services, built and running: what a host's composition hands the REST layer. */
export type PlatformRuntime = ManagedRuntime.ManagedRuntime<PlatformServices, unknown>

/** Core's own services on a store: what `engineServices` builds before the host's adapters. */
export type EngineServices =
  | StorePorts
  | Ids
  | Relations
  | FeatureCache
  | WebhookTargets
  | ConsentPolicies
  | NoticeVersions
  | OrganizationLimits
  | CredentialCache
  | LoginThrottle
  | OriginCache
  | SigningKeys
  | ConsentTokenStates
  | PublicRateLimit
  | RunningVerifications
  | Settings

/**
 * Core's own services on the store and ids handed in, what the host builds on them
 * (`adapters`: its ports, metrics, API usage; the digests among them, for the consent log), and
 * the store's storage and transactions wrapped so that every write of consent data is logged.
 * The one composition of the engine: the platform builds its services on it with Node's
 * adapters, and the engine's suites in test-support theirs with doubles (production's digests).
 */
export const engineServices = <A, E, E2, R>(options: {
  readonly store: Layer.Layer<StorePorts, E>
  readonly ids: Layer.Layer<Ids>
  /** The tables the cascades know: the registry's unless a host adds its own. */
  readonly relations?: Layer.Layer<Relations>
  readonly settings: Partial<SettingsShape>
  readonly adapters: Layer.Layer<A | Digests, E2, R>
}): Layer.Layer<EngineServices | A | Digests, E | E2, Exclude<R, EngineServices>> => {
  const base = OrganizationLimitsLive.pipe(Layer.provideMerge(Layer.mergeAll(
    options.store,
    options.ids,
    options.relations ?? RelationsLive,
    LoginThrottle.layer(),
    FeatureCache.layer(),
    WebhookTargets.layer(),
    ConsentPolicies.layer(),
    NoticeVersions.layer(),
    CredentialCache.layer(),
    OriginCache.layer(),
    SigningKeys.layer(),
    ConsentTokenStates.layer(),
    PublicRateLimit.layer,
    RunningVerifications.layer,
    Settings.layer(options.settings)
  )))
  const adapted = options.adapters.pipe(Layer.provideMerge(base))
  return Layer.merge(adapted, consentLogLayer.pipe(Layer.provide(adapted)))
}

/** A resource a platform serves, the registry's or its host's own: its hooks need at most the platform's services. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ServedResource = ResourceDef<AnyShape, PlatformServices, any>

/**
 * An action a platform serves, the registry's or its host's own: its use-case needs at most the
 * platform's services. A bearer action or an open one, told apart by `auth`.
 */
export type ServedAction =
  | ActionDef<string, string, string, AnySchema | undefined, "find" | "lookUp" | undefined, "bearer", unknown, PlatformServices>
  | ActionDef<string, string, string, AnySchema | undefined, "find" | "lookUp" | undefined, "none", unknown, PlatformServices>

/** The resources and actions a platform serves. */
export interface DeclarationsShape {
  readonly resources: ReadonlyArray<ServedResource>
  readonly actions: ReadonlyArray<ServedAction>
}

/**
 * What a platform serves: the registry's resources and actions, then those its host declared.
 * Provided at composition, so the routes, the OpenAPI document and the host API follow one list.
 */
export class Declarations extends Context.Tag("@cmp/core/Declarations")<Declarations, DeclarationsShape>() {}
