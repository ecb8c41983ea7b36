import type { AnySchema } from "@cmp/core"
import * as Option from "effect/Option"
import * as AST from "effect/SchemaAST"

/**
 * The examples of the OpenAPI document. A body's examples are its schema's own (`examples`, an
 * annotation of the declaration's schema, written into the document with the schema); this
 * module reads them where the document needs them elsewhere: a patch body, and the query
 * parameters of a find, whose examples are made of the resource's real fields so that the docs
 * page's "Try it out" sends a query the server accepts.
 */

/** The examples a schema is annotated with, if any. */
export const examplesOf = (schema: AnySchema | undefined): ReadonlyArray<unknown> | undefined =>
  schema === undefined ? undefined : Option.getOrUndefined(AST.getExamplesAnnotation(schema.ast))

const isScalar = (v: unknown): v is string | number | boolean =>
  typeof v === "string" || typeof v === "number" || typeof v === "boolean"

/** A reference to another record: its value in an example is made up, so it would match nothing. */
const isReference = (field: string) => field === "id" || field.endsWith("_id")

/**
 * `$sort`: the newest first where records have a creation time, else the first field in
 * ascending order.
 */
export const sortExample = (comparable: ReadonlyArray<string>): Record<string, 1 | -1> | undefined =>
  comparable.includes("created_at") ? { created_at: -1 } : comparable[0] === undefined ? undefined : { [comparable[0]]: 1 }

/**
 * The filter's examples: first no filter at all, which a client's "Try it out" sends unless
 * another is chosen, so that it shows records; then one field of the create example with its
 * value, which finds the record made from that example.
 */
export const filterExamples = (
  comparable: ReadonlyArray<string>,
  createExample: unknown
): Record<string, { readonly summary: string; readonly value: Record<string, unknown> }> => {
  const sample = typeof createExample === "object" && createExample !== null
    ? Object.entries(createExample).find(([field, value]) => comparable.includes(field) && !isReference(field) && isScalar(value))
    : undefined
  return {
    all: { summary: "No filter: every record the caller may see", value: {} },
    ...(sample === undefined ? {} : {
      [`by_${sample[0]}`]: {
        summary: `Those whose ${sample[0]} is ${JSON.stringify(sample[1])} (as the create example makes)`,
        value: { [sample[0]]: sample[1] }
      }
    })
  }
}
