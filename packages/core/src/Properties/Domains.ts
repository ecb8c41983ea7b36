import * as Effect from "effect/Effect"
import { Domain, DomainCreate, DomainUpdate, pageUsages } from "../Domain/Property.js"
import { InvalidInput } from "../Domain/Errors.js"
import { DnsRecords } from "./DnsRecords.js"
import { type DeployResult, Provisioner } from "./Provisioner.js"
import { Storage } from "../Engine/Ports.js"
import { eq } from "../Engine/Query.js"
import { declareResource, portList, type StoredRow } from "../Engine/Resource.js"
import { checkQuota } from "../Engine/Gates.js"
import { Settings } from "../Engine/Settings.js"
import { isOperator } from "../Engine/Principal.js"
import { randomToken } from "../Engine/Random.js"
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

/**
 * The operator's move on a page host: `ready` from a state a client could schedule, after a
 * check of the holder made by hand instead of the TXT record.
 */
const operatorReadyFrom: ReadonlyArray<string> = ["draft", "failed"]

const badMove = (from: string, to: string, pageHost: boolean) => {
  const allowed = clientMoves[from] ?? []
  const next = allowed.length > 0 ? allowed.join(", ") : "none (provisioning is in progress)"
  // Said only where it is true: the operator's `ready` is a move of page hosts, from these states.
  const byOperator = pageHost && to === "ready" && operatorReadyFrom.includes(from)
    ? " (only the operator sets a page host 'ready' without its TXT record)"
    : ""
  return new InvalidInput({
    message: `Invalid status: a domain in '${from}' cannot move to '${to}'; allowed next states: ${next}${byOperator}`,
    errors: { status: `allowed next states from '${from}': ${next}` }
  })
}

/** A host that serves the organization's pages (`privacy-center`, `preference-center`): proven before it is served. */
export const isPageHost = (domain: { readonly usage: string }): boolean => (pageUsages as ReadonlyArray<string>).includes(domain.usage)

/** The name of a page host's TXT record. */
export const verificationRecord = (domain: string) => `_cmp-verify.${domain}`

/** A page host's proof: random per domain, so holding one name's value proves nothing of another. */
export const newVerification = (domain: string) => ({ record: verificationRecord(domain), value: randomToken(24) })

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

/** Why the provisioner's answer left the domain `failed`. */
const provisionerFailed = "The provisioner could not deploy the domain"
const undeployFailed = "The provisioner could not de-provision the domain"

/**
 * Whether a page host's TXT record holds its value: `undefined` when it does, else why not (the
 * reason kept on the failed domain).
 */
const unproven = (domain: DomainRow): Effect.Effect<string | undefined, never, DnsRecords> =>
  Effect.gen(function*() {
    const verification = domain.verification
    if (verification === null) return "The domain has no verification value; ask the operator"
    const found = yield* Effect.flatMap(DnsRecords, (dns) => dns.txt(verification.record)).pipe(Effect.either)
    if (found._tag === "Left") return `The TXT record ${verification.record} could not be looked up (${found.left.code})`
    return found.right.some((r) => r.trim() === verification.value)
      ? undefined
      : `No TXT record ${verification.record} holds the domain's verification value`
  })

/**
 * Deploys a scheduled domain: a custom page host only once its TXT record proves its holder
 * (whatever the provisioner: a provisioner checks where a host points, not who holds it); an
 * operator's `ready` stands for that proof. A managed host is in the operator's own zone.
 */
const deployScheduled = (domain: DomainRow, proofByHand: boolean) =>
  Effect.gen(function*() {
    if (isPageHost(domain) && domain.type === "custom" && !proofByHand) {
      const reason = yield* unproven(domain)
      if (reason !== undefined) return { status: "failed" as DeployResult, failure_reason: reason }
    }
    const status = yield* deploy(domain)
    return { status, failure_reason: status === "failed" ? provisionerFailed : null }
  })

const undeploy = (domain: DomainRow) =>
  Effect.flatMap(Provisioner, (p) => p.undeploy(domain))

export const DomainsResource = Domains.with<Provisioner | OriginCache | DnsRecords>({
  // A ready domain is an origin its organization's pages record consent from.
  ports: portList<Provisioner | OriginCache | DnsRecords>(Provisioner, OriginCache, DnsRecords),
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
        const verification = isPageHost(row) ? newVerification(row.id) : null
        return { row: { ...row, type, status: "draft", verification, failure_reason: null } }
      }),
    update: (principal, before, after, input) =>
      Effect.gen(function*() {
        const from = before.status
        const asked = input.status
        let status = from
        // The operator's `ready` on a page host: the holder checked by hand, not by its TXT record.
        const proofByHand = asked === "ready" && asked !== from && isPageHost(before) && isOperator(principal) &&
          operatorReadyFrom.includes(from)
        if (asked !== undefined && asked !== from) {
          if (!proofByHand && !(clientMoves[from] ?? []).includes(asked)) {
            return yield* Effect.fail(badMove(from, asked, isPageHost(before)))
          }
          status = proofByHand ? "scheduled" : asked
        }
        let failure_reason = before.failure_reason
        if (status === "scheduled") {
          if (after.enabled !== true) {
            return yield* Effect.fail(new InvalidInput({
              message: "Invalid status: a disabled domain cannot be deployed; enable it first",
              errors: { status: "a disabled domain cannot be deployed" }
            }))
          }
          // scheduled → deploying → ready | failed, as far as the proof and the provisioner get now.
          const deployed = yield* deployScheduled({ ...after, status }, proofByHand)
          status = deployed.status
          failure_reason = deployed.failure_reason
        } else if (status === from && before.enabled === true && after.enabled === false && (from === "ready" || from === "failed")) {
          // Disabling de-provisions the domain; it stays, as an undeployed draft.
          const done = yield* undeploy(after)
          status = done === "removed" ? "draft" : done
          failure_reason = done === "failed" ? undeployFailed : null
        }
        return { ...after, status, failure_reason: status === "failed" ? failure_reason : null }
      }),
    afterUpdate: (_principal, _before, after) =>
      Effect.gen(function*() {
        if (after.status !== "to_be_deleted") return
        // to_be_deleted → deleting → removed (the record goes) | failed.
        const done = yield* undeploy(after)
        const repo = (yield* Storage).repository(Domains.tableDef)
        if (done === "removed") yield* Effect.orDie(repo.remove(after.id))
        else {
          yield* Effect.orDie(repo.patch(after.id, { status: done, failure_reason: done === "failed" ? undeployFailed : null }, after.version))
        }
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
