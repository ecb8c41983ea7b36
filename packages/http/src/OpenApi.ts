import {
  type AnySchema,
  DeliveriesResource,
  ExportRunInput,
  InvitationAcceptInput,
  Languages,
  PlatformIntegrationSession,
  PlatformIntegrationSessionInput,
  ReplayRange,
  type RegisteredResource,
  SdkConfiguration,
  SdkConfigurationInput,
  Session,
  SessionInput
} from "@cmp/core"
import * as JSONSchema from "effect/JSONSchema"
import * as Schema from "effect/Schema"
import { matchRoute, resourceRoute } from "./Routes.js"

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

/** The security of an operation: public routes (no bearer token) say so with `security: []`. */
const securityOf = (path: string, method: string, resources: ReadonlyArray<RegisteredResource>) => {
  const segments = path.replace(/^\/v1\/?/, "").split("/").filter(Boolean).map((s) => (s.startsWith("{") ? "id" : s))
  const verb = method.toUpperCase()
  let auth = matchRoute(segments, verb)?.route.auth
  if (auth === undefined) {
    const withId = path.endsWith("/{id}")
    const resourcePath = (withId ? segments.slice(0, -1) : segments).join("/")
    const def = resources.find((d) => d.path === resourcePath)
    auth = def ? resourceRoute(def, verb, withId ? "id" : undefined)?.auth : undefined
  }
  if (auth === undefined) throw new Error(`The OpenAPI document describes ${method.toUpperCase()} ${path}, which no route serves`)
  return auth === "none" ? [] : [{ bearer: [] }]
}

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

const TcStringOutput = Schema.Struct({ id: Schema.String, tc_string: Schema.String })
const ReplayResult = Schema.Struct({ webhook_id: Schema.String, replayed: Schema.Int })

const pascal = (p: string) =>
  p.split(/[^a-zA-Z0-9]+/).filter(Boolean).map((w) => w[0]!.toUpperCase() + w.slice(1)).join("")

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
const viewParameters = (def: RegisteredResource) =>
  Object.keys(def.viewParams ?? {}).map((name) => ({
    name,
    in: "query",
    required: false,
    description: `Shows each ${def.name} in this ${name} (the default when absent is documented on the field); a view, not a filter: \`${name}=<value>\` only, ` +
      `no operators, $sort, $select or $or on it. A create or patch body naming ${name} chooses the view of its answer.`,
    schema: { type: "string" }
  }))

const queryParameters = (def: RegisteredResource) => [
  ...viewParameters(def),
  { name: "$limit", in: "query", schema: { type: "integer", minimum: 0, maximum: 1000, default: 100 } },
  { name: "$skip", in: "query", schema: { type: "integer", minimum: 0, default: 0 } },
  ...(def.cursorPaging ? [cursorParameter] : []),
  {
    name: "$sort",
    in: "query",
    style: "deepObject",
    explode: true,
    description: "`$sort[field]=1` ascending, `-1` descending",
    schema: { type: "object", additionalProperties: { type: "integer", enum: [1, -1] } }
  },
  { name: "$select", in: "query", description: "`$select[]=field`", schema: { type: "array", items: { type: "string" } } },
  {
    name: "filter",
    in: "query",
    style: "deepObject",
    explode: true,
    description: "Equality `field=value` (`null` matches null) and operators `field[$in][]`, `$nin`, `$ne`, `$lt`, " +
      "`$lte`, `$gt`, `$gte`, and `$or[0][field]=value`. Fields: " + Object.keys(def.queryFields).filter((f) =>
        def.queryFields[f]!.kind !== "json"
      ).join(", "),
    schema: { type: "object" }
  }
]

/** The answer of a find: an offset page, or on a resource that pages by cursor, either kind. */
const findPage = (def: RegisteredResource, name: string) => {
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

export const openApiDocument = (resources: ReadonlyArray<RegisteredResource>): Record<string, unknown> => {
  const schemas: Record<string, unknown> = { Error: errorSchema }
  const paths: Record<string, Record<string, unknown>> = {}
  const json = (ref: string) => ({ "application/json": { schema: { $ref: `${componentsPath}${ref}` } } })
  const definitions: Record<string, JSONSchema.JsonSchema7> = {}
  const jsonSchema = jsonSchemaInto(definitions)

  /**
   * A POST that is an action rather than a stored resource; `open` ones are credential exchanges
   * (no 401 or 403). Who may call it is the route's own: see `securityOf`.
   */
  const action = (
    tag: string,
    operationId: string,
    summary: string,
    input: string,
    output: string,
    options: { readonly open?: boolean; readonly status?: 200 | 201 } = {}
  ) => ({
    post: {
      tags: [tag],
      operationId,
      summary,
      requestBody: { required: true, content: json(input) },
      responses: {
        [String(options.status ?? 201)]: { description: options.status === 200 ? "OK" : "Created", content: json(output) },
        // A credential exchange answers 429 while failed attempts are slowed down.
        ...(options.open ? errorResponses(400, 413, 415, 429) : { ...errorResponses(400, 404, 409, 413, 415), ...errorResponses(401, 403, 429) })
      }
    }
  })

  schemas.SessionInput = jsonSchema(SessionInput)
  schemas.Session = jsonSchema(Session)
  paths["/v1/sessions"] = action("sessions", "sessions.create", "Create a session (obtain an access token)", "SessionInput", "Session", {
    open: true
  })

  schemas.InvitationAcceptInput = jsonSchema(InvitationAcceptInput)
  paths["/v1/invitations/accept"] = action(
    "members",
    "invitations.accept",
    "Accept a member invitation: set a password (or prove the existing one) and open an email session",
    "InvitationAcceptInput",
    "Session",
    { open: true }
  )

  for (const def of resources) {
    const name = pascal(def.path)
    schemas[name] = jsonSchema(def.output)
    if (def.createInput) schemas[`${name}Create`] = jsonSchema(def.createInput)
    if (def.updateInput && def.methods.includes("update")) schemas[`${name}Update`] = jsonSchema(def.updateInput)
    if (def.updateInput && def.methods.includes("patch")) schemas[`${name}Patch`] = jsonSchema(Schema.partial(def.updateInput))
    const tags = [def.path]
    const collection: Record<string, unknown> = {}
    const item: Record<string, unknown> = {}
    const idParam = [
      { name: "id", in: "path", required: true, schema: { type: "string" } },
      ...(def.tableDef.key.includes("organization_id") ? [organizationParam] : []),
      ...viewParameters(def)
    ]
    const common = errorResponses(401, 403, 429)
    if (def.methods.includes("find")) {
      collection.get = {
        tags,
        operationId: `${def.path}.find`,
        summary: `Find ${def.name}s`,
        parameters: queryParameters(def),
        responses: {
          "200": {
            description: def.cursorPaging ? "A page; with `$cursor`, a page of a cursor walk" : "A page",
            content: { "application/json": { schema: findPage(def, name) } }
          },
          ...errorResponses(400),
          ...common
        }
      }
    }
    if (def.methods.includes("create") && def.createInput) {
      collection.post = {
        tags,
        operationId: `${def.path}.create`,
        summary: `Create a ${def.name}`,
        ...(def.viewParams ? { parameters: viewParameters(def) } : {}),
        requestBody: { required: true, content: json(`${name}Create`) },
        responses: { "201": { description: "Created", content: json(name) }, ...errorResponses(400, 409, 413, 415), ...common }
      }
    }
    const itemOp = (method: string, summary: string, body?: string) => ({
      tags,
      operationId: `${def.path}.${method}`,
      summary,
      parameters: idParam,
      ...(body ? { requestBody: { required: true, content: json(body) } } : {}),
      responses: {
        "200": { description: "OK", content: json(name) },
        ...errorResponses(...(body ? [400, 404, 409, 413, 415] : [404])),
        ...common
      }
    })
    if (def.methods.includes("get")) item.get = itemOp("get", `Get a ${def.name}`)
    if (def.methods.includes("update") && def.updateInput) item.put = itemOp("update", `Replace a ${def.name}`, `${name}Update`)
    if (def.methods.includes("patch") && def.updateInput) item.patch = itemOp("patch", `Change a ${def.name}`, `${name}Patch`)
    if (def.methods.includes("remove")) item.delete = itemOp("remove", `Remove a ${def.name}`)
    if (Object.keys(collection).length > 0) paths[`/v1/${def.path}`] = collection
    if (Object.keys(item).length > 0) paths[`/v1/${def.path}/{id}`] = item
  }

  // Notices and exports: actions that are not stored resources.
  schemas.SdkConfigurationInput = jsonSchema(SdkConfigurationInput)
  schemas.SdkConfiguration = jsonSchema(SdkConfiguration)
  paths["/v1/widgets/notices/generators/sdk"] = action(
    "widgets/notices/generators/sdk",
    "widgets/notices/generators/sdk.create",
    "Build the configuration of a client SDK from the SDK configuration input (custom_json merged last)",
    "SdkConfigurationInput",
    "SdkConfiguration"
  )
  schemas.ExportRunInput = jsonSchema(ExportRunInput)
  paths["/v1/exports/execute"] = action(
    "exports/configs",
    "exports/execute.create",
    "Run an export now: consent events and users of [from, to) as NDJSON to every destination (premium feature batch_exports_manual_run)",
    "ExportRunInput",
    "ExportsRuns"
  )
  // Replays of the delivery log: actions on stored messages, answered 200.
  if (resources.some((d) => d.path === DeliveriesResource.path)) {
    const deliveries = pascal(DeliveriesResource.path)
    schemas.ReplayRange = jsonSchema(ReplayRange)
    schemas.ReplayResult = jsonSchema(ReplayResult)
    paths["/v1/webhooks/deliveries/replay"] = action(
      DeliveriesResource.path,
      `${DeliveriesResource.path}.replay`,
      "Queue again every failed message of one webhook created in [from, to], each with a fresh retry schedule",
      "ReplayRange",
      "ReplayResult",
      { status: 200 }
    )
    paths["/v1/webhooks/deliveries/{id}/replay"] = {
      post: {
        tags: [DeliveriesResource.path],
        operationId: `${DeliveriesResource.path}.replayOne`,
        summary: "Queue one failed message again with a fresh retry schedule (409 when it is delivered, pending or delivering)",
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
        responses: { "200": { description: "OK", content: json(deliveries) }, ...errorResponses(400, 404, 409, 401, 403, 429) }
      }
    }
  }

  schemas.TcString = jsonSchema(TcStringOutput)
  paths["/v1/consents/events/{id}/tcstring"] = {
    get: {
      tags: ["consents/events"],
      operationId: "consents/events.tcstring",
      summary: "The event's choices as an IAB TCF v2 TC string, encoded by the server",
      parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }, organizationParam],
      responses: { "200": { description: "OK", content: json("TcString") }, ...errorResponses(400, 404, 401, 403, 429) }
    }
  }

  // Organization resources: the routes that are not generic.
  schemas.PlatformIntegrationSessionInput = jsonSchema(PlatformIntegrationSessionInput)
  schemas.PlatformIntegrationSession = jsonSchema(PlatformIntegrationSession)
  paths["/v1/platform-integrations/sessions"] = {
    post: {
      tags: ["platform-integrations"],
      operationId: "platform-integrations/sessions.create",
      summary: "Open a session for a platform integration: its token in `x-platform-authorization`, an empty body; " +
        "the access token acts as a client of the integration's organization",
      parameters: [{ name: "x-platform-authorization", in: "header", required: true, schema: { type: "string" } }],
      requestBody: { required: false, content: json("PlatformIntegrationSessionInput") },
      responses: { "201": { description: "Created", content: json("PlatformIntegrationSession") }, ...errorResponses(400, 413, 415, 429) }
    }
  }
  const urls = paths["/v1/analytics/dashboards-urls"]?.get as Record<string, unknown> | undefined
  if (urls) {
    urls.summary = "Find the organization's dashboards (its own and the platform's), each `url` signed by the server for " +
      "that organization: `organization_id`, `expires` (Unix seconds, 15 minutes ahead by default) and `signature` = " +
      "base64url HMAC-SHA256 of the URL with both"
    urls.parameters = [
      ...(urls.parameters as ReadonlyArray<unknown> ?? []),
      {
        name: "organization_id",
        in: "query",
        required: false,
        description: "The organization whose links are signed: implied for a caller of one organization, " +
          "required (400 without it) for the operator and a member of several; another organization is 403",
        schema: { type: "string" }
      }
    ]
  }
  schemas.Languages = jsonSchema(Languages)
  paths["/v1/languages"] = {
    get: {
      tags: ["languages"],
      operationId: "languages.find",
      summary: "The languages offered (the object itself, not a page), from configuration",
      responses: { "200": { description: "OK", content: json("Languages") }, ...errorResponses(401, 429) }
    }
  }

  const responses = Object.fromEntries(
    [400, 401, 403, 404, 409, 413, 415, 429].map((c) => [
      `E${c}`,
      { description: `Error ${c}`, content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } }
    ])
  )

  // Every operation says how it is authenticated, from the route that serves it.
  for (const [path, operations] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const described = operation as Record<string, unknown>
      described.security = securityOf(path, method, resources)
    }
  }

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
      securitySchemes: { bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" } }
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
