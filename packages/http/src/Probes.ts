import { answerHealth, answerProbe, isProbePath, notRunning, type PlatformRuntime } from "@cmp/core"
import * as Exit from "effect/Exit"
import { type ApiRequest, type ApiResponse, header } from "./Message.js"

export { isProbePath }

/** `/healthz`, `/readyz` and `/metrics` over the platform's runtime (core's `answerProbe`). */
export const makeProbes = (runtime: PlatformRuntime, metricsToken: string | undefined) =>
async (request: ApiRequest, lowerPath: string, path: string): Promise<ApiResponse> => {
  const base = request.mountPath ?? ""
  const probe = {
    path: lowerPath,
    method: request.method,
    authorization: header(request.headers, "authorization"),
    shownAs: `${request.method} ${base}${path}`
  }
  if (lowerPath === "/healthz") return answerHealth(probe)
  const exit = await runtime.runPromiseExit(answerProbe(probe, metricsToken))
  if (Exit.isSuccess(exit)) return exit.value
  // A platform that could not be built (its database refused at start) is not ready, nor much else.
  return notRunning
}
