export * from "./Fetch.js"
export { type HttpApiOptions } from "./HttpApi.js"
export * from "./Node.js"
