export * as SqliteBackup from "./SqliteBackup.js"
export * as SqliteStore from "./SqliteStore.js"
export { sqlite } from "./SqliteStore.js"
