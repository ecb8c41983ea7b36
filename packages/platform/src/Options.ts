import type { HostMigration, Retention, ServedAction, ServedResource, SettingsShape, StorePorts } from "@cmp/core"
import type { NodeAdaptersOptions } from "@cmp/platform-node"
import type { DispatcherConfig } from "@cmp/webhooks"
import type * as Clock from "effect/Clock"
import type * as Layer from "effect/Layer"
import type * as LogLevel from "effect/LogLevel"
import type { TracingOptions } from "./Tracing.js"

/**
 * The storage ports, as a store package gives them: `sqlite({ filename })` from
 * `@cmp/store-sqlite`, `postgres({ url })` from `@cmp/store-postgres`, or any layer of them. The
 * host installs the one store it uses; the platform knows none.
 */
export type StoreLayer = Layer.Layer<StorePorts, unknown>

/**
 * What a host declares of its own, served beside the registry's declarations: routes under `/v1`,
 * OpenAPI operations, the host API's functions, organization scope, quotas and relations all
 * follow from them, as for a built-in resource. Their paths and tables may not be the platform's.
 */
export interface HostDeclarations {
  /** Resources (`defineResource`): their hooks may use any of the platform's services (`PlatformServices`). */
  readonly resources?: ReadonlyArray<ServedResource> | undefined
  /** Actions (`defineAction`), each at a place of the host's own. */
  readonly actions?: ReadonlyArray<ServedAction> | undefined
  /**
   * The SQL of the resources' tables, by name (`0001_loyalty_preferences`: numbered in the order
   * they run), run by the store after its own migrations, each once. A list of statements, or one
   * per store (`{ sqlite, postgres }`) where their SQL differs. Like the store's own, a migration
   * that ran is never edited: a change is a new one, numbered after it.
   */
  readonly migrations?: Readonly<Record<string, HostMigration>> | undefined
}

/** The Node adapters' own settings (keys, provisioning, exports, TCF) are `NodeAdaptersOptions`. */
export interface PlatformOptions extends HostDeclarations, Omit<NodeAdaptersOptions, "allowHosts" | "localAddress"> {
  /** The storage ports: `sqlite({ filename })` (`@cmp/store-sqlite`), `postgres({ url })` (`@cmp/store-postgres`), or any store layer. */
  readonly store: StoreLayer
  readonly settings?: Partial<SettingsShape> | undefined
  /** The operator key to create on first start (`ADMIN_API_KEY`/`ADMIN_API_SECRET`). */
  readonly admin?: { readonly key?: string | undefined; readonly secret?: string | undefined } | undefined
  readonly logLevel?: LogLevel.Literal | undefined
  /**
   * Refuse to start unless `jwtSecret` and `encryptionKey` are given (`REQUIRE_EXTERNAL_KEYS`):
   * keys kept in the database let anyone holding a copy of it sign operator tokens and open
   * every sealed secret.
   */
  readonly requireExternalKeys?: boolean | undefined
  /** Replaces the clock (tests move time with it). */
  readonly clock?: Clock.Clock | undefined
  /**
   * Hosts that webhooks, OAuth token URLs and exports may reach despite plain http or a private
   * or loopback address (`WEBHOOK_ALLOW_HOSTS`): the one address policy of outbound calls.
   */
  readonly webhookAllowHosts?: ReadonlyArray<string> | undefined
  /**
   * Public consent writes a minute per public key and per client address (`PUBLIC_RATE_LIMIT`,
   * default 6000 and 60), counted in this process.
   */
  readonly publicRateLimit?: { readonly perKey: number; readonly perAddress: number } | undefined
  /** Local address every outbound call is bound to (`WEBHOOK_LOCAL_ADDRESS`, the fixed source IP). */
  readonly webhookLocalAddress?: string | undefined
  /**
   * Runs the webhook dispatcher beside the other services (in this process): `true` or its
   * settings. `false` delivers nothing here (a `worker` process does it). Absent, `Platform.layer`
   * delivers nothing, while the HTTP API (`makeHttpApi`, `createApi`, `startServer`) delivers,
   * as `pnpm start` does; disposing of the platform stops the dispatcher and lets calls in
   * flight finish. Invitation mail is sent by the same processes (`MailDispatcher`, beside the
   * webhook dispatcher): where nothing delivers, invitations are queued until a worker runs.
   */
  readonly dispatcher?: DispatcherConfig | boolean | undefined
  /**
   * The release of page hosts (usages `privacy-center`, `preference-center`) not `ready` within
   * seven days of their creation: looked for at start and every `everyMs` (default an hour) in
   * every process of the platform. `false` runs none in this process.
   */
  readonly domainRelease?: false | { readonly everyMs?: number | undefined } | undefined
  /**
   * Where webhooks are delivered, the retention purges (see `Retention`): delivered webhook
   * messages and finished invitation mails `deliveredDays` after they finished
   * (`RETENTION_DELIVERED_DAYS`, default 30; `null` keeps them forever), and the consent events of
   * inactive users of organizations that set `consent_retention_days`. They run `firstAfterMs`
   * after start (default a minute), then every `everyMs` (default an hour). `false` runs none in
   * this process.
   */
  readonly retention?: false | Retention.RetentionOptions | undefined
  /**
   * Where webhooks are delivered, the time between two sweeps for lapsed consents
   * (`CONSENT_EXPIRY_SWEEP_MS`, default 5000): a `user.consent_expired` message is written
   * within about that time after the user's `expires_at`.
   */
  readonly expirySweepIntervalMs?: number | undefined
  /**
   * OpenTelemetry traces (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_SERVICE_NAME`): spans exported over
   * OTLP/HTTP, or handed to the host's span processors. Absent, no span is recorded.
   */
  readonly tracing?: TracingOptions | undefined
}
