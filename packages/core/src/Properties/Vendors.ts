import { Vendor, VendorCreate, VendorUpdate } from "../Domain/Property.js"
import { defineResource } from "../Engine/Resource.js"
import { field } from "../Engine/Tables.js"
import { ownerFromProperty } from "./Properties.js"

/** A vendor of a property; `organization_id` is a private copy of the property's, for scope. */
export const VendorsResource = defineResource({
  name: "vendor",
  path: "vendors",
  table: "vendors",
  indexes: [{ name: "vendors_organization", columns: ["organization_id", "created_at"] }],
  output: Vendor,
  createInput: VendorCreate,
  updateInput: VendorUpdate,
  methods: ["find", "get", "create", "update", "patch", "remove"],
  ownerField: "organization_id",
  privateFields: { organization_id: field.string },
  queryable: ["organization_id"],
  unique: [["property_id", "metadata_id"]],
  defaults: { status: "draft" },
  references: [{ field: "property_id", table: "properties", onDelete: "cascade" }],
  ownerFrom: (principal, input) => ownerFromProperty(principal, input)
})
