export * as ServerConfig from "./ServerConfig.js"
