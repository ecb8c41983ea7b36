import * as Schema from "effect/Schema"
import { Id, Timestamp } from "../Domain/Common.js"
import { AuditLogFields, AuditLogIndexes, AuditLogsTable, type AuditPrincipalKind } from "../Engine/AuditTrail.js"
import { declareResource } from "../Engine/Resource.js"
import { toOutput } from "../Engine/Views.js"

/**
 * `/v1/audit-logs`: the audit trail, read only. The generic writes (and the actions that change
 * configuration outside them) write its entries (`Engine/AuditTrail`); the API never does, for
 * anyone. An organization's keys and members read its entries; the operator reads every entry,
 * the operator-wide ones (no organization) and those of removed organizations included.
 */

export const AuditPrincipalKinds = Schema.Literal("api_key", "member", "integration", "host", "public_key", "consent_token")

export const AuditLog = Schema.Struct({
  id: Id,
  /** The changed record's organization (the organization itself for `organizations`); null for operator-wide records. */
  organization_id: Schema.NullOr(Id),
  /** Who made the change: an API key, a member (its person), a platform integration, or the host. */
  principal: Schema.Struct({ kind: AuditPrincipalKinds, id: Id }),
  /** `create`, `update`, `patch`, `remove`, or an action's own name (`rotate`, `accept`). */
  action: Schema.String,
  /** The service path of the changed record (`webhooks`, `keys`, `organizations`). */
  resource: Schema.String,
  resource_id: Id,
  /** The names of the fields the change set or changed: never their values. */
  fields: Schema.Array(Schema.String),
  /** The client address of the HTTP request; null for in-process calls and the platform's own jobs. */
  address: Schema.NullOr(Schema.String),
  created_at: Timestamp
}).annotations({
  identifier: "AuditLog",
  examples: [{
    id: "0193a6f6-3d9e-7a27-84c1-5f7b2e0d6c63",
    organization_id: "0193a6f2-7c41-7d1e-9a3b-5f2e8c4d1a07",
    principal: { kind: "api_key", id: "0193a6f6-1a2b-7c3d-8e4f-5a6b7c8d9e0f" },
    action: "patch",
    resource: "webhooks",
    resource_id: "0193a6f4-0a9c-7e41-a6d3-2f8b5c1e9d30",
    fields: ["url"],
    address: "203.0.113.7",
    created_at: "2026-11-21T10:00:00.000Z"
  }]
})

const AuditLogs = declareResource({
  name: "audit log entry",
  path: "audit-logs",
  table: AuditLogsTable.table,
  indexes: AuditLogIndexes,
  output: AuditLog,
  methods: ["find", "get"],
  ownerField: "organization_id",
  // An organization's removal leaves its entries, which the operator still reads.
  outlivesOwner: true,
  // Reading the trail changes nothing: no entry about entries.
  audited: false,
  transient: ["principal"],
  privateFields: { principal_kind: AuditLogFields.principal_kind, principal_id: AuditLogFields.principal_id },
  queryable: ["principal_kind", "principal_id"],
  cursorPaging: true
})

export const AuditLogsResource = AuditLogs.with({
  hooks: {
    // Stored as two columns, each filtered on (`principal_kind`, `principal_id`); shown as one object.
    present: (row) => ({
      ...toOutput(AuditLogs, row),
      principal: { kind: row.principal_kind as AuditPrincipalKind, id: row.principal_id }
    })
  }
})
