export * as SqliteStore from "./SqliteStore.js"
export { sqlite } from "./SqliteStore.js"
