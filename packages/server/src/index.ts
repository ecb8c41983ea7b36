export * from "./Config.js"
