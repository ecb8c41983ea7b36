import {
  type ActionOutput,
  type AnyAction,
  type AnyResource,
  type AnySchema,
  type EndUserCredential,
  type Method,
  operationsOf,
  type ServedResource,
  takesId
} from "@cmp/core"
import * as JSONSchema from "effect/JSONSchema"
import * as Schema from "effect/Schema"
import { pluralOf, withArticle } from "./NounPhrases.js"
import { examplesOf } from "./OpenApiExamples.js"
import { headerParameters, queryParameters, viewParameters } from "./OpenApiQuery.js"

/**
 * The OpenAPI document, generated from the same resource declarations that register the
 * routes, so the document and the served API cannot drift apart.
 */

/**
 * Where the schemas live: the definitions a schema names (`Int`, `Timestamp`: every schema with
 * an identifier) are written once into `components/schemas`, beside the named schemas, and
 * referred to there, instead of a `$defs` of their own inside every schema that uses them.
 */
const componentsPath = "#/components/schemas/"

/** One schema in JSON Schema, its named parts added to `definitions` (shared by the whole document). */
const jsonSchemaInto = (definitions: Record<string, JSONSchema.JsonSchema7>) => (schema: AnySchema): Record<string, unknown> => {
  try {
    return JSONSchema.fromAST(schema.ast, {
      definitions,
      definitionPath: componentsPath,
      target: "openApi3.1",
      topLevelReferenceStrategy: "keep"
    }) as unknown as Record<string, unknown>
  } catch {
    return { type: "object" }
  }
}

/** Every operation is called with a bearer token but the credential exchanges, which say so with `security: []`. */
const bearerSecurity = [{ bearer: [] }]

/**
 * The security of an operation: the bearer, and the end-user credentials its declaration opens
 * it to (a public key in the header or the query, a consent token), each an alternative.
 */
const securityFor = (open: ReadonlyArray<EndUserCredential>) => [
  ...bearerSecurity,
  ...(open.includes("public-key") ? [{ publicApiKey: [] }, { publicApiKeyQuery: [] }] : []),
  ...(open.includes("consent-token") ? [{ consentToken: [] }] : [])
]

/** The security of a resource's method. */
const securityOf = (def: ServedResource, method: Method) => securityFor(def.endUsers?.methods[method] ?? [])

const errorSchema = {
  type: "object",
  required: ["name", "message", "code", "className"],
  properties: {
    name: { type: "string", example: "BadRequest" },
    message: { type: "string" },
    code: { type: "integer", example: 400 },
    className: { type: "string", example: "bad-request" },
    errors: { type: "object", additionalProperties: { type: "string" } }
  }
}

const errorResponses = (...codes: Array<number>) =>
  Object.fromEntries(codes.map((c) => [String(c), { $ref: `#/components/responses/E${c}` }]))

const pascal = (p: string) =>
  p.split(/[^a-zA-Z0-9]+/).filter(Boolean).map((w) => w[0]!.toUpperCase() + w.slice(1)).join("")

/** The answer of a find: an offset page, or on a resource that pages by cursor, either kind. */
const findPage = (def: ServedResource, name: string) => {
  const data = { type: "array", items: { $ref: `#/components/schemas/${name}` } }
  const offset = {
    type: "object",
    required: ["total", "limit", "skip", "data"],
    properties: { total: { type: "integer" }, limit: { type: "integer" }, skip: { type: "integer" }, data }
  }
  if (!def.cursorPaging) return offset
  const cursor = {
    type: "object",
    description: "With `$cursor`: no `total`; `cursor` is the opaque cursor of the next page, null after the last",
    required: ["data", "limit", "cursor"],
    properties: { data, limit: { type: "integer" }, cursor: { type: ["string", "null"] } }
  }
  return { oneOf: [offset, cursor] }
}

/**
 * Ids chosen by clients are unique within an organization only: a principal that sees several
 * names the one meant when the id is held by more than one of them.
 */
const organizationParam = {
  name: "organization_id",
  in: "query",
  required: false,
  description: "The organization of the record: required (400 without it) when the id is held by more than one of the organizations the caller sees",
  schema: { type: "string" }
}

/**
 * The organization an action without an id acts in, where its declaration does not say more:
 * a caller of one organization acts in it.
 */
const actingOrganizationParam = {
  name: "organization_id",
  in: "query",
  required: false,
  description: "The organization the call acts in: implied for a caller of one organization (a client key, a member " +
    "of one), required (400 without it) from the operator and a member of several",
  schema: { type: "string" }
}

/** A schema with examples, where there are some. */
const withExamples = (schema: Record<string, unknown>, examples: ReadonlyArray<unknown> | undefined) =>
  examples === undefined || examples.length === 0 ? schema : { ...schema, examples }

/**
 * The error statuses an action answers: a credential exchange never a 401 or 403; an action with
 * a body every kind of bad body; otherwise what its id and query may cause.
 */
const actionErrors = (a: AnyAction): ReadonlyArray<number> => {
  if (a.errors) return a.errors
  // A credential exchange answers 429 while failed attempts are slowed down.
  if (a.auth === "none") return [400, 413, 415, 429]
  if (a.body !== undefined) return [400, 404, 409, 413, 415, 401, 403, 429]
  const hasId = takesId(a)
  return [
    ...(hasId || a.query !== undefined ? [400] : []),
    ...(hasId ? [404] : []),
    ...(a.method === "POST" ? [409] : []),
    401,
    403,
    429
  ]
}

/** `webhooks/deliveries/:id/replay` as an OpenAPI path. */
const openApiPath = (path: string) => `/v1/${path.replace(/:([A-Za-z_]+)/g, "{$1}")}`

export const openApiDocument = (
  resources: ReadonlyArray<ServedResource>,
  actions: ReadonlyArray<AnyAction>
): Record<string, unknown> => {
  const schemas: Record<string, unknown> = { Error: errorSchema }
  const paths: Record<string, Record<string, unknown>> = {}
  const json = (ref: string) => ({ "application/json": { schema: { $ref: `${componentsPath}${ref}` } } })
  const definitions: Record<string, JSONSchema.JsonSchema7> = {}
  const jsonSchema = jsonSchemaInto(definitions)
  /** A schema under its name: the same name for another schema (a host's resource named like one of the registry's) is refused. */
  const nameSchema = (name: string, schema: Record<string, unknown>) => {
    const named = schemas[name]
    if (named !== undefined && JSON.stringify(named) !== JSON.stringify(schema)) {
      throw new Error(`The OpenAPI document names two different schemas ${name}`)
    }
    schemas[name] = schema
  }

  for (const def of resources) {
    const name = pascal(def.path)
    nameSchema(name, jsonSchema(def.output))
    if (def.createInput) nameSchema(`${name}Create`, jsonSchema(def.createInput))
    const offered = operationsOf(def)
    if (def.updateInput && offered.includes("update")) nameSchema(`${name}Update`, jsonSchema(def.updateInput))
    // Every full update body is a patch too: the update's examples serve both.
    if (def.updateInput && offered.includes("patch")) {
      nameSchema(`${name}Patch`, withExamples(jsonSchema(Schema.partial(def.updateInput)), examplesOf(def.updateInput)))
    }
    // Only its own actions answer it: they describe themselves.
    if (def.ownActions === true) continue
    const tags = [def.path]
    const collection: Record<string, unknown> = {}
    const item: Record<string, unknown> = {}
    const idParam = [
      { name: "id", in: "path", required: true, schema: { type: "string" } },
      ...(def.tableDef.key.includes("organization_id") ? [organizationParam] : []),
      ...viewParameters(def)
    ]
    // The other key a get may name its record by.
    const getByParam = def.getBy === undefined ? [] : [{
      name: def.getBy.param,
      in: "query",
      required: false,
      description: def.getBy.description ?? "`true`: the id in the path is the record's other key, not the server's id",
      schema: { type: "boolean" }
    }]
    const common = errorResponses(401, 403, 429)
    if (offered.includes("find")) {
      collection.get = {
        tags,
        operationId: `${def.path}.find`,
        summary: `Find ${pluralOf(def.name)}`,
        parameters: queryParameters(def),
        responses: {
          "200": {
            description: def.cursorPaging ? "A page; with `$cursor`, a page of a cursor walk" : "A page",
            content: { "application/json": { schema: findPage(def, name) } }
          },
          ...errorResponses(400),
          ...common
        },
        security: securityOf(def, "find")
      }
    }
    if (offered.includes("create") && def.createInput) {
      collection.post = {
        tags,
        operationId: `${def.path}.create`,
        summary: `Create ${withArticle(def.name)}`,
        ...(def.viewParams || def.headerFields ? { parameters: [...(def.viewParams ? viewParameters(def) : []), ...headerParameters(def)] } : {}),
        requestBody: { required: true, content: json(`${name}Create`) },
        responses: { "201": { description: "Created", content: createdContent(def, name) }, ...errorResponses(400, 409, 413, 415), ...common },
        security: securityOf(def, "create")
      }
    }
    /** A create through the public key answers only the fields the declaration lists. */
    function createdContent(d: ServedResource, n: string) {
      const shown = d.endUsers?.publicAnswer
      if (!shown) return json(n)
      const full = schemas[n] as { properties?: Record<string, unknown> }
      schemas[`${n}PublicAnswer`] = {
        type: "object",
        description: "What a write through the public key answers",
        required: [...shown],
        properties: Object.fromEntries(shown.map((f) => [f, full.properties?.[f] ?? {}])),
        additionalProperties: false
      }
      return {
        "application/json": {
          schema: { anyOf: [{ $ref: `${componentsPath}${n}` }, { $ref: `${componentsPath}${n}PublicAnswer` }] }
        }
      }
    }
    const itemOp = (method: Method, summary: string, body?: string) => ({
      tags,
      operationId: `${def.path}.${method}`,
      summary,
      parameters: method === "get" ? [...idParam, ...getByParam] : idParam,
      ...(body ? { requestBody: { required: true, content: json(body) } } : {}),
      responses: {
        "200": { description: "OK", content: json(name) },
        ...errorResponses(...(body ? [400, 404, 409, 413, 415] : [404])),
        ...common
      },
      security: securityOf(def, method)
    })
    const one = withArticle(def.name)
    if (offered.includes("get")) item.get = itemOp("get", `Get ${one}`)
    if (offered.includes("update") && def.updateInput) item.put = itemOp("update", `Replace ${one}`, `${name}Update`)
    if (offered.includes("patch") && def.updateInput) item.patch = itemOp("patch", `Change ${one}`, `${name}Patch`)
    if (offered.includes("remove")) item.delete = itemOp("remove", `Remove ${one}`)
    if (Object.keys(collection).length > 0) paths[`/v1/${def.path}`] = collection
    if (Object.keys(item).length > 0) paths[`/v1/${def.path}/{id}`] = item
  }

  /** What an action answers, as a schema reference. */
  const answerOf = (output: ActionOutput): Record<string, unknown> => {
    switch (output._tag) {
      case "Schema":
        nameSchema(output.schema.name, jsonSchema(output.schema.schema))
        return { $ref: `${componentsPath}${output.schema.name}` }
      case "Output":
        return { $ref: `${componentsPath}${pascal(output.of.path)}` }
      case "Page":
        return findPage(output.of, pascal(output.of.path))
      case "File":
        return { type: "string", format: "binary" }
    }
  }

  // The actions: operations that are not a resource's generic methods, each from its declaration.
  for (const a of actions) {
    const hasId = takesId(a)
    const of: AnyResource | undefined = a.answers._tag === "Output" || a.answers._tag === "Page" ? a.answers.of : undefined
    if (a.body) nameSchema(a.body.name, jsonSchema(a.body.schema))
    const declared = (a.parameters ?? []).map((p) => ({ ...p, schema: { type: "string" } }))
    const isDeclared = (name: string) => declared.some((p) => p.name === name)
    const parameters = [
      ...(hasId ? [{ name: "id", in: "path", required: true, schema: { type: "string" } }] : []),
      ...(a.credentialHeader ? [{ name: a.credentialHeader, in: "header", required: true, schema: { type: "string" } }] : []),
      // A look-up by id names the record's organization; one without an id, the organization it acts in.
      ...(a.query === "lookUp" && !isDeclared("organization_id") ? [hasId ? organizationParam : actingOrganizationParam] : []),
      ...(a.query === "find" && of ? queryParameters(of, declared.map((p) => p.name)) : []),
      ...declared
    ]
    // A file is answered as itself, in whichever of its types it is.
    const content = a.answers._tag === "File"
      ? Object.fromEntries(a.answers.mediaTypes.map((t) => [t, { schema: answerOf(a.answers) }]))
      : { "application/json": { schema: answerOf(a.answers) } }
    const operation = {
      tags: [a.tag ?? a.place],
      operationId: `${a.place}.${a.name}`,
      summary: a.summary,
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(a.body ? { requestBody: { required: a.bodyOptional !== true, content: json(a.body.name) } } : {}),
      responses: {
        [String(a.status)]: { description: a.status === 201 ? "Created" : a.answers._tag === "Page" ? "A page" : "OK", content },
        ...errorResponses(...actionErrors(a))
      },
      security: a.auth === "none" ? [] : securityFor(a.endUsers?.credentials ?? [])
    }
    const path = openApiPath(a.path)
    paths[path] = { ...paths[path], [a.method.toLowerCase()]: operation }
  }

  const responses = Object.fromEntries(
    [400, 401, 403, 404, 409, 413, 415, 429].map((c) => [
      `E${c}`,
      { description: `Error ${c}`, content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } }
    ])
  )

  // The named parts of the schemas, beside them. A schema whose identifier is its name here
  // is only a reference to itself so far; one name for two different schemas is a mistake.
  for (const [name, definition] of Object.entries(definitions)) {
    const named = schemas[name]
    const self = JSON.stringify({ $ref: `${componentsPath}${name}` })
    if (named !== undefined && JSON.stringify(named) !== self && JSON.stringify(named) !== JSON.stringify(definition)) {
      throw new Error(`The OpenAPI document names two different schemas ${name}`)
    }
    schemas[name] = definition
  }

  return {
    openapi: "3.1.0",
    info: { title: "Consent and Privacy Management Platform API", version: "1.0" },
    paths,
    components: {
      schemas,
      responses,
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: "An access token (`POST /v1/sessions`)" },
        publicApiKey: {
          type: "apiKey",
          in: "header",
          name: "x-public-api-key",
          description: "The organization's public key: records consent events from browsers and apps"
        },
        publicApiKeyQuery: {
          type: "apiKey",
          in: "query",
          name: "public_api_key",
          description: "The organization's public key, for clients that cannot set headers (`navigator.sendBeacon`)"
        },
        consentToken: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT",
          description: "A consent token (`POST /v1/consents/tokens`): one end user's own consent"
        }
      }
    }
  }
}

/**
 * The document as served under a mount path: `servers` holds the URL the API is mounted at,
 * relative to the host the document came from (`/consent-api`, `/` at the root), so a client
 * that loaded it (the docs page's "Try it out") calls the API where it is, behind any proxy
 * that keeps the path.
 */
export const servedAt = (document: Record<string, unknown>, mountPath: string): Record<string, unknown> => {
  const { openapi, info, ...rest } = document
  // One leading slash: `//host/...` would name another host, which a client would send its token to.
  const url = `/${mountPath.replace(/^\/+|\/+$/g, "")}`
  return { openapi, info, servers: [{ url, description: "This server" }], ...rest }
}
