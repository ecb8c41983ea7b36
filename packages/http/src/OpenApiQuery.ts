import { comparableFields, selectableFields, type ServedResource } from "@cmp/core"
import { examplesOf, filterExamples, sortExample } from "./OpenApiExamples.js"

/**
 * The query parameters of a find in the OpenAPI document, as a client serializes them: `$sort`
 * as a deep object (`$sort[created_at]=-1`), the filter as form fields of the query itself
 * (`name=Acme`), `$select` as a repeated field. Each names the fields the resource has, and
 * each object parameter has an example made of them: a client that fills a parameter from its
 * schema alone (Swagger UI's "Try it out") would otherwise send placeholder keys, which the
 * server refuses as unknown fields.
 */

const cursorParameter = {
  name: "$cursor",
  in: "query",
  description: "Pages by cursor instead of by offset: empty for the first page, then the `cursor` of the previous " +
    "page. Pages are in ascending `created_at`, then key order, and stay exact while records are added. Send the " +
    "same filters and `$limit` with every page (a cursor used with another query is a 400); `$sort` and `$skip` " +
    "cannot be combined with it. The answer is `{ data, limit, cursor }`, `cursor` null after the last page.",
  schema: { type: "string" }
}

/** View parameters choose how each record is shown (a consent user's regulation), never which match. */
export const viewParameters = (def: ServedResource) =>
  Object.keys(def.viewParams ?? {}).map((name) => ({
    name,
    in: "query",
    required: false,
    description: `Shows each ${def.name} in this ${name} (the default when absent is documented on the field); a view, not a filter: \`${name}=<value>\` only, ` +
      `no operators, $sort, $select or $or on it. A create or patch body naming ${name} chooses the view of its answer.`,
    schema: { type: "string" }
  }))

/**
 * Filters on a value the resource computes rather than stores (a consent user's
 * `consent_state`): one value, several (any of them), or `name[$in]=…`.
 */
export const computedFilterParameters = (def: ServedResource) =>
  Object.entries(def.filters ?? {}).map(([name, filter]) => ({
    name,
    in: "query",
    required: false,
    style: "form",
    explode: true,
    description: `${filter.description}. \`${name}=a\`, or any of several with \`${name}=a&${name}=b\` or ` +
      `\`${name}[$in]=a&${name}[$in]=b\`; no other operator, and not inside \`$or\`.`,
    schema: { type: "array", items: { type: "string", enum: filter.values }, minItems: 1 }
  }))

/** Headers that set a field of a create body (`Sec-GPC`). */
export const headerParameters = (def: ServedResource) =>
  (def.headerFields ?? []).map((f) => ({
    name: f.header,
    in: "header",
    required: false,
    description: f.description,
    schema: { type: "string", enum: [f.when] }
  }))

/**
 * The parameters of a find over `def`. `others` are the names of parameters the operation
 * declares itself (a find that reads `organization_id` apart): they are not filters.
 */
export const queryParameters = (def: ServedResource, others: ReadonlyArray<string> = []) => {
  const comparable = comparableFields(def)
  const filterable = comparable.filter((f) => !others.includes(f))
  const selectable = selectableFields(def)
  const sort = sortExample(comparable)
  const namesFrom = (names: ReadonlyArray<string>) => (names.length > 0 ? { propertyNames: { enum: names } } : {})
  return [
    ...viewParameters(def),
    ...computedFilterParameters(def),
    { name: "$limit", in: "query", schema: { type: "integer", minimum: 0, maximum: 1000, default: 100 } },
    { name: "$skip", in: "query", schema: { type: "integer", minimum: 0, default: 0 } },
    ...(def.cursorPaging ? [cursorParameter] : []),
    {
      name: "$sort",
      in: "query",
      style: "deepObject",
      explode: true,
      description: "`$sort[field]=1` ascending, `-1` descending; several fields sort in the order given",
      schema: { type: "object", ...namesFrom(comparable), additionalProperties: { type: "integer", enum: [1, -1] } },
      ...(sort === undefined ? {} : { example: sort })
    },
    {
      name: "$select",
      in: "query",
      style: "form",
      explode: true,
      description: "The fields each record shows (`id` always): `$select=name&$select=created_at`, or `$select[]=name`",
      schema: { type: "array", items: { type: "string", ...(selectable.length > 0 ? { enum: selectable } : {}) }, uniqueItems: true }
    },
    {
      name: "filter",
      in: "query",
      style: "form",
      explode: true,
      description: "Each entry is a field of the query itself: equality `field=value` (`null` matches null); also operators " +
        "`field[$in][]=a`, `$nin`, `$ne`, `$lt`, `$lte`, `$gt`, `$gte`, and `$or[0][field]=value`, written in the " +
        "query string directly. Fields: " + filterable.join(", "),
      schema: { type: "object", ...namesFrom(filterable), additionalProperties: { type: ["string", "number", "boolean", "null"] } },
      examples: filterExamples(filterable, examplesOf(def.createInput)?.[0])
    }
  ]
}
