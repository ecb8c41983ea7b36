export * as Platform from "./Platform.js"
export type { PlatformOptions, StoreLayer } from "./Options.js"
export type { TracingOptions } from "./Tracing.js"
export type { LayerConfigOptions, PlatformRuntime, PlatformServices } from "./Platform.js"
export * as PlatformConfig from "./PlatformConfig.js"
export {
  type Actor,
  BadRequest,
  type CallOptions,
  Conflict,
  type ConsentPlatformApi,
  createPlatform,
  type FindEffect,
  type FindPromise,
  Forbidden,
  GeneralError,
  HOST_KEY_ID,
  NotAuthenticated,
  NotFound,
  type OpenCallOptions,
  type OrganizationClient,
  type Page,
  PlatformError,
  type PlatformEffects,
  type Promised,
  type ResourceClient,
  type ResourceEffects,
  type ResourceOperations,
  type Scoped,
  type ScopedOptions,
  TooManyRequests,
  toPlatformError,
  Unavailable
} from "./Host.js"
export type {
  CursorOf,
  CursorPage,
  FieldValue,
  FilterableField,
  FindQueryOf,
  Found,
  Operators,
  SelectableField,
  Selected,
  SelectionOf,
  Where
} from "./FindQuery.js"
export type { SubscribeOptions, SubscriberMethods } from "./Subscribe.js"
export { swaggerUiAssets } from "./SwaggerUiAssets.js"
export { verifyConsentLog } from "./VerifyLog.js"
export type { SubscriberHandler, SubscriberMessage } from "@cmp/webhooks"
export {
  type OrganizationUserIdAuth,
  organizationUserIdAuth,
  type OrganizationUserIdAuthOptions
} from "@cmp/platform-node"
export * as Operating from "./Operating.js"
export type { OperatingMethods, ReadinessReport } from "./Operating.js"
