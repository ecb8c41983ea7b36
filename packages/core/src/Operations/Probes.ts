import * as Effect from "effect/Effect"
import { errorBody, type ErrorStatus } from "../Domain/ErrorBody.js"
import { Metrics } from "../Engine/Metrics.js"
import { SecretComparer } from "../Engine/Ports.js"
import { health, Readiness } from "./Readiness.js"

/**
 * The operator's paths, outside `/v1` and its accounting: `/healthz` (alive), `/readyz` (can
 * serve) and `/metrics` (Prometheus text, behind `METRICS_TOKEN`), answered as plain data so the
 * REST handler and a worker that serves no API give the same answers.
 */

export const probePaths: ReadonlyArray<string> = ["/healthz", "/readyz", "/metrics"]

/** Whether a path (relative to the mount point, lower case, no query) is a probe's. */
export const isProbePath = (lowerPath: string): boolean => probePaths.includes(lowerPath)

export interface ProbeAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** A probe's answer is about this moment: never kept by a cache on the way. */
const fresh = { "cache-control": "no-store" }

const jsonAnswer = (status: number, value: unknown, headers: Record<string, string> = {}): ProbeAnswer => ({
  status,
  headers: { "content-type": "application/json; charset=utf-8", ...fresh, ...headers },
  body: JSON.stringify(value)
})

const errorAnswer = (code: ErrorStatus, message: string, headers: Record<string, string> = {}) =>
  jsonAnswer(code, errorBody(code, message), headers)

/** The answer of a probe whose platform is not running (its services could not be built, or it is stopping). */
export const notRunning: ProbeAnswer = errorAnswer(503, "Not ready: the platform is not running", { "retry-after": "5" })

export interface ProbeRequest {
  /** The probe's path, lower case (`/readyz`). */
  readonly path: string
  readonly method: string
  /** The `Authorization` header, when sent. */
  readonly authorization: string | undefined
  /** What a 404 names: the method and path as the client sent them (with the mount path). */
  readonly shownAs: string
}

const onlyRead = (request: ProbeRequest): ProbeAnswer | undefined => {
  const method = request.method.toUpperCase()
  return method === "GET" || method === "HEAD"
    ? undefined
    : errorAnswer(405, `Method ${request.method} is not supported by ${request.path}`, { allow: "GET, HEAD" })
}

/**
 * `/healthz` needs no service: alive is answering at all, even while the platform's services
 * cannot be built.
 */
export const answerHealth = (request: ProbeRequest): ProbeAnswer => onlyRead(request) ?? jsonAnswer(200, health)

/** Answers a probe path; `metricsToken` unset or empty makes `/metrics` a 404 like any unknown path. */
export const answerProbe = (
  request: ProbeRequest,
  metricsToken: string | undefined
): Effect.Effect<ProbeAnswer, never, Readiness | Metrics | SecretComparer> =>
  Effect.gen(function*() {
    const token = metricsToken === "" ? undefined : metricsToken
    if (request.path === "/metrics" && token === undefined) return errorAnswer(404, `Page not found: ${request.shownAs}`)
    const refused = onlyRead(request)
    if (refused !== undefined) return refused
    if (request.path === "/healthz") return answerHealth(request)
    if (request.path === "/readyz") {
      const readiness = yield* Readiness
      return yield* Effect.match(readiness.check, {
        onSuccess: () => jsonAnswer(200, { status: "ready" }),
        onFailure: (e) => errorAnswer(503, e.message, { "retry-after": "5" })
      })
    }
    const given = request.authorization === undefined ? undefined : /^Bearer\s+(\S+)\s*$/i.exec(request.authorization)?.[1]
    if (given === undefined || !(yield* Effect.flatMap(SecretComparer, (c) => c.equals(given, token!)))) {
      return errorAnswer(401, "The metrics need Authorization: Bearer <METRICS_TOKEN>", { "www-authenticate": "Bearer" })
    }
    const scraped = yield* Effect.flatMap(Metrics, (m) => m.scrape)
    return { status: 200, headers: { "content-type": scraped.contentType, ...fresh }, body: scraped.text }
  })
