import { Platform, type PlatformOptions, type PlatformRuntime } from "@cmp/platform"
import { type Handler, type HandlerOptions, makeHandler } from "./Handler.js"

export interface HttpApiOptions extends PlatformOptions, HandlerOptions {}

export interface HttpApi extends Handler {
  readonly runtime: PlatformRuntime
  /** Stops background work (the dispatcher) and closes the store. */
  readonly dispose: () => Promise<void>
}

/**
 * The platform and its REST API in one: builds the platform's services now (so a broken
 * database or configuration fails here, not on the first request) and answers plain requests.
 * It delivers webhooks from this process unless `dispatcher: false` (leave delivery to workers);
 * `dispose()` stops the dispatcher, letting calls in flight finish.
 */
export const makeHttpApi = async (options: HttpApiOptions): Promise<HttpApi> =>
  fromRuntime(Platform.makeRuntime({ ...options, dispatcher: options.dispatcher ?? true }), options)

/** The REST API over a platform runtime the host already made (for example from `Platform.layerConfig`). */
export const fromRuntime = async (runtime: PlatformRuntime, options: HandlerOptions = {}): Promise<HttpApi> => {
  try {
    await runtime.runtime()
  } catch (error) {
    await runtime.dispose().catch(() => undefined)
    throw error
  }
  return { ...makeHandler(runtime, options), runtime, dispose: () => runtime.dispose() }
}
