export * as ServerConfig from "./ServerConfig.js"
export * as StoreConfig from "./StoreConfig.js"
/** The server's commands as functions, for a host that runs the server with its own declarations. */
export { serve } from "./Serve.js"
export { work } from "./Worker.js"
