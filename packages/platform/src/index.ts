export * as Platform from "./Platform.js"
export type { HostDeclarations, PlatformOptions, StoreLayer } from "./Options.js"
export { HostDeclarationError } from "./Served.js"
export type { TracingOptions } from "./Tracing.js"
export type { LayerConfigOptions, PlatformRuntime, PlatformServices } from "./Platform.js"
export * as PlatformConfig from "./PlatformConfig.js"
export type { Actor } from "./Actor.js"
export { createPlatform, type CreatePlatformOptions, HOST_KEY_ID } from "./Host.js"
export {
  BadRequest,
  Conflict,
  Forbidden,
  GeneralError,
  NotAuthenticated,
  NotFound,
  PlatformError,
  TooManyRequests,
  toPlatformError,
  Unavailable
} from "./HostErrors.js"
export type {
  CallOptions,
  ConsentPlatformApi,
  FindEffect,
  FindPromise,
  OpenCallOptions,
  OrganizationClient,
  PlatformEffects,
  PlatformMembers,
  Promised,
  ResourceClient,
  ResourceEffects,
  ResourceOperations,
  Scoped,
  ScopedOptions
} from "./HostTypes.js"
export type {
  CursorOf,
  CursorPage,
  Page,
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
export { rotateReceiptSigningKey } from "./ReceiptKeys.js"
export { rotateTokenSigningKey } from "./TokenKeys.js"
export { resealSecrets } from "./Reseal.js"
export type { ResealCounts, ResealReport } from "@cmp/platform-node"
export type { SubscriberHandler, SubscriberMessage } from "@cmp/webhooks"
export {
  type OrganizationUserIdAuth,
  organizationUserIdAuth,
  type OrganizationUserIdAuthOptions,
  receiptParts,
  type ReceiptVerification,
  verifyReceipt
} from "@cmp/platform-node"
export * as Operating from "./Operating.js"
export type { OperatingMethods, ReadinessReport } from "./Operating.js"
