import type { FieldInfo } from "./Fields.js"

/**
 * Which fields a find query may name, as the query parser reads them: what the routes accept
 * and what the OpenAPI document offers come from here.
 */

/** What of a declaration the fields of its queries follow from. */
export interface QueriedDeclaration {
  readonly queryFields: Readonly<Record<string, FieldInfo>>
  readonly outputFields: Readonly<Record<string, FieldInfo>>
  readonly viewParams?: object | undefined
  readonly hooks: { readonly present?: unknown; readonly presentAll?: unknown }
}

const isView = (def: Pick<QueriedDeclaration, "viewParams">, name: string) => Object.hasOwn(def.viewParams ?? {}, name)

/** The fields a find may filter and sort on: columns a store compares (not JSON, not bytes), view parameters aside. */
export const comparableFields = (def: Pick<QueriedDeclaration, "queryFields" | "viewParams">): ReadonlyArray<string> =>
  Object.entries(def.queryFields)
    .filter(([name, info]) => info.kind !== "json" && info.kind !== "bytes" && !isView(def, name))
    .map(([name]) => name)

/**
 * The fields `$select` may name: the columns, or every output where the resource presents its
 * outputs itself. View parameters are not fields.
 */
export const selectableFields = (def: QueriedDeclaration): ReadonlyArray<string> =>
  Object.keys(def.hooks.present || def.hooks.presentAll ? def.outputFields : def.queryFields).filter((f) => !isView(def, f))
