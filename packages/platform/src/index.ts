export * as Platform from "./Platform.js"
export type { PlatformOptions, StoreLayer, StoreOption, StoreSettings } from "./Options.js"
export type { LayerConfigOptions, PlatformRuntime, PlatformServices } from "./Platform.js"
export * as PlatformConfig from "./PlatformConfig.js"
