import type * as ManagedRuntime from "effect/ManagedRuntime"
import type { ApiUsage } from "./Accounts/ApiUsage.js"
import type { CredentialCache } from "./Accounts/CredentialCache.js"
import type { OriginCache } from "./Properties/OriginCache.js"
import type { PublicRateLimit } from "./Consents/PublicRateLimit.js"
import type { RunningVerifications } from "./Consents/LogVerify.js"
import type { SigningKeys } from "./Accounts/SigningKeys.js"
import type { ConsentTokenStates } from "./Accounts/TokenStates.js"
import type { FeatureCache } from "./Accounts/FeatureCache.js"
import type { LoginThrottle } from "./Accounts/LoginThrottle.js"
import type { Metrics } from "./Engine/Metrics.js"
import type { Readiness } from "./Operations/Readiness.js"
import type { StoreProbe } from "./Operations/StoreProbe.js"
import type { Mailer } from "./Accounts/Mailer.js"
import type { MailQueue, MailSignal } from "./Accounts/MailOutbox.js"
import type { OrganizationLimits } from "./Engine/OrganizationLimits.js"
import type { CertificateValidator } from "./Accounts/CertificateValidator.js"
import type { Provisioner } from "./Properties/Provisioner.js"
import type { UrlSigner } from "./Engine/Secrets.js"
import type { Hmac, Ids, SecretComparer, SecretHasher, Storage, TokenIssuer, UnitOfWork, UsageStore } from "./Engine/Ports.js"
import type { Relations } from "./Engine/Relations.js"
import type { ConsentLogStore } from "./Consents/ConsentLog.js"
import type { Digests, MediaTypes, ProofFiles, ReportPdf } from "./Consents/ProofPorts.js"
import type { ExportSink } from "./Exports/Exports.js"
import type { TcStringEncoder } from "./Notices/Notices.js"
import type { Settings } from "./Engine/Settings.js"
import type { DeliveryStats } from "./Webhooks/DeliveryStats.js"
import type { DeliveryQueue, Endpoints, SubscriberRegistrations } from "./Webhooks/Ports.js"
import type { OutboxSignal } from "./Engine/Ports.js"
import type { SecretBox } from "./Engine/Secrets.js"

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

/** Those services, built and running: what a host's composition hands the REST layer. */
export type PlatformRuntime = ManagedRuntime.ManagedRuntime<PlatformServices, unknown>
