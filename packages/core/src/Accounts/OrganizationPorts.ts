import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { Row } from "../Engine/Ports.js"

/**
 * Ports of the organization resources. The resources that use one say so in their type, so a
 * platform composed without it does not compile; none has a silent default.
 */

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


/**
 * Signs a URL so its target can check it was issued by this server and is not expired; and
 * checks the values this server puts in URLs for itself (a page cursor).
 */
export class UrlSigner extends Context.Tag("@cmp/core/UrlSigner")<
  UrlSigner,
  {
    readonly sign: (url: string, expiresAtSeconds: number) => Effect.Effect<string>
    /**
     * A keyed check value (base64url) of `data`, with a key of its own per `purpose`: a value
     * handed out for one purpose is never taken for another, nor for a signed URL. Every server
     * sharing the store computes the same.
     */
    readonly mac: (purpose: string, data: string) => Effect.Effect<string>
  }
>() {}

/** Parses a PEM certificate; `Some(reason)` when it is not a usable certificate. */
export class CertificateValidator extends Context.Tag("@cmp/core/CertificateValidator")<
  CertificateValidator,
  { readonly check: (pem: string, nowMillis: number) => Effect.Effect<Option.Option<string>> }
>() {}
