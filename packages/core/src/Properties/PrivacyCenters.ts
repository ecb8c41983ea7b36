import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { decode } from "../Engine/Bodies.js"
import { PrivacyCenterContent } from "./PrivacyCenterContent.js"
import { PrivacyCenter, PrivacyCenterCreate, PrivacyCenterUpdate } from "../Domain/Property.js"
import { defineResource } from "../Engine/Resource.js"
import { forgetOrigins, OriginCache } from "./OriginCache.js"

/** Host names compare without case: kept lower-cased, each once. */
const hosts = (list: ReadonlyArray<string> | null | undefined) =>
  list === null || list === undefined ? list : [...new Set(list.map((h) => h.toLowerCase()))]

/**
 * `content`, where it uses the keys the hosted page reads (a language's texts, `purposes`,
 * `regulation`, `notice_text_content_id`), must mean what the page needs; any other key is the
 * organization's own. Checked, never rewritten: what is stored is what was sent.
 */
const checkContent = (content: unknown) =>
  content === null || content === undefined
    ? Effect.void
    : Either.match(decode(PrivacyCenterContent, content, "content"), { onLeft: Effect.fail, onRight: () => Effect.void })

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
    create: (_principal, row) =>
      Effect.as(checkContent(row.content), { row: { ...row, custom_domains: hosts(row.custom_domains) ?? null } }),
    update: (_principal, before, after) =>
      // A content stored before it was checked stays writable while it is not changed.
      Effect.as(
        JSON.stringify(after.content) === JSON.stringify(before.content) ? Effect.void : checkContent(after.content),
        { ...after, custom_domains: hosts(after.custom_domains) ?? null }
      )
  }
})
