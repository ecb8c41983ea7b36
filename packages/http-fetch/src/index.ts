export * from "./Fetch.js"
export * from "./Node.js"
