import { Platform, type PlatformOptions } from "@cmp/platform"
import { fromRuntime, type HandlerOptions, type HttpApi } from "../src/index.js"

/** The files a host would hand the docs page, kept small: what the handler does with them is under test, not Swagger UI. */
export const docsFiles: Readonly<Record<string, Uint8Array>> = {
  "swagger-ui.css": new TextEncoder().encode("body{}"),
  "swagger-ui-bundle.js": new TextEncoder().encode("window.SwaggerUIBundle=function(){}")
}

/** The API over a platform built as the adapters build it. */
export const makeApi = (options: PlatformOptions & HandlerOptions): Promise<HttpApi> =>
  fromRuntime(Platform.makeRuntime({ ...options, dispatcher: options.dispatcher ?? true }), {
    docsAssets: (name) => docsFiles[name],
    ...options
  })
