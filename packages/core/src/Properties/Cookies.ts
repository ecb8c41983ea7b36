import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Cookie, CookieCreate, CookieUpdate } from "../Domain/Property.js"
import { InvalidInput } from "../Domain/Errors.js"
import { Storage } from "../Engine/Ports.js"
import type { Principal } from "../Engine/Principal.js"
import { defineResource } from "../Engine/Resource.js"
import { field } from "../Engine/Tables.js"
import { loadOwnedProperty, ownerFromProperty } from "./Properties.js"
import { VendorsResource } from "./Vendors.js"

/** The host a property's cookies may be set on: its website's host, without a leading `www.`. */
export const propertyDomain = (property: { readonly website?: string | null | undefined }): string | undefined => {
  if (typeof property.website !== "string") return undefined
  try {
    return new URL(property.website).hostname.toLowerCase().replace(/^www\./, "")
  } catch {
    return undefined
  }
}

/** A cookie domain must equal the property's domain or be a sub-domain of it. */
export const cookieDomainMatches = (cookieDomain: string, propertyHost: string) => {
  const d = cookieDomain.toLowerCase().replace(/^\./, "")
  return d === propertyHost || d.endsWith(`.${propertyHost}`)
}

const invalid = (field: string, message: string) =>
  new InvalidInput({ message: `Invalid ${field}: ${message}`, errors: { [field]: message } })

const checkCookie = (principal: Principal, row: { readonly property_id: string; readonly domain: string; readonly vendor_id?: string | null | undefined }) =>
  Effect.gen(function*() {
    const property = yield* loadOwnedProperty(principal, row.property_id)
    const host = propertyDomain(property)
    if (host === undefined) {
      return yield* Effect.fail(invalid("domain", "the property has no website, so no domain to set cookies on"))
    }
    if (!cookieDomainMatches(row.domain, host)) {
      return yield* Effect.fail(invalid("domain", `must be ${host} or a sub-domain of it`))
    }
    if (typeof row.vendor_id === "string") {
      const vendor = yield* (yield* Storage).repository(VendorsResource.tableDef).get(row.vendor_id)
      if (Option.isNone(vendor) || vendor.value.property_id !== row.property_id) {
        return yield* Effect.fail(invalid("vendor_id", "is not a vendor of this property"))
      }
    }
  })

/** A cookie of a property; `organization_id` is a private copy of the property's, for scope. */
export const CookiesResource = defineResource({
  name: "cookie",
  path: "cookies",
  table: "cookies",
  indexes: [
    { name: "cookies_organization", columns: ["organization_id", "created_at"] },
    { name: "cookies_property", columns: ["property_id", "created_at"] },
    { name: "cookies_vendor", columns: ["vendor_id"] }
  ],
  output: Cookie,
  createInput: CookieCreate,
  updateInput: CookieUpdate,
  methods: ["find", "get", "create", "update", "patch", "remove"],
  ownerField: "organization_id",
  privateFields: { organization_id: field.string },
  queryable: ["organization_id"],
  defaults: { status: "draft" },
  // A removed vendor's cookies stay, naming no vendor.
  references: [
    { field: "property_id", table: "properties", onDelete: "cascade" },
    { field: "vendor_id", table: "vendors", onDelete: "set-null" }
  ],
  ownerFrom: (principal, input) => ownerFromProperty(principal, input),
  hooks: {
    create: (principal, row) => Effect.as(checkCookie(principal, row), { row }),
    update: (principal, _before, after) => Effect.as(checkCookie(principal, after), after)
  }
})
