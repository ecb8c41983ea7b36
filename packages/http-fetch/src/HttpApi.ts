import { fromRuntime, type HandlerOptions, type HttpApi } from "@cmp/http"
import { Platform, type PlatformOptions, type PlatformRuntime, swaggerUiAssets } from "@cmp/platform"

export interface HttpApiOptions extends PlatformOptions, HandlerOptions {}

/** The REST API over a runtime the host made, its docs page served from `swagger-ui-dist` unless the host gives other files. */
export const apiFromRuntime = (runtime: PlatformRuntime, options: HandlerOptions = {}): Promise<HttpApi> =>
  fromRuntime(runtime, { ...options, docsAssets: options.docsAssets ?? swaggerUiAssets })

/**
 * The platform and its REST API in one: builds the platform's services now (so a broken
 * database or configuration fails here, not on the first request) and answers plain requests.
 * It delivers webhooks from this process unless `dispatcher: false` (leave delivery to workers);
 * `dispose()` stops the dispatcher, letting calls in flight finish.
 */
export const makeHttpApi = (options: HttpApiOptions): Promise<HttpApi> =>
  apiFromRuntime(Platform.makeRuntime({ ...options, dispatcher: options.dispatcher ?? true }), options)
