export * as PgStore from "./PgStore.js"
