import type { PlatformRuntime } from "@cmp/core"
import { type Handler, type HandlerOptions, makeHandler } from "./Handler.js"

export interface HttpApi extends Handler {
  readonly runtime: PlatformRuntime
  /** Stops background work (the dispatcher) and closes the store. */
  readonly dispose: () => Promise<void>
}

/**
 * The REST API over a platform runtime the host made (the adapters' `makeHttpApi`, or
 * `Platform.layerConfig`): builds its services now, so a broken database or configuration fails
 * here, not on the first request. `dispose()` disposes of the runtime.
 */
export const fromRuntime = async (runtime: PlatformRuntime, options: HandlerOptions = {}): Promise<HttpApi> => {
  try {
    await runtime.runtime()
  } catch (error) {
    await runtime.dispose().catch(() => undefined)
    throw error
  }
  return { ...(await makeHandler(runtime, options)), runtime, dispose: () => runtime.dispose() }
}
