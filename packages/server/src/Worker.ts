import { Platform } from "@cmp/platform"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as os from "node:os"
import { stopOnSignal } from "./Failure.js"
import * as StoreConfig from "./StoreConfig.js"

/** `pnpm worker`: only deliver webhooks (more of them, on other machines, scale delivery). */
export const work = async () => {
  const workerId = `${os.hostname()}-${process.pid}`
  const store = await Effect.runPromise(StoreConfig.settings)
  const runtime = ManagedRuntime.make(Platform.layerConfig({ dispatcher: true, workerId, store: StoreConfig.layer(store) }))
  // Building the runtime starts the delivery loop.
  await runtime.runtime()
  console.log(JSON.stringify({ message: "delivering webhooks", workerId, database: store._tag }))
  stopOnSignal(() => runtime.dispose())
}
