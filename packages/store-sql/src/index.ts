export * as SqlStorage from "./SqlStorage.js"
