export * as PgStore from "./PgStore.js"
export { postgres } from "./PgStore.js"
