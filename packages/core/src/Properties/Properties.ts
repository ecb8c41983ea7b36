import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Property, PropertyCreate, PropertyUpdate } from "../Domain/Property.js"
import { InvalidInput } from "../Domain/Errors.js"
import { Storage } from "../Engine/Ports.js"
import { canAccess, type Principal } from "../Engine/Principal.js"
import { defineResource } from "../Engine/Resource.js"
import { forgetOrigins, OriginCache } from "./OriginCache.js"

/** Not in the spec: a website or app of an organization; cookies and vendors hang off it. */
export const PropertiesResource = defineResource({
  name: "property",
  path: "properties",
  table: "properties",
  indexes: [{ name: "properties_organization", columns: ["organization_id", "created_at"] }],
  output: Property,
  createInput: PropertyCreate,
  updateInput: PropertyUpdate,
  methods: ["find", "get", "create", "update", "patch", "remove"],
  // Its cookies and vendors refer to it, and go with it.
  ownerField: "organization_id",
  // Its website is one of the origins its organization's pages record consent from.
  ports: [OriginCache],
  hooks: { afterCommit: (output) => forgetOrigins(output.organization_id) }
})

/** A property the caller may use; another organization's property reads as absent (400). */
export const loadOwnedProperty = (principal: Principal, propertyId: unknown) =>
  Effect.gen(function*() {
    const found = typeof propertyId === "string"
      ? yield* (yield* Storage).repository(PropertiesResource.tableDef).get(propertyId)
      : Option.none()
    if (Option.isNone(found) || !canAccess(principal, found.value.organization_id)) {
      return yield* Effect.fail(
        new InvalidInput({
          message: `Invalid property_id: no property '${String(propertyId)}' in your organization`,
          errors: { property_id: "is not a property of your organization" }
        })
      )
    }
    return found.value
  })

/** The owner of a cookie or vendor is its property's organization. */
export const ownerFromProperty = (principal: Principal, input: { readonly property_id: string }) =>
  Effect.map(loadOwnedProperty(principal, input.property_id), (p) => p.organization_id)
