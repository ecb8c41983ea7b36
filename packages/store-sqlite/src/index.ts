export * as SqliteStore from "./SqliteStore.js"
