import { type HostDeclarations, Platform } from "@cmp/platform"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as os from "node:os"
import { stopOnFatalError, stopOnSignal } from "./Failure.js"
import * as ProbeServer from "./ProbeServer.js"
import * as ServerConfig from "./ServerConfig.js"
import * as StoreConfig from "./StoreConfig.js"

/**
 * `pnpm worker`: only deliver webhooks and invitation mail (more of them, on other machines, scale delivery), with
 * `/healthz`, `/readyz` and `/metrics` on its own `PORT`, when set, for the orchestrator and Prometheus. A host's
 * declarations are those its servers have, so a worker started first migrates its tables too.
 */
export const work = async (host: HostDeclarations = {}) => {
  const workerId = `${os.hostname()}-${process.pid}`
  const { probes, store } = await Effect.runPromise(
    ServerConfig.withPlatform(Config.all({ store: StoreConfig.settings, probes: ProbeServer.settings }))
  )
  const runtime = ManagedRuntime.make(Platform.layerConfig({ ...host, dispatcher: true, workerId, store: StoreConfig.layer(store) }))
  // Building the runtime starts the delivery loop.
  await runtime.runtime()
  const port = probes.port
  const served = port === undefined ? undefined : await ProbeServer.listenProbes(runtime, { ...probes, port }).catch(async (error) => {
    await runtime.dispose()
    throw error
  })
  console.log(JSON.stringify({ message: "delivering webhooks", workerId, database: store._tag, ...(served ? { probes: served.url } : {}) }))
  // The probes answer while the dispatcher drains: `/readyz` then says it is not running.
  stopOnFatalError()
  stopOnSignal(() => runtime.dispose().finally(() => served?.close()))
}
