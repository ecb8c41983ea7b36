import { createOperatorKey } from "@cmp/core"
import { Platform } from "@cmp/platform"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as StoreConfig from "./StoreConfig.js"

/** `pnpm bootstrap`: print a new operator key and secret as JSON. */
export const bootstrapKey = async () => {
  const runtime = ManagedRuntime.make(
    // Its output is the key as JSON on stdout, where the start-up warnings would also go.
    Platform.layerConfig({ dispatcher: false, store: StoreConfig.fromConfig, overrides: { logLevel: "Error" } })
  )
  try {
    const created = await runtime.runPromise(createOperatorKey)
    process.stdout.write(`${JSON.stringify(created)}\n`)
  } finally {
    await runtime.dispose()
  }
}
