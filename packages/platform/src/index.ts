export * as Platform from "./Platform.js"
export { type PlatformOptions, postgres, sqlite, type StoreLayer, type StoreOption, type StoreSettings } from "./Options.js"
export type { LayerConfigOptions, PlatformRuntime, PlatformServices } from "./Platform.js"
export * as PlatformConfig from "./PlatformConfig.js"
