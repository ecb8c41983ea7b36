import * as Effect from "effect/Effect"
import { Domain, DomainCreate, DomainUpdate } from "../Domain/Property.js"
import { InvalidInput } from "../Domain/Errors.js"
import { Provisioner } from "./Provisioner.js"
import { Storage } from "../Engine/Ports.js"
import { eq } from "../Engine/Query.js"
import { declareResource, portList, type StoredRow } from "../Engine/Resource.js"
import { checkQuota } from "../Engine/Gates.js"
import { Settings } from "../Engine/Settings.js"
import { forgetOrigins, OriginCache } from "./OriginCache.js"

/**
 * The moves a client may ask for (api.md): deploy a draft or retry a failure, delete a ready
 * (or failed) domain. `deploying` and `deleting` belong to the provisioner.
 */
export const clientMoves: Readonly<Record<string, ReadonlyArray<string>>> = {
  draft: ["scheduled"],
  failed: ["scheduled", "to_be_deleted"],
  ready: ["to_be_deleted"],
  scheduled: [],
  deploying: [],
  to_be_deleted: [],
  deleting: []
}

const badMove = (from: string, to: string) => {
  const allowed = clientMoves[from] ?? []
  const next = allowed.length > 0 ? allowed.join(", ") : "none (provisioning is in progress)"
  return new InvalidInput({
    message: `Invalid status: a domain in '${from}' cannot move to '${to}'; allowed next states: ${next}`,
    errors: { status: `allowed next states from '${from}': ${next}` }
  })
}

/** `managed` when the domain is under the operator's configured zone, `custom` otherwise. */
export const domainType = (fqdn: string, zone: string | undefined) => {
  const z = zone?.trim().toLowerCase().replace(/^\.|\.$/g, "")
  return z && fqdn.endsWith(`.${z}`) ? "managed" : "custom"
}

/** A domain name as stored: trimmed, lower-cased, without the root dot. */
export const domainName = (name: string) => name.trim().toLowerCase().replace(/\.$/, "")

const Domains = declareResource({
  name: "domain",
  path: "domains",
  table: "domains",
  indexes: [{ name: "domains_organization", columns: ["organization_id", "created_at"] }],
  output: Domain,
  createInput: DomainCreate,
  updateInput: DomainUpdate,
  methods: ["find", "get", "create", "update", "patch", "remove"],
  ownerField: "organization_id",
  defaults: { enabled: true, status: "draft" },
  // "Example.COM." is the domain example.com: trimmed, lower-cased, without the root dot, then validated.
  normalizeCreate: (body) => typeof body.id === "string" ? { ...body, id: domainName(body.id) } : { ...body },
  // ... and reads, changes and removals by that spelling find the same domain.
  normalizeId: (id) => domainName(id)
})

type DomainRow = StoredRow<typeof Domains>

const deploy = (domain: DomainRow) =>
  Effect.flatMap(Provisioner, (p) => p.deploy(domain))

const undeploy = (domain: DomainRow) =>
  Effect.flatMap(Provisioner, (p) => p.undeploy(domain))

export const DomainsResource = Domains.with<Provisioner | OriginCache>({
  // A ready domain is an origin its organization's pages record consent from.
  ports: portList<Provisioner | OriginCache>(Provisioner, OriginCache),
  hooks: {
    afterCommit: (output) => forgetOrigins(output.organization_id),
    create: (_principal, row) =>
      Effect.gen(function*() {
        const settings = yield* Settings
        const type = domainType(row.id, settings.managedZone)
        // `domains_per_delivery_cloud` bounds the client's own (custom) domains: one delivery cloud per organization.
        if (type === "custom") {
          yield* checkQuota({ ...Domains, quota: "domains_per_delivery_cloud" }, row.organization_id, [
            eq("type", "custom")
          ])
        }
        return { row: { ...row, type, status: "draft" } }
      }),
    update: (_principal, before, after, input) =>
      Effect.gen(function*() {
        const from = before.status
        const asked = input.status
        let status = from
        if (asked !== undefined && asked !== from) {
          if (!(clientMoves[from] ?? []).includes(asked)) return yield* Effect.fail(badMove(from, asked))
          status = asked
        }
        if (status === "scheduled") {
          if (after.enabled !== true) {
            return yield* Effect.fail(new InvalidInput({
              message: "Invalid status: a disabled domain cannot be deployed; enable it first",
              errors: { status: "a disabled domain cannot be deployed" }
            }))
          }
          // scheduled → deploying → ready | failed, as far as the provisioner gets now.
          status = yield* deploy({ ...after, status })
        } else if (status === from && before.enabled === true && after.enabled === false && (from === "ready" || from === "failed")) {
          // Disabling de-provisions the domain; it stays, as an undeployed draft.
          const done = yield* undeploy(after)
          status = done === "removed" ? "draft" : done
        }
        return { ...after, status }
      }),
    afterUpdate: (_principal, _before, after) =>
      Effect.gen(function*() {
        if (after.status !== "to_be_deleted") return
        // to_be_deleted → deleting → removed (the record goes) | failed.
        const done = yield* undeploy(after)
        const repo = (yield* Storage).repository(Domains.tableDef)
        if (done === "removed") yield* Effect.orDie(repo.remove(after.id))
        else yield* Effect.orDie(repo.patch(after.id, { status: done }, after.version))
      }),
    remove: (_principal, row) =>
      Effect.gen(function*() {
        const status = row.status
        if (["scheduled", "deploying", "to_be_deleted", "deleting"].includes(status)) {
          return yield* Effect.fail(new InvalidInput({
            message: `A domain in '${status}' cannot be removed while its provisioning is in progress`,
            errors: { status: `is '${status}'` }
          }))
        }
        if (status === "ready" && (yield* undeploy(row)) !== "removed") {
          return yield* Effect.fail(new InvalidInput({
            message: "The domain could not be de-provisioned; it is left in place",
            errors: { status: "de-provisioning failed" }
          }))
        }
      })
  }
})
