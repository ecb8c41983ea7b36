/**
 * The "flatten" option of webhooks (spec section 6 rule 3; api.md "Webhooks", whose Flatten
 * paragraph is authoritative): the body becomes one flat object.
 *
 * - `type` and `regulation` stay as they are.
 * - `parameters.entity` and `parameters.new_entity` are both written under the prefix
 *   `parameters__entity__` (a real payload has only one of them: `entity` for created/deleted,
 *   `new_entity` for updated). Should both be present, `entity` is written first and
 *   `new_entity` second, so on a shared key `new_entity` wins.
 * - `parameters.expired_at` (of `user.consent_expired`) is written as `parameters__expired_at`,
 *   after the entity's keys.
 * - `old_entity`, `source` and any other key of `parameters` are left out.
 * - Keys are the path of each leaf joined with `__`.
 * - An array whose elements are all objects carrying an `id` (string or number) is keyed by
 *   that id (`parameters__entity__consents__purposes__<purpose_id>__enabled`); any other array
 *   (scalars, objects without an id, or a mix) is keyed by index, every element by index.
 *   If an `id` repeats in one array, the later element's leaves win on the keys they share;
 *   leaves only the earlier element has stay.
 * - Every value is a JSON scalar (string, finite number, boolean) or null. An empty object or
 *   empty array contributes no key. Nested objects are flattened recursively.
 * - Values are read as `JSON.stringify` would see them (`toJSON`, boxed primitives, non-finite
 *   numbers as null, `undefined`/functions/symbols dropped from objects and null in arrays), so
 *   flattening a payload equals flattening its JSON text; a bigint or a cycle throws a
 *   `TypeError`, as `JSON.stringify` does.
 * - Keys are not escaped: an object key that itself contains `__` may collide with a nested
 *   path; then the leaf written later (document order) wins.
 * - A scalar `entity` (never seen in practice) is written under `parameters__entity`.
 */

export type FlatScalar = string | number | boolean | null
export type FlatPayload = Record<string, FlatScalar>

export interface WebhookPayload {
  readonly type: string
  readonly regulation: string
  readonly parameters: Record<string, unknown>
}

const SEP = "__"

/** The value `JSON.stringify` would serialize for `value` found under `key`. */
const jsonView = (value: unknown, key: string): unknown => {
  let v = value
  if (v !== null && (typeof v === "object" || typeof v === "bigint")) {
    const toJSON = (v as { toJSON?: unknown }).toJSON
    if (typeof toJSON === "function") v = toJSON.call(v, key)
  }
  if (v instanceof Number || v instanceof String || v instanceof Boolean) v = v.valueOf()
  return v
}

/** `undefined` / functions / symbols: not representable in JSON. */
const isAbsent = (v: unknown): boolean => v === undefined || typeof v === "function" || typeof v === "symbol"

const idOf = (element: unknown): string | undefined => {
  if (element === null || typeof element !== "object" || Array.isArray(element)) return undefined
  const id = jsonView((element as Record<string, unknown>).id, "id")
  if (typeof id === "string") return id
  if (typeof id === "number" && Number.isFinite(id)) return String(id)
  return undefined
}

/** `v` is already the JSON view of the value (see `jsonView`). */
const walk = (out: FlatPayload, prefix: string, v: unknown, inArray: boolean, ancestors: Set<object>): void => {
  if (isAbsent(v)) {
    if (inArray) out[prefix] = null
    return
  }
  if (v === null || typeof v === "string" || typeof v === "boolean") {
    out[prefix] = v
    return
  }
  if (typeof v === "number") {
    out[prefix] = Number.isFinite(v) ? v : null
    return
  }
  if (typeof v !== "object") throw new TypeError(`flattenPayload: a ${typeof v} at ${prefix} cannot be serialized`)
  if (ancestors.has(v)) throw new TypeError(`flattenPayload: circular structure at ${prefix}`)
  ancestors.add(v)
  if (Array.isArray(v)) {
    const elements = Array.from(v, (e, i) => jsonView(e, String(i))) // holes read as undefined, like JSON
    const ids = elements.map(idOf)
    const byId = elements.length > 0 && ids.every((id) => id !== undefined)
    elements.forEach((e, i) => walk(out, prefix + SEP + (byId ? ids[i] : String(i)), e, true, ancestors))
  } else {
    const o = v as Record<string, unknown>
    for (const k of Object.keys(o)) walk(out, prefix + SEP + k, jsonView(o[k], k), false, ancestors)
  }
  ancestors.delete(v)
}

/** The flat body of a webhook payload (see the module comment for the rules). */
export const flattenPayload = (payload: WebhookPayload): FlatPayload => {
  const out: FlatPayload = { type: payload.type, regulation: payload.regulation }
  const parameters = payload.parameters ?? {}
  for (const name of ["entity", "new_entity"] as const) {
    if (Object.prototype.hasOwnProperty.call(parameters, name)) {
      walk(out, `parameters${SEP}entity`, jsonView(parameters[name], name), false, new Set())
    }
  }
  if (Object.prototype.hasOwnProperty.call(parameters, "expired_at")) {
    walk(out, `parameters${SEP}expired_at`, jsonView(parameters.expired_at, "expired_at"), false, new Set())
  }
  return out
}
