import * as Effect from "effect/Effect"
import { Vendor, VendorCreate, VendorUpdate } from "../Domain/Property.js"
import { Storage } from "../Ports.js"
import { eq } from "../Query.js"
import { defineResource, field } from "../Resource.js"
import { CookiesResource } from "./Cookies.js"
import { ownerFromProperty } from "./Properties.js"

/** A vendor of a property; `organization_id` is a private copy of the property's, for scope. */
export const VendorsResource = defineResource({
  name: "vendor",
  path: "vendors",
  table: "vendors",
  output: Vendor,
  createInput: VendorCreate,
  updateInput: VendorUpdate,
  methods: ["find", "get", "create", "update", "patch", "remove"],
  ownerField: "organization_id",
  privateFields: { organization_id: field.string },
  queryable: ["organization_id"],
  unique: [["property_id", "metadata_id"]],
  defaults: { status: "draft" },
  ownerFrom: (principal, input) => ownerFromProperty(principal, input),
  hooks: {
    // Cookies that named the removed vendor no longer name any.
    afterRemove: (_p, vendor) =>
      Effect.gen(function*() {
        const repo = (yield* Storage).repository(CookiesResource.tableDef)
        const page = yield* repo.find({ count: false, where: [eq("vendor_id", vendor.id as string)], sort: [], limit: 10_000, skip: 0 })
        for (const c of page.data) {
          yield* Effect.orDie(repo.patch(c.id as string, { vendor_id: null, updated_at: vendor.updated_at }, c.version as number))
        }
      })
  }
})
