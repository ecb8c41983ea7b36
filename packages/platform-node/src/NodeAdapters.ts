import { type HostPorts, type Ids, Mailer, type Storage } from "@cmp/core"
import * as Layer from "effect/Layer"
import { X509CertificateValidatorLive } from "./Certificates.js"
import { provisionerLayer, type ProvisionerOption } from "./DnsProvisioner.js"
import { DnsRecordsLive, type DnsRecordsOptions } from "./DnsRecords.js"
import { NodeExportSinkLive } from "./ExportSink.js"
import { ScryptHasherLive } from "./Hashing.js"
import { SmtpMailerLive, type SmtpOptions } from "./Mailer.js"
import { AesSecretBoxLive } from "./SecretBox.js"
import { NodeHmacLive } from "./SignedUserIds.js"
import { TcStringEncoderLive } from "./TcStrings.js"
import { ConsentStringDecoderLive } from "./ConsentStrings.js"
import { JoseTokensLive } from "./Tokens.js"
import { DigestsLive } from "./Digests.js"
import { MediaTypesLive } from "./MediaTypes.js"
import { ReportPdfLive } from "./ReportPdf.js"
import { ReceiptSignerLive } from "./ReceiptKeys.js"
import { NodeSecretComparerLive } from "./SecretComparer.js"
import { HmacUrlSignerLive } from "./UrlSigning.js"

export interface NodeAdaptersOptions {
  /** scrypt cost; lower only in tests. */
  readonly hashCost?: number | undefined
  /** HS256 signing key (`JWT_SECRET`); generated and kept in the database when absent. */
  readonly jwtSecret?: string | undefined
  /** The signing key before `jwtSecret` (`JWT_SECRET_PREVIOUS`): still verifies, signs nothing. */
  readonly jwtSecretPrevious?: string | undefined
  /** AES-256 key (`ENCRYPTION_KEY`, base64 or hex); generated and kept in the database when absent. */
  readonly encryptionKey?: string | undefined
  /**
   * The key `encryptionKey` replaced (`ENCRYPTION_KEY_PREVIOUS`, same format): still opens what
   * it sealed, seals nothing. Dropped once a re-seal (`resealSecrets`) ran.
   */
  readonly encryptionKeyPrevious?: string | undefined
  /** HMAC key of signed dashboard URLs (`URL_SIGNING_KEY`); generated and kept in the database when absent. */
  readonly urlSigningKey?: string | undefined
  readonly provisioner?: ProvisionerOption | undefined
  /** The DNS look-ups of page hosts' proofs (their TXT records): the system's resolver unless one is handed in. */
  readonly dns?: DnsRecordsOptions | undefined
  /** Directory export destinations are confined under this directory (`EXPORTS_ROOT`). */
  readonly exportsRoot?: string | undefined
  /** Hosts that outgoing calls may reach despite plain http or a private address (`WEBHOOK_ALLOW_HOSTS`). */
  readonly allowHosts?: ReadonlyArray<string> | undefined
  /** Local address outgoing calls are bound to (`WEBHOOK_LOCAL_ADDRESS`). */
  readonly localAddress?: string | undefined
  /** The IAB Global Vendor List server-side TC strings are encoded against. */
  readonly tcfVendorList?: object | undefined
  /**
   * The mail server that delivers invitations (`SMTP_URL`, `MAIL_FROM`). Absent: nothing is
   * mailed and an invite's answer holds the token, for the inviter to hand on.
   */
  readonly smtp?: SmtpOptions | undefined
}

/** Every port core leaves to the host: the list is core's (`HostPorts`), so a new one is a compile error here until implemented. */
export type NodeAdapters = HostPorts

/**
 * Every port core leaves to the host, implemented on Node. The keys not configured are made once
 * and kept in the database, hence `Storage` (and `Ids` for token ids).
 */
export const layer = (options: NodeAdaptersOptions = {}): Layer.Layer<NodeAdapters, never, Storage | Ids> =>
  Layer.mergeAll(
    ScryptHasherLive({ cost: options.hashCost }),
    NodeSecretComparerLive,
    JoseTokensLive(options.jwtSecret, options.jwtSecretPrevious),
    // The receipt keys are sealed by the same box as every other secret.
    ReceiptSignerLive,
    HmacUrlSignerLive(options.urlSigningKey),
    NodeHmacLive,
    X509CertificateValidatorLive,
    provisionerLayer(options.provisioner),
    DnsRecordsLive(options.dns),
    NodeExportSinkLive({ exportsRoot: options.exportsRoot, allowHosts: options.allowHosts, localAddress: options.localAddress }),
    TcStringEncoderLive({ vendorList: options.tcfVendorList }),
    ConsentStringDecoderLive(),
    options.smtp ? SmtpMailerLive(options.smtp) : Mailer.NoneLayer,
    DigestsLive,
    MediaTypesLive,
    ReportPdfLive
  ).pipe(Layer.provideMerge(AesSecretBoxLive(options.encryptionKey, options.encryptionKeyPrevious)))
