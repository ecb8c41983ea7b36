import * as Effect from "effect/Effect"
import { PrivacyCenter, PrivacyCenterCreate, PrivacyCenterUpdate } from "../Domain/Property.js"
import { defineResource } from "../Engine/Resource.js"
import { forgetOrigins, OriginCache } from "./OriginCache.js"

/** Host names compare without case: kept lower-cased, each once. */
const hosts = (list: ReadonlyArray<string> | null | undefined) =>
  list === null || list === undefined ? list : [...new Set(list.map((h) => h.toLowerCase()))]

/**
 * Logo https, custom domains as host names, language codes and `display_cookies` are schema
 * rules. A custom domain is only a name the center answers to: naming a host proves nothing, so
 * another organization's host is not refused here (which would also tell that it exists); a
 * host is served only when it is a `ready` domain of the center's own organization.
 */
export const PrivacyCentersResource = defineResource({
  name: "privacy center",
  path: "privacy-centers",
  table: "privacy_centers",
  indexes: [{ name: "privacy_centers_organization", columns: ["organization_id", "created_at"] }],
  output: PrivacyCenter,
  createInput: PrivacyCenterCreate,
  updateInput: PrivacyCenterUpdate,
  methods: ["find", "get", "create", "update", "patch", "remove"],
  ownerField: "organization_id",
  defaults: { auth_required: false },
  // Its custom domains are origins its organization's pages record consent from.
  ports: [OriginCache],
  hooks: {
    afterCommit: (output) => forgetOrigins(output.organization_id),
    create: (_principal, row) => Effect.succeed({ row: { ...row, custom_domains: hosts(row.custom_domains) ?? null } }),
    update: (_principal, _before, after) => Effect.succeed({ ...after, custom_domains: hosts(after.custom_domains) ?? null })
  }
})
