import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { nowIso } from "./Clock.js"
import { Ids, nextId, type Row, Storage } from "./Ports.js"
import type { Principal } from "./Principal.js"
import { field, defineTable, jsonField } from "./Tables.js"

/**
 * The audit trail: who changed which configuration record, when, from where, and which fields.
 * An entry holds names and ids only, never a value: a secret, a text or an e-mail address written
 * by the change stays out of it. Entries are written in the change's own transaction, so a change
 * that rolls back leaves none, and one that commits always has its entry.
 */

/** Who made a change, as an entry names it. */
export type AuditPrincipalKind = "api_key" | "member" | "integration" | "host" | "public_key" | "consent_token"

export interface AuditPrincipal {
  readonly kind: AuditPrincipalKind
  readonly id: string
}

/** What a change did: a generic method, or an action's own name (`rotate`, `accept`). */
export type AuditAction = "create" | "update" | "patch" | "remove" | "rotate" | "accept"

/** The columns of an entry; the principal is kept as two columns so that both can be filtered on. */
export const AuditLogFields = {
  id: field.string,
  organization_id: field.optionalString,
  principal_kind: field.string,
  principal_id: field.string,
  action: field.string,
  resource: field.string,
  resource_id: field.string,
  fields: jsonField<ReadonlyArray<string>>(),
  address: field.optionalString,
  created_at: field.timestamp
} as const

export const AuditLogIndexes = [
  { name: "audit_logs_organization", columns: ["organization_id", "created_at"] },
  { name: "audit_logs_created", columns: ["created_at"] }
]

export const AuditLogsTable = defineTable("audit_logs", AuditLogFields, { indexes: AuditLogIndexes })

/**
 * The client address of the HTTP request being answered, set by the HTTP layer around each
 * request (`Effect.locally`); unset for in-process calls and the platform's own jobs. A fiber
 * ref rather than a parameter: every generic use-case writes entries, and none of their callers
 * needs to know.
 */
export const RequestAddress: FiberRef.FiberRef<string | undefined> = FiberRef.unsafeMake<string | undefined>(undefined)

/** Runs `effect` as the answer to a request from `address`: the entries it writes name it. */
export const fromAddress = (address: string | undefined) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.locally(effect, RequestAddress, address)

/**
 * Who stands behind a principal: an API key (operator or client), a person's email session, a
 * platform integration, or the host (its in-process calls, and the platform's own jobs, which act
 * as an in-process operator).
 */
export const auditPrincipalOf = (principal: Principal): AuditPrincipal => {
  switch (principal._tag) {
    case "Operator":
    case "Client":
      return principal.via === "in-process"
        ? { kind: "host", id: principal.keyId }
        : { kind: principal.via === "integration" ? "integration" : "api_key", id: principal.keyId }
    case "Member":
      return { kind: "member", id: principal.personId }
    case "PublicKey":
      return { kind: "public_key", id: principal.organizationId }
    case "ConsentToken":
      return { kind: "consent_token", id: principal.tokenId }
  }
}

/** The host itself, for changes no request made (the first start, an operator's command). */
export const hostPrincipal = (id: string): AuditPrincipal => ({ kind: "host", id })

/** What an entry needs of the changed record's declaration. */
export interface Audited {
  readonly path: string
  readonly ownerField?: string | undefined
}

/** Never named as a changed field: every write moves them. */
const bookkeeping = new Set(["id", "created_at", "updated_at", "version"])

/** The field names an entry lists: sorted, once each, without the bookkeeping columns. */
export const fieldNames = (names: Iterable<string>): ReadonlyArray<string> =>
  [...new Set([...names].filter((n) => !bookkeeping.has(n)))].sort()

/**
 * Writes one entry, inside the caller's transaction: `row` is the changed record (its id, and
 * its organization through the declaration's owner field), `fields` the names it set or changed.
 */
export const recordChange = (
  def: Audited,
  principal: Principal | AuditPrincipal,
  action: AuditAction,
  row: Row,
  fields: Iterable<string>
) =>
  Effect.gen(function*() {
    const who = "kind" in principal ? principal : auditPrincipalOf(principal)
    const owner = def.ownerField === undefined ? undefined : row[def.ownerField]
    const entry = {
      id: yield* nextId,
      organization_id: typeof owner === "string" ? owner : null,
      principal_kind: who.kind,
      principal_id: who.id,
      action,
      resource: def.path,
      resource_id: String(row.id),
      fields: fieldNames(fields),
      address: (yield* FiberRef.get(RequestAddress)) ?? null,
      created_at: yield* nowIso
    }
    // Read nothing back: the entry is the change's, and the change's answer does not show it.
    yield* Effect.orDie((yield* Storage).repository(AuditLogsTable).insert([entry]))
  })

/**
 * An operator's command on the store itself (a signing key's rotation), run without the
 * platform: an operator-wide entry naming the command as the host's, with ids of its own.
 */
export const recordOperatorCommand = (resource: string, id: string, command: string, fields: Iterable<string>) =>
  Effect.provide(recordChange({ path: resource }, hostPrincipal(command), "rotate", { id }, fields), Ids.Live)
