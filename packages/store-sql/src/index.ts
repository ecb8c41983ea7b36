export * as SqlStorage from "./SqlStorage.js"
export * as Ddl from "./Ddl.js"
export { migrations } from "./migrations/index.js"
