import { health as alive, Metrics, Readiness } from "@cmp/core"
import * as Effect from "effect/Effect"
import type * as ManagedRuntime from "effect/ManagedRuntime"
import type { PlatformServices } from "./Platform.js"

/**
 * The operator's checks for a host that serves its own probes: the same answers as `/healthz`,
 * `/readyz` and `/metrics` of the HTTP API. As Effects on the platform's services (run them with
 * `cmp.runtime`, or in a program given its services), and as the Promise methods
 * `cmp.health()`, `cmp.readiness()` and `cmp.metrics()`.
 */

/** Whether the platform can serve now, and why not. */
export type ReadinessReport = { readonly ready: true } | { readonly ready: false; readonly reason: string }

/** Alive: answers as long as the platform runs. */
export const health: Effect.Effect<{ readonly status: "ok" }> = Effect.succeed(alive)

/** The database answers (within a second) and, where this process delivers, the dispatcher runs. */
export const readiness: Effect.Effect<ReadinessReport, never, Readiness> = Effect.flatMap(Readiness, (r) =>
  Effect.match(r.check, {
    onSuccess: (): ReadinessReport => ({ ready: true }),
    onFailure: (e): ReadinessReport => ({ ready: false, reason: e.message })
  }))

/** Every metric as Prometheus text (the outbox gauges read now). */
export const metrics: Effect.Effect<string, never, Metrics> = Effect.flatMap(Metrics, (m) => Effect.map(m.scrape, (s) => s.text))

/** The checks as Promises, methods of `ConsentPlatformApi`. */
export interface OperatingMethods {
  readonly health: () => Promise<{ readonly status: "ok" }>
  readonly readiness: () => Promise<ReadinessReport>
  readonly metrics: () => Promise<string>
}

export const operatingMethods = (runtime: ManagedRuntime.ManagedRuntime<PlatformServices, unknown>): OperatingMethods => ({
  health: () => Effect.runPromise(health),
  readiness: () => runtime.runPromise(readiness),
  metrics: () => runtime.runPromise(metrics)
})
