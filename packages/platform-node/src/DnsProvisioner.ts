import { type DeployResult, Provisioner, type Row } from "@cmp/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as dns from "node:dns"

export interface DnsProvisionerOptions {
  /** The host every custom domain must be a CNAME of (`DOMAIN_CNAME_TARGET`). */
  readonly target: string
  /** Replaces `dns.promises.resolveCname` (tests). */
  readonly resolveCname?: ((hostname: string) => Promise<ReadonlyArray<string>>) | undefined
  /** How long one look-up may take. */
  readonly timeoutMs?: number | undefined
}

const normalize = (h: string) => h.trim().toLowerCase().replace(/\.$/, "")

/**
 * Deploys a custom domain when its CNAME points at the configured target (else `failed`);
 * a managed domain lives in the operator's zone and is ready at once. Removal has nothing to
 * undo at the DNS level, so it completes at once.
 */
export const dnsProvisioner = (options: DnsProvisionerOptions): Effect.Effect<typeof Provisioner.Service> =>
  Effect.sync(() => {
    const resolve = options.resolveCname ?? ((h: string) => dns.promises.resolveCname(h))
    const target = normalize(options.target)
    return {
      deploy: (domain: Row) =>
        domain.type === "managed"
          ? Effect.succeed<DeployResult>("ready")
          : Effect.tryPromise(() => resolve(domain.id as string)).pipe(
            Effect.timeout(options.timeoutMs ?? 5_000),
            Effect.map((names): DeployResult => (names.some((n) => normalize(n) === target) ? "ready" : "failed")),
            Effect.orElseSucceed((): DeployResult => "failed")
          ),
      undeploy: () => Effect.succeed("removed" as const)
    }
  })

export const DnsProvisionerLive = (options: DnsProvisionerOptions) => Layer.effect(Provisioner, dnsProvisioner(options))

/**
 * Domain provisioning (`DOMAIN_PROVISIONER`): `immediate` (the default) completes at once; `dns`
 * checks that a custom domain is a CNAME of `cnameTarget`; `custom` is any `Provisioner`.
 */
export type ProvisionerOption =
  | { readonly kind: "immediate" }
  | { readonly kind: "dns"; readonly cnameTarget: string }
  | { readonly kind: "custom"; readonly service: typeof Provisioner.Service }

export const provisionerLayer = (option: ProvisionerOption | undefined): Layer.Layer<Provisioner> =>
  option?.kind === "dns"
    ? DnsProvisionerLive({ target: option.cnameTarget })
    : option?.kind === "custom"
    ? Layer.succeed(Provisioner, option.service)
    : Provisioner.ImmediateLayer
