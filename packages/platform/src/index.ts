export * as Platform from "./Platform.js"
export { type PlatformOptions, postgres, sqlite, type StoreLayer, type StoreOption, type StoreSettings } from "./Options.js"
export type { LayerConfigOptions, PlatformRuntime, PlatformServices } from "./Platform.js"
export * as PlatformConfig from "./PlatformConfig.js"
export {
  type Actor,
  BadRequest,
  type CallOptions,
  Conflict,
  type ConsentPlatformApi,
  createPlatform,
  Forbidden,
  GeneralError,
  HOST_KEY_ID,
  NotAuthenticated,
  NotFound,
  type OrganizationClient,
  type Page,
  PlatformError,
  type PlatformEffects,
  type Promised,
  type ResourceClient,
  type ResourceEffects,
  type Scoped,
  type ScopedOptions,
  TooManyRequests,
  toPlatformError,
  Unavailable
} from "./Host.js"
export type { SubscribeOptions, SubscriberMethods } from "./Subscribe.js"
export type { SubscriberHandler, SubscriberMessage } from "@cmp/webhooks"
