import { type ApiRequest, errorResponse, fromNodeRequest, fromRuntime, type HandlerOptions, type HttpApi, type HttpApiOptions, makeHttpApi, writeNodeResponse } from "@cmp/http"
import type { PlatformRuntime } from "@cmp/platform"
import express from "express"

export interface Api extends HttpApi {
  /** Mount with `app.use(api.router)` or `app.use("/prefix", api.router)`, before or after the host's `express.json()`. */
  readonly router: express.Router
}

/**
 * The request for the API. A host's own body parser (`express.json()`) mounted first has spent
 * the stream: its result is sent on as JSON, still under the request's own content type (so a
 * form body parsed by `express.urlencoded()` is refused as a form, 415).
 */
const requestOf = (req: express.Request): ApiRequest => {
  const request = fromNodeRequest(req, req.baseUrl)
  return req.readableEnded && req.body !== undefined ? { ...request, body: JSON.stringify(req.body) } : request
}

/** `handle` answers every error itself; should it still throw, the host's error page is not ours to send. */
const internalError = errorResponse(500, "An internal error occurred", {}, { "x-content-type-options": "nosniff" })

const routerOf = (api: HttpApi): express.Router => {
  const router = express.Router()
  router.use((req, res, next) => {
    // Paths outside the API (`/v1`, `/openapi.json`, `/docs`) stay the host's.
    if (!api.owns(req.url)) return next()
    api.handle(requestOf(req)).then((response) => writeNodeResponse(res, response), () => writeNodeResponse(res, internalError))
  })
  return router
}

/** The API as an Express router, over a platform built from `options`. */
export const createApi = async (options: HttpApiOptions): Promise<Api> => {
  const api = await makeHttpApi(options)
  return { ...api, router: routerOf(api) }
}

/** The API as an Express router, over a platform runtime the host already made. */
export const createApiFromRuntime = async (runtime: PlatformRuntime, options: HandlerOptions = {}): Promise<Api> => {
  const api = await fromRuntime(runtime, options)
  return { ...api, router: routerOf(api) }
}
