export * from "./Router.js"
export * from "./Server.js"
export * from "./StartServer.js"
