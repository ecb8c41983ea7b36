import { createApiFromRuntime, listen } from "@cmp/http-express"
import { type HostDeclarations, Platform } from "@cmp/platform"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { stopOnFatalError, stopOnSignal } from "./Failure.js"
import * as ServerConfig from "./ServerConfig.js"
import * as StoreConfig from "./StoreConfig.js"

/**
 * `pnpm start`: serve the API (and deliver webhooks, unless WEBHOOK_DISPATCHER=false), with the
 * resources, actions and migrations of a host that runs this server as its own.
 */
export const serve = async (host: HostDeclarations = {}) => {
  const settings = await Effect.runPromise(ServerConfig.withPlatform(ServerConfig.server))
  const platform = Platform.layerConfig({ ...host, dispatcher: "config", store: StoreConfig.layer(settings.store) })
  const api = await createApiFromRuntime(ManagedRuntime.make(platform), settings)
  const running = await listen(api, settings)
  const mode = settings.tls
    ? "https"
    : settings.allowHttp
    ? "plain http (ALLOW_HTTP, development only)"
    : "http answering 301 to https (ALLOW_HTTP=true serves plain http in development)"
  const database = settings.store._tag === "postgres"
    ? { database: "postgres" }
    : { database: "sqlite", sqlite: settings.store.options.filename }
  console.log(JSON.stringify({ message: "listening", url: running.url, mode, ...database, pid: process.pid }))
  stopOnFatalError()
  stopOnSignal(running.close)
}
