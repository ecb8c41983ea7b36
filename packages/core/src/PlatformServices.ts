import * as Context from "effect/Context"
import type * as ManagedRuntime from "effect/ManagedRuntime"
import type { ActionDef } from "./Action.js"
import type { ApiUsage } from "./ApiUsage.js"
import type { CredentialCache } from "./CredentialCache.js"
import type { OriginCache } from "./Consents/OriginCache.js"
import type { PublicRateLimit } from "./Consents/PublicRateLimit.js"
import type { RunningVerifications } from "./Consents/LogVerify.js"
import type { SigningKeys } from "./Consents/SigningKeys.js"
import type { ConsentTokenStates } from "./Consents/TokenStates.js"
import type { FeatureCache } from "./FeatureCache.js"
import type { LoginThrottle } from "./LoginThrottle.js"
import type { Metrics } from "./Metrics.js"
import type { Readiness } from "./Readiness.js"
import type { StoreProbe } from "./StoreProbe.js"
import type { Mailer } from "./Mailer.js"
import type { MailQueue, MailSignal } from "./MailOutbox.js"
import type { OrganizationLimits } from "./OrganizationLimits.js"
import type { CertificateValidator, Provisioner, UrlSigner } from "./OrganizationPorts.js"
import type { Hmac, HostMigrator, Ids, SecretComparer, SecretHasher, Storage, TokenIssuer, UnitOfWork, UsageStore } from "./Ports.js"
import type { Relations } from "./Relations.js"
import type { AnyShape, AnySchema, ResourceDef } from "./Resource.js"
import type { ConsentLogStore } from "./Consents/ConsentLog.js"
import type { Digests, MediaTypes, ProofFiles, ReportPdf } from "./Consents/ProofPorts.js"
import type { ExportSink } from "./Resources/Exports.js"
import type { TcStringEncoder } from "./Resources/Notices.js"
import type { Settings } from "./Settings.js"
import type { DeliveryStats } from "./Webhooks/DeliveryStats.js"
import type { DeliveryQueue, Endpoints, OutboxSignal, SecretBox, SubscriberRegistrations } from "./Webhooks/Ports.js"

/**
 * The ports core leaves to the host's runtime (hashing, tokens, encryption, signing, certificates,
 * DNS, export destinations, TC strings, mail): what an adapter package such as `platform-node`
 * implements, all of them, or the platform does not compile.
 */
export type HostPorts =
  | SecretHasher
  | SecretComparer
  | Hmac
  | TokenIssuer
  | SecretBox
  | Provisioner
  | UrlSigner
  | CertificateValidator
  | ExportSink
  | TcStringEncoder
  | Mailer
  | Digests
  | MediaTypes
  | ReportPdf

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
  | StoreProbe
  | HostMigrator

/**
 * Every service a use-case of core may need, built once: the store's ports, the host's ports
 * and core's own services. Declared here rather than where the services are built, so the REST
 * layer can name what it runs on without depending on how (or on which store) a host builds it.
 */
export type PlatformServices =
  | StorePorts
  | HostPorts
  | Endpoints
  | Relations
  | FeatureCache
  | OrganizationLimits
  | CredentialCache
  | OutboxSignal
  | MailSignal
  | Ids
  | Settings
  | ApiUsage
  | LoginThrottle
  | OriginCache
  | SigningKeys
  | ConsentTokenStates
  | PublicRateLimit
  | RunningVerifications
  | Metrics
  | Readiness
  | Declarations

/** Those services, built and running: what a host's composition hands the REST layer. */
export type PlatformRuntime = ManagedRuntime.ManagedRuntime<PlatformServices, unknown>

/** A resource a platform serves, the registry's or its host's own: its hooks need at most the platform's services. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ServedResource = ResourceDef<AnyShape, PlatformServices, any>

/** An action a platform serves, the registry's or its host's own: its use-case needs at most the platform's services. */
export type ServedAction = ActionDef<
  string,
  string,
  string,
  AnySchema | undefined,
  "find" | "lookUp" | undefined,
  "bearer" | "none",
  unknown,
  PlatformServices
>

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
