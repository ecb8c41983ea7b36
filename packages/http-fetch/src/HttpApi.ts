import { type DocsAssets, fromRuntime, type HandlerOptions, type HttpApi } from "@cmp/http"
import { Platform, type PlatformOptions, type PlatformRuntime } from "@cmp/platform"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"

export interface HttpApiOptions extends PlatformOptions, HandlerOptions {}

let directory: string | undefined
const assets = new Map<string, Uint8Array>()

/** Swagger UI's files for the docs page, from the installed `swagger-ui-dist`: each read once, kept in memory. */
export const swaggerUiAssets: DocsAssets = (name) => {
  const kept = assets.get(name)
  if (kept !== undefined) return kept
  directory ??= path.dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"))
  const bytes = fs.readFileSync(path.join(directory, name))
  assets.set(name, bytes)
  return bytes
}

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
