import { OrganizationSourceSystem, OrganizationSourceSystemCreate } from "../Domain/Account.js"
import { defineResource } from "../Engine/Resource.js"
import { field } from "../Engine/Tables.js"

export const OrganizationSourceSystemsResource = defineResource({
  name: "organization source system",
  path: "organizations-source-systems",
  table: "organization_source_systems",
  indexes: [],
  output: OrganizationSourceSystem,
  createInput: OrganizationSourceSystemCreate,
  methods: ["find", "get", "create", "remove"],
  ownerField: "organization_id",
  privateFields: { version: field.number },
  unique: [["organization_id", "source_system", "source_system_id"]]
})
