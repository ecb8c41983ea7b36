import { createOperatorKey } from "@cmp/core"
import { Platform } from "@cmp/platform"
import * as ManagedRuntime from "effect/ManagedRuntime"

/** `pnpm bootstrap`: print a new operator key and secret as JSON. */
export const bootstrapKey = async () => {
  const runtime = ManagedRuntime.make(
    Platform.layerConfig({ dispatcher: false, overrides: { logLevel: "Warning" } })
  )
  try {
    const created = await runtime.runPromise(createOperatorKey)
    process.stdout.write(`${JSON.stringify(created)}\n`)
  } finally {
    await runtime.dispose()
  }
}
