import { type ApiRequest, type HandlerOptions, type HttpApi } from "@cmp/http"
import type { PlatformRuntime } from "@cmp/platform"
import express from "express"
import { apiFromRuntime, type HttpApiOptions, makeHttpApi } from "./HttpApi.js"
import { answerNode, fromNodeRequest } from "./Node.js"

export interface Api extends HttpApi {
  /**
   * Mount with `app.use(api.router)` or `app.use("/prefix", api.router)`, before or after the
   * host's `express.json()`. `dispose()` stops the webhook dispatcher (letting calls in flight
   * finish) and closes the store.
   */
  readonly router: express.Router
}

/**
 * The request for the API. A host's own body parser (`express.json()`) mounted first has spent
 * the stream: what it parsed is taken as it is (under the host's body limit), still under the
 * request's own content type (so a form parsed by `express.urlencoded()` is refused, 415). Text
 * or bytes a host's `express.text()`/`express.raw()` kept are parsed by the API as a body.
 */
const requestOf = (req: express.Request): ApiRequest => {
  const request = fromNodeRequest(req, req.baseUrl)
  const parsedByHost = (req as { _body?: unknown })._body === true || (req.body !== undefined && req.readableEnded)
  if (!parsedByHost || req.body === undefined) return request
  if (typeof req.body === "string" || req.body instanceof Uint8Array) return { ...request, body: req.body }
  return { ...request, body: undefined, parsedBody: req.body }
}

const routerOf = (api: HttpApi): express.Router => {
  const router = express.Router()
  router.use((req, res, next) => {
    // Paths outside the API (`/v1`, `/openapi.json`, `/docs`) stay the host's.
    if (!api.owns(req.url)) return next()
    answerNode(api, requestOf(req), res)
  })
  return router
}

/**
 * The API as an Express router, over a platform built from `options`. It delivers webhooks from
 * this process unless `dispatcher: false` (when `pnpm worker` processes deliver).
 */
export const createApi = async (options: HttpApiOptions): Promise<Api> => {
  const api = await makeHttpApi(options)
  return { ...api, router: routerOf(api) }
}

/** The API as an Express router, over a platform runtime the host already made. */
export const createApiFromRuntime = async (runtime: PlatformRuntime, options: HandlerOptions = {}): Promise<Api> => {
  const api = await apiFromRuntime(runtime, options)
  return { ...api, router: routerOf(api) }
}
