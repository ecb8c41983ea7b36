/**
 * The generic use-cases every resource shares, as one namespace for hosts and adapters
 * (`ResourceService.find(def, principal, query)`): the HTTP layer and the host API call these,
 * features import the modules that hold them.
 */
export { decode, decodeWith, ensureMethodFor, type ServiceEffect, toInvalidInput } from "./Bodies.js"
export { checkQuota, requireExistingOrganization, requireFeature, requireFeatureBeforeBody, requireFlag } from "./Gates.js"
export { find, findAsRequested, findByCursor, findWithin, get, getAsRequested, loadVisible } from "./Reads.js"
export type { LookUp } from "./Shape.js"
export { resolveView, toOutput } from "./Views.js"
export { create, patch, remove, update } from "./Writes.js"
