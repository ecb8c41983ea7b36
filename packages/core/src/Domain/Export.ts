import * as Schema from "effect/Schema"
import { Audit, exampleIds, Id, Name, NonNegativeInt, Timestamp, Url } from "./Common.js"

// ---------------------------------------------------------------- configurations

export const DirectoryDestination = Schema.Struct({
  type: Schema.Literal("directory"),
  path: Schema.String.pipe(
    Schema.filter((s) => s.trim().length > 0, { message: () => "must not be empty" }),
    Schema.maxLength(4096, { message: () => "must be at most 4096 characters" }),
    /** Relative to the server's exports root; never absolute, never `..`. */
    Schema.filter((s) => !s.startsWith("/") && !s.startsWith("\\") && !/^[a-zA-Z]:/.test(s) &&
      !s.split(/[\\/]/).includes("..") && !s.includes("\0"), {
      message: () => "must be a relative path under the exports root, without '..'"
    })
  )
})
export const HttpsDestination = Schema.Struct({
  type: Schema.Literal("https"),
  /** https; plain http only for hosts in WEBHOOK_ALLOW_HOSTS (checked by the service). */
  url: Url
})

/** Discriminated on `type`. */
export const ExportDestination = Schema.Union(DirectoryDestination, HttpsDestination)
export type ExportDestination = typeof ExportDestination.Type

const Destinations = Schema.Array(ExportDestination).pipe(
  Schema.minItems(1, { message: () => "must have at least one destination" })
)

export const ExportConfig = Schema.Struct({
  id: Id,
  organization_id: Id,
  name: Name,
  enabled: Schema.Boolean,
  destinations: Destinations,
  ...Audit
})
export type ExportConfig = typeof ExportConfig.Type

const exampleExport = {
  name: "Nightly export",
  enabled: true,
  destinations: [{ type: "https", url: "https://exports.acme.example.com/consents" }]
} as const

export const ExportConfigCreate = Schema.Struct({
  organization_id: Id,
  name: Name,
  enabled: Schema.optional(Schema.Boolean),
  destinations: Destinations
}).annotations({ examples: [{ organization_id: exampleIds.organization, ...exampleExport }] })
export const ExportConfigUpdate = Schema.Struct({
  name: Name,
  enabled: Schema.Boolean,
  destinations: Destinations
}).annotations({ examples: [exampleExport] })

// ---------------------------------------------------------------- runs (`exports/execute`)

/** Exports the events and users changed in [from, to). */
export const ExportRunInput = Schema.Struct({
  organization_id: Id,
  export_config_id: Id,
  from: Timestamp,
  to: Timestamp
}).pipe(
  // On the struct, which the OpenAPI document shows (a refinement it cannot).
  Schema.annotations({
    examples: [{
      organization_id: exampleIds.organization,
      export_config_id: exampleIds.exportConfig,
      from: "2026-01-01T00:00:00.000Z",
      to: "2026-02-01T00:00:00.000Z"
    }]
  }),
  Schema.filter((r) =>
    Date.parse(r.to) < Date.parse(r.from) ? { path: ["to"], message: "must not be before from" } : undefined
  )
)
export type ExportRunInput = typeof ExportRunInput.Type

export const ExportRunStatus = Schema.Literal("succeeded", "failed")

export const ExportRun = Schema.Struct({
  id: Id,
  organization_id: Id,
  export_config_id: Id,
  from: Timestamp,
  to: Timestamp,
  status: ExportRunStatus,
  events_count: NonNegativeInt,
  users_count: NonNegativeInt,
  destinations_count: NonNegativeInt,
  error: Schema.NullOr(Schema.String),
  ...Audit
})
export type ExportRun = typeof ExportRun.Type
