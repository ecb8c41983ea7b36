export * as ServerConfig from "./ServerConfig.js"
export * as StoreConfig from "./StoreConfig.js"
