import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { Row } from "../Engine/Ports.js"

/** The state a deployment reached: done at once, failed, or still running (finished later). */
export type DeployResult = "ready" | "failed" | "deploying"
export type UndeployResult = "removed" | "failed" | "deleting"

/** Provisions a domain (certificate, routing) when it is scheduled, and removes it when deleted. */
export class Provisioner extends Context.Tag("@cmp/core/Provisioner")<
  Provisioner,
  {
    readonly deploy: (domain: Row) => Effect.Effect<DeployResult>
    readonly undeploy: (domain: Row) => Effect.Effect<UndeployResult>
  }
>() {
  /** The development default: scheduled → deploying → ready, to_be_deleted → deleting → removed, at once. */
  static readonly Immediate: Context.Tag.Service<Provisioner> = {
    deploy: () => Effect.succeed("ready"),
    undeploy: () => Effect.succeed("removed")
  }
  static readonly ImmediateLayer = Layer.succeed(Provisioner, Provisioner.Immediate)
}
