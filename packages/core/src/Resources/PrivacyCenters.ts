import { PrivacyCenter, PrivacyCenterCreate, PrivacyCenterUpdate } from "../Domain/Property.js"
import { defineResource } from "../Resource.js"

/** Logo https, custom domains without scheme or slash, language codes and `display_cookies` are schema rules. */
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
  defaults: { auth_required: false }
})
